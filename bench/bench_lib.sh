# Shell helpers of the benchmark scripts (bench/run_all.sh, bench/run_gpt2.sh):
# running one benchmark into $LOG_DIR/NAME.log with a timeout, reading its RESULT
# line, formatting cells, and the matmul peak measured several times (the best counts).
# The sourcing script sets LOG_DIR, RUN_TIMEOUT, BENCH_PEAK, PEAK_MIN_TIME and PYTHON.

# require_torch: exits with one line unless $PYTHON imports torch. Every PyTorch cell would
# read "failed" otherwise, and shared_machine.sh's competing process would never start.
require_torch() {
  "$PYTHON" -c "import torch" 2>/dev/null && return
  echo "$(basename "$0"): $PYTHON cannot import torch; make the peers' venv with bash bench/setup_peers.sh, or set TORCH_PYTHON (Debian's /usr/bin/python3 with python3-torch for PyTorch 1.13)" >&2
  rmdir "$LOG_DIR" 2>/dev/null  # the empty log folder the script made
  exit 1
}

COMMANDS=()
LOADS=()  # the load average (1, 5, 15 min) as each run starts
RUN_PID=""  # the run in progress (its timeout process)
# Ctrl-C or kill stops the run in progress too, then the script (its EXIT trap still runs).
# timeout gives each run a process group of its own, so the terminal's SIGINT never reaches it.
stop_run_and_exit() {
  [ -n "$RUN_PID" ] && kill -TERM "$RUN_PID" 2>/dev/null && wait "$RUN_PID" 2>/dev/null
  echo "$(basename "$0"): interrupted; logs in $LOG_DIR" >&2
  exit 130
}
trap stop_run_and_exit INT TERM
# run NAME CMD...: runs CMD with a timeout, output to $LOG_DIR/NAME.log (and a one-line progress note).
run() {
  local name=$1; shift
  COMMANDS+=("$*")
  local start=$SECONDS
  LOADS+=("$name: $(cut -d' ' -f1-3 /proc/loadavg)")
  echo "== $name: $*" >&2
  # In the background and waited for: the shell runs its INT/TERM trap only between commands.
  timeout --signal=KILL "$RUN_TIMEOUT" "$@" >"$LOG_DIR/$name.log" 2>&1 &
  RUN_PID=$!
  wait "$RUN_PID" 2>/dev/null  # no "Killed" job notice: the log says TIMEOUT
  local rc=$?
  RUN_PID=""
  if [ $rc -eq 137 ]; then echo "TIMEOUT after ${RUN_TIMEOUT}s" >>"$LOG_DIR/$name.log"; fi
  if [ $rc -ne 0 ]; then echo "   $name failed (rc $rc), see $LOG_DIR/$name.log" >&2; fi
  echo "   $((SECONDS - start)) s: $(grep '^RESULT' "$LOG_DIR/$name.log" | tail -1 | cut -c1-160)" >&2
}

# field NAME KEY [MATCH]: KEY's value on the last RESULT line of run NAME (containing MATCH);
# "timeout" / "failed" / "n/a" when there is none.
field() {
  local log=$LOG_DIR/$1.log
  local v
  v=$(grep '^RESULT' "$log" 2>/dev/null | grep -- "${3:-}" | tail -1 | tr ' ' '\n' | sed -n "s/^$2=//p")
  if [ -n "$v" ]; then echo "$v"
  elif grep -q '^TIMEOUT' "$log" 2>/dev/null; then echo "timeout"
  elif [ -e "$log" ]; then echo "failed"
  else echo "n/a"; fi
}

