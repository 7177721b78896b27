#!/usr/bin/env bash
# How long should OpenMP threads spin before they sleep? lazytrain's default
# spin count (liblazytrain_omp_defaults.so) against the alternatives on a quiet
# machine, in one run. Prints one markdown table.
#
#   bash bench/wait_policy.sh
#
# Configurations, run in turn ROUNDS times (so a slow spell of a shared machine
# falls on all of them), each bench_bert_train on THREADS threads given as
# OMP_NUM_THREADS: a given count is not governed, so the thread governor cannot
# drop a run to one thread when a neighbour appears, and only the waiting differs:
#   passive   OMP_WAIT_POLICY=passive (GOMP_SPINCOUNT 0: sleep at once)
#   3000      GOMP_SPINCOUNT=3000
#   default   no setting: lazytrain's GOMP_SPINCOUNT=30000
#   300000    GOMP_SPINCOUNT=300000, libgomp's own default
# Cells: the mean over rounds of each run's best-step tokens/s, and its ratio
# to 300000 (lazytrain before issue 15 spun that long).
#
# Environment (defaults in brackets):
#   BUILD_DIR [build]  MODELS ["bert-mini bert-base"]  ROUNDS [5]  THREADS [the CPUs, nproc]
#   RUN_TIMEOUT [600]  LOG_DIR [a new /tmp/lazytrain-wait.XXXXXX]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD_DIR=${BUILD_DIR:-build}
MODELS=${MODELS:-bert-mini bert-base}
ROUNDS=${ROUNDS:-5}
THREADS=${THREADS:-$(nproc)}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/lazytrain-wait.XXXXXX)}
mkdir -p "$LOG_DIR"
unset OMP_NUM_THREADS OMP_WAIT_POLICY GOMP_SPINCOUNT LAZYTRAIN_CACHE_DIR LAZYTRAIN_PROFILE LAZYTRAIN_PROFILE_STDERR LAZYTRAIN_BACKEND

# run, field, is_num, fmt, ratio, print_run_footer
source bench/bench_lib.sh
START_UPTIME=$(uptime)
echo "wait_policy.sh: logs in $LOG_DIR; start: $START_UPTIME" >&2
cmake --build "$BUILD_DIR" --target bench_bert_train >&2 || { echo "wait_policy.sh: build failed" >&2; exit 1; }
BENCH_TRAIN=$BUILD_DIR/bench/bench_bert_train

CONFIGS=(passive 3000 default 300000)
config_env() {  # config_env CONFIG: the env arguments of CONFIG
  case $1 in
    passive) echo OMP_WAIT_POLICY=passive ;;
    default) ;;  # nothing set
    *) echo "GOMP_SPINCOUNT=$1" ;;
  esac
}
steps_of() { [ "$1" = bert-base ] && echo "--warmup 1 --steps 4" || echo "--warmup 2 --steps 5"; }

for m in $MODELS; do
  for r in $(seq "$ROUNDS"); do
    for c in "${CONFIGS[@]}"; do
      # shellcheck disable=SC2046
      run "${m}_${c}_r$r" env OMP_NUM_THREADS="$THREADS" $(config_env "$c") "$BENCH_TRAIN" --model "$m" --backend cpu $(steps_of "$m")
    done
  done
done

mean_best() {  # mean_best MODEL CONFIG: mean best-step tokens/s over the rounds (n/a unless every round has one)
  local r v sum=0
  for r in $(seq "$ROUNDS"); do
    v=$(field "${1}_${2}_r$r" tokens_per_s_best)
    is_num "$v" || { echo "$v"; return; }
    sum=$(awk -v a="$sum" -v b="$v" 'BEGIN{print a + b}')
  done
  awk -v s="$sum" -v n="$ROUNDS" 'BEGIN{printf "%.2f", s / n}'
}

echo
echo "### OpenMP spin count on a quiet machine, $THREADS threads: best-step tokens/s, mean of $ROUNDS rounds (ratio to GOMP_SPINCOUNT=300000)"
echo
echo "| model | passive | 3,000 | 30,000 (lazytrain's default) | 300,000 (libgomp's default) |"
echo "|---|---:|---:|---:|---:|"
for m in $MODELS; do
  ref=$(mean_best "$m" 300000)
  row="| $m"
  for c in "${CONFIGS[@]}"; do v=$(mean_best "$m" "$c"); row+=" | $(fmt "$v" 1) ($(ratio "$v" "$ref"))"; done
  echo "$row |"
done
echo
echo "The default configuration's threads and waiting, as it printed them: $(grep -h '^compute threads' "$LOG_DIR/$(echo "$MODELS" | cut -d' ' -f1)_default_r1.log" | head -1)"
print_run_footer "runs:"
