#!/usr/bin/env bash
# Threads on a shared machine (issue 15), end to end:
#  - lazytrain and the other binaries given (the tests, the benchmarks) bound
#    libgomp's spinning at 30,000 (GOMP_SPINCOUNT in libgomp's own
#    OMP_DISPLAY_ENV report; libgomp's default is 300,000) unless the user set
#    OMP_WAIT_POLICY or GOMP_SPINCOUNT, which are then kept (empty ones are no
#    choice);
#  - `lazytrain run_mlm` reports the compute threads it used (metrics report,
#    counter ExecutionThreads): all CPUs by default, one under `taskset -c 0`,
#    one in a cgroup with a CPU quota of one CPU (when this machine lets the
#    test make one), --num_threads when given (also in training_args.json);
#  - executions give way to busy processes (the governor's gtest, run here
#    without OMP_NUM_THREADS).
# Usage: threads_cli_test.sh <lazytrain binary> <shared data dir> <other binaries linking lazytrain...>
set -uo pipefail
bin="$1"
data="$2"
shift 2
work="$(mktemp -d)"
cgroup_dir=""
cleanup() {
  rm -rf "$work"
  if [ -n "$cgroup_dir" ]; then rmdir "$cgroup_dir" 2>/dev/null; fi
}
trap cleanup EXIT
unset OMP_NUM_THREADS OMP_WAIT_POLICY GOMP_SPINCOUNT  # the test sets them itself
passed=0
failed=0
check() {  # check NAME CONDITION_EXIT_CODE
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $1"; tail -20 "$work/stderr" 2>/dev/null; fi
}
spincount() {  # spincount BINARY: the spin count libgomp settled on when BINARY started
  OMP_DISPLAY_ENV=verbose "$@" --help 2>&1 </dev/null | sed -n "s/^ *GOMP_SPINCOUNT = '\([0-9]*\)'/\1/p" | head -1
}

for b in "$bin" "$@"; do
  name=$(basename "$b")
  s=$(spincount "$b")
  echo "$name: GOMP_SPINCOUNT ${s:-?} by default"
  [ "$s" = 30000 ]
  check "bounded_spin_by_default_$name" $?
done
s=$(OMP_WAIT_POLICY=active spincount "$bin")
[ "$s" = 30000000000 ]
check users_active_policy_is_kept $?
s=$(GOMP_SPINCOUNT=12345 spincount "$bin")
[ "$s" = 12345 ]
check users_spin_count_is_kept $?
s=$(GOMP_SPINCOUNT='' OMP_WAIT_POLICY='' spincount "$bin")
[ "$s" = 30000 ]
check empty_variables_are_no_choice $?

common=(--tokenizer_name "$data/bert-base-uncased/vocab.txt" --config_name "$data/bert-base-uncased/config.json"
        --config_overrides "hidden_size=32,num_hidden_layers=1,num_attention_heads=2,intermediate_size=37"
        --train_file "$data/sample-text/sample_text.txt" --max_seq_length 32 --per_device_train_batch_size 4
        --max_steps 2 --do_train --disable_tqdm --seed 3 --report_to none --save_strategy no)
threads_used() {  # threads_used NAME [wrapper...] -- [extra flags...]: runs a short job, prints ExecutionThreads
  local name=$1
  shift
  local wrapper=()
  while [ "$1" != -- ]; do wrapper+=("$1"); shift; done
  shift
  "${wrapper[@]}" "$bin" run_mlm "${common[@]}" "$@" --output_dir "$work/$name" > "$work/stdout" 2> "$work/stderr" || return 1
  sed -n '/^Counter: ExecutionThreads$/{n;s/^ *Value: //p}' "$work/$name/metrics_report.txt"
}

cpus=$(nproc)
n=$(threads_used default --)
echo "default: ${n:-?} threads, $cpus CPUs"
[ "$n" = "$cpus" ]
check default_uses_every_cpu_it_may $?

n=$(threads_used taskset taskset -c 0 --)
echo "taskset -c 0: ${n:-?} threads"
[ "$n" = 1 ]
check taskset_one_cpu_gives_one_thread $?

n=$(threads_used flag -- --num_threads 1)
echo "--num_threads 1: ${n:-?} threads"
[ "$n" = 1 ] && grep -q '"num_threads": 1' "$work/flag/training_args.json"
check num_threads_flag_wins $?

n=$(threads_used env env OMP_NUM_THREADS=1 --)
[ "$n" = 1 ]
check omp_num_threads_is_the_users_choice $?

# A cgroup with a quota of one CPU (cgroup v2 cpu.max, or v1 cpu.cfs_quota_us).
mount_of() {  # mount_of FSTYPE [SUPER_OPTION]: the first mount point of that type (with that option)
  awk -v type="$1" -v opt="${2:-}" '{ for (i = 7; i <= NF; i++) if ($i == "-") break;
    if ($(i + 1) == type && (opt == "" || ("," $(i + 3) ",") ~ ("," opt ","))) { print $5; exit } }' /proc/self/mountinfo
}
v2=$(mount_of cgroup2)
v1=$(mount_of cgroup cpu)
made=""
if [ -n "$v2" ] && grep -qw cpu "$v2/cgroup.controllers" 2>/dev/null && mkdir "$v2/lazytrain_test_$$" 2>/dev/null; then
  cgroup_dir="$v2/lazytrain_test_$$"
  echo "100000 100000" > "$cgroup_dir/cpu.max" 2>/dev/null && made=v2
elif [ -n "$v1" ] && mkdir "$v1/lazytrain_test_$$" 2>/dev/null; then
  cgroup_dir="$v1/lazytrain_test_$$"
  echo 100000 > "$cgroup_dir/cpu.cfs_period_us" 2>/dev/null && echo 100000 > "$cgroup_dir/cpu.cfs_quota_us" 2>/dev/null && made=v1
fi
if [ -n "$made" ] && [ "$cpus" -gt 1 ]; then
  n=$(threads_used cgroup bash -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cgroup_dir" --)
  echo "cgroup $made quota of one CPU: ${n:-?} threads"
  [ "$n" = 1 ]
  check cgroup_quota_of_one_cpu_gives_one_thread $?
else
  echo "SKIP cgroup quota: cannot make a cgroup with a CPU quota here (or one CPU only)"
fi

# The governor end to end (ctest runs the test binary with OMP_NUM_THREADS=1, a
# count the user gave, so that test skips there): busy processes take CPUs away.
tests_bin=""
for b in "$@"; do [ "$(basename "$b")" = lazytrain_tests ] && tests_bin=$b; done
if [ -n "$tests_bin" ] && [ "$cpus" -gt 1 ]; then
  "$tests_bin" --gtest_filter=ThreadGovernor.ExecutionsGiveWayToBusyProcesses > "$work/stderr" 2>&1
  rc=$?
  grep -q '^\[       OK \] ThreadGovernor.ExecutionsGiveWayToBusyProcesses' "$work/stderr" && [ $rc -eq 0 ]
  check governor_gives_way_to_busy_processes $?
fi

echo "threads_cli_test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