is_num() { [[ $1 =~ ^[0-9.eE+-]+$ ]]; }
# fmt X DIGITS: X with DIGITS decimals, or X unchanged when not a number.
fmt() { if is_num "$1"; then printf "%.${2}f" "$1"; else printf "%s" "$1"; fi; }
# ratio A B: A/B with 2 decimals, n/a when either is not a number.
ratio() { if is_num "$1" && is_num "$2"; then awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; else printf "n/a"; fi; }
# mfu GFLOPS PEAK: percent with 1 decimal.
mfu() { if is_num "$1" && is_num "$2"; then awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f%%", 100*a/b}'; else printf "n/a"; fi; }
mib() { if is_num "$1"; then awk -v k="$1" 'BEGIN{printf "%.0f", k/1024}'; else printf "%s" "$1"; fi; }

# ---- matmul peak: measured before each model's runs and after the last; the best counts
# (contention only slows a matmul down, and the load of a shared machine comes and goes) ----
PEAK_RUNS=()
measure_peak() {
  local name=matmul_peak_$((${#PEAK_RUNS[@]} + 1))
  PEAK_RUNS+=("$name")
  run "$name" "$BENCH_PEAK" --min_time "$PEAK_MIN_TIME"
}

# best KEY MATCH: the largest numeric KEY over every matmul peak run (RESULT lines containing MATCH); n/a if none.
best() {
  local v out=n/a
  for r in "${PEAK_RUNS[@]}"; do
    v=$(field "$r" "$1" "$2")
    if is_num "$v"; then
      if [ "$out" = n/a ]; then out=$v; else out=$(awk -v a="$out" -v b="$v" 'BEGIN{print (b > a ? b : a)}'); fi
    fi
  done
  echo "$out"
}
# all KEY MATCH: KEY of every matmul peak run, " / "-separated.
all() { local r first=1; for r in "${PEAK_RUNS[@]}"; do [ $first = 1 ] || printf " / "; first=0; printf "%s" "$(field "$r" "$1" "$2")"; done; }

# print_peak_table: one markdown row per matmul shape and dtype, the best of every peak run.
print_peak_table() {
  echo "| dtype | shape | GFLOP/s, best of all | best repeat of each measurement | kernel |"
  echo "|---|---|---:|---:|---|"
  grep '^RESULT bench=matmul_peak' "$LOG_DIR/${PEAK_RUNS[0]}.log" 2>/dev/null | grep ' m=' | while read -r line; do
    get() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
    key="dtype=$(get dtype) m=$(get m) k=$(get k) n=$(get n) "
    echo "| $(get dtype) | $(get m)x$(get k)x$(get n) | $(best gflops_best "$key") | $(all gflops_best "$key") | $(get impl) |"
  done
  echo
}

# print_run_footer TITLE: every command run, the load average as each started, start/end and wall time.
# Needs START_UPTIME from the sourcing script.
print_run_footer() {
  echo "$1"
  for c in "${COMMANDS[@]}"; do echo "    $c"; done
  echo "load average (1, 5, 15 min) as each run started:"
  for l in "${LOADS[@]}"; do echo "    $l"; done
  echo "start: $START_UPTIME"
  echo "end:   $(uptime)"
  echo "wall time: $SECONDS s; logs: $LOG_DIR"
}

# best_run PREFIX N...: of the runs PREFIX_tN (one per thread count N, as the PyTorch peer is run at
# each), the name of the one with the best tokens_per_s_best; PREFIX_t<first N> when none has a number.
best_run() {
  local prefix=$1 name best_name="" best_v=0 v t
  shift
  for t in "$@"; do
    name="${prefix}_t$t"
    v=$(field "$name" tokens_per_s_best)
    if is_num "$v" && awk -v a="$v" -v b="$best_v" 'BEGIN{exit !(a > b)}'; then best_v=$v; best_name=$name; fi
  done
  echo "${best_name:-${prefix}_t$1}"
}

# per_thread PREFIX N...: "N thr: tok/s; " for each run PREFIX_tN (best step), one line.
per_thread() {
  local prefix=$1 t
  shift
  for t in "$@"; do printf "%s thr: %s; " "$t" "$(fmt "$(field "${prefix}_t$t" tokens_per_s_best)" 1)"; done
}
