#!/usr/bin/env bash
# On a shared machine: lazytrain and PyTorch training bert-mini while other work
# competes for the cores (issue 15), in one run. Prints one markdown table.
#
#   bash bench/shared_machine.sh
#
# Conditions, each for every configuration below:
#   quiet       nothing else running
#   busy core   a busy loop pinned to the last core (taskset -c <last>)
#   competing   another 2-thread training process: PyTorch training bert-mini
#               (bench/torch_bert_bench.py --threads 2) in a loop, started first
# Configurations (bench_bert_train / torch_bert_bench.py, same model, batch, steps):
#   lazytrain default     no thread setting: the CPUs it may use, 30,000 spins then sleep, the governor
#   lazytrain spinning    GOMP_SPINCOUNT=300000 OMP_NUM_THREADS=<CPUs>: lazytrain before issue 15
#                         (libgomp's own spin count; a thread count given, so not governed)
#   lazytrain 1 thread    OMP_NUM_THREADS=1
#   PyTorch 2 / 1 threads torch.set_num_threads (OpenBLAS threads the same)
# Then the main job's model through the command line (`lazytrain run_mlm`, the
# main job's arguments, --max_steps $MAIN_STEPS, a small validation file: the
# reference script always evaluates) and tools/torch_reference/run_mlm.py,
# with --dataloader_num_workers 0 and 1, on the quiet machine: train_samples_per_second.
#
# Cells: tokens/s over all timed steps (the mean, not the best step: on a
# contended machine the slow steps are the point). Ratios within one condition.
#
# Environment (defaults in brackets):
#   BUILD_DIR [build]  MODEL [bert-mini]  WARMUP [2]  STEPS [20]
#   MAIN_STEPS [200]  TORCH_MAIN_STEPS [20]   the main job's model: steps of lazytrain, of PyTorch
#                 (whose head computes logits for every token: seconds a step)
#   BASE [1]      1: also bert-base quiet, default vs spinning (WARMUP_BASE [1], STEPS_BASE [3])
#   ROUNDS [2]    runs of each lazytrain configuration, in turn; cells are their mean
#   CONDITIONS ["quiet busy competing"]  the conditions to run, in that order
#   MAIN [1]      1: also the main job's model through the command line
#   RUN_TIMEOUT [600]  LOG_DIR [a new /tmp/lazytrain-shared.XXXXXX]
# One row, more rounds (runs of one configuration vary by 10% on a shared VM):
#   CONDITIONS=busy ROUNDS=4 BASE=0 MAIN=0 bash bench/shared_machine.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD_DIR=${BUILD_DIR:-build}
MODEL=${MODEL:-bert-mini}
WARMUP=${WARMUP:-2}
STEPS=${STEPS:-20}
MAIN_STEPS=${MAIN_STEPS:-200}
TORCH_MAIN_STEPS=${TORCH_MAIN_STEPS:-20}
BASE=${BASE:-1}
ROUNDS=${ROUNDS:-2}
MAIN=${MAIN:-1}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "shared_machine.sh: ROUNDS='$ROUNDS' (expected a whole number >= 1)" >&2; exit 2; }
for flag in BASE MAIN; do
  [[ ${!flag} =~ ^[01]$ ]] || { echo "shared_machine.sh: $flag='${!flag}' (expected 0 or 1)" >&2; exit 2; }
done
read -r -a CONDITIONS <<<"${CONDITIONS:-quiet busy competing}"
[ "${#CONDITIONS[@]}" -gt 0 ] || { echo "shared_machine.sh: CONDITIONS is empty (expected quiet, busy or competing)" >&2; exit 2; }
for c in "${CONDITIONS[@]}"; do
  case $c in quiet | busy | competing) ;;
    *) echo "shared_machine.sh: CONDITIONS: unknown condition '$c' (expected quiet, busy or competing)" >&2; exit 2 ;;
  esac
done
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/lazytrain-shared.XXXXXX)}
DATA=${LAZYTRAIN_DATA_DIR:-../shared/data}
mkdir -p "$LOG_DIR"
PYTHON=/usr/bin/python3
# Every thread setting comes from the configurations below, none from the caller.
unset OMP_NUM_THREADS OMP_WAIT_POLICY GOMP_SPINCOUNT LAZYTRAIN_CACHE_DIR LAZYTRAIN_PROFILE LAZYTRAIN_PROFILE_STDERR LAZYTRAIN_BACKEND

# run, field, is_num, fmt, ratio, print_run_footer
source bench/bench_lib.sh
require_torch
START_UPTIME=$(uptime)
echo "shared_machine.sh: logs in $LOG_DIR; start: $START_UPTIME" >&2

cmake --build "$BUILD_DIR" --target lazytrain bench_bert_train >&2 || { echo "shared_machine.sh: build failed" >&2; exit 1; }
BENCH_TRAIN=$BUILD_DIR/bench/bench_bert_train
LAST_CPU=$(($(nproc) - 1))

# OpenBLAS's AVX-512 kernels only where the CPU has AVX-512 (they die with SIGILL elsewhere).
if grep -qw avx512f /proc/cpuinfo; then openblas_core=(OPENBLAS_CORETYPE=SkylakeX); else openblas_core=(); fi
torch_cmd() {  # torch_cmd THREADS: PyTorch's training benchmark at that thread count (as run_all.sh)
  echo env "${openblas_core[@]}" OPENBLAS_NUM_THREADS="$1" tools/torch_reference/with_openblas.sh "$PYTHON" bench/torch_bert_bench.py \
    --threads "$1"
}

BACKGROUND=()
stop_background() {
  for pid in "${BACKGROUND[@]}"; do kill -- -"$pid" 2>/dev/null || kill "$pid" 2>/dev/null; done
  for pid in "${BACKGROUND[@]}"; do wait "$pid" 2>/dev/null; done
  BACKGROUND=()
}
trap stop_background EXIT

# start_condition NAME: starts the condition's competing work (in its own process group).
start_condition() {
  case $1 in
    quiet) ;;
    busy) setsid taskset -c "$LAST_CPU" bash -c 'while :; do :; done' & BACKGROUND+=($!) ;;
    competing)
      # shellcheck disable=SC2046
      PYTHONUNBUFFERED=1 setsid $(torch_cmd 2) --model bert-mini --warmup 1 --steps 1000000 >"$LOG_DIR/competitor.log" 2>&1 &
      BACKGROUND+=($!)
      # Until it trains: its banner comes after the import, then a few seconds for the model.
      for _ in $(seq 120); do grep -q "^torch_bert_bench:" "$LOG_DIR/competitor.log" 2>/dev/null && break; sleep 0.5; done
      sleep 5
      if ! kill -0 "${BACKGROUND[-1]}" 2>/dev/null || ! grep -q "^torch_bert_bench:" "$LOG_DIR/competitor.log"; then
        echo "shared_machine.sh: the competing process did not start training, see $LOG_DIR/competitor.log" >&2
        exit 1
      fi ;;
  esac
}

for c in "${CONDITIONS[@]}"; do
  start_condition "$c"
  # lazytrain's configurations in turn, $ROUNDS times (runs of one configuration vary by 10% here),
  # every other round in reverse order, so that no configuration always follows the same one.
  for r in $(seq "$ROUNDS"); do
    order=(default 1thread spinning)
    [ $((r % 2)) = 0 ] && order=(spinning 1thread default)
    for config in "${order[@]}"; do
      case $config in
        default) run "${c}_lt_default_r$r" "$BENCH_TRAIN" --model "$MODEL" --backend cpu --warmup "$WARMUP" --steps "$STEPS" ;;
        1thread) run "${c}_lt_1thread_r$r" env OMP_NUM_THREADS=1 "$BENCH_TRAIN" --model "$MODEL" --backend cpu --warmup "$WARMUP" --steps "$STEPS" ;;
        spinning) run "${c}_lt_spinning_r$r" env GOMP_SPINCOUNT=300000 OMP_NUM_THREADS="$(nproc)" "$BENCH_TRAIN" --model "$MODEL" \
          --backend cpu --warmup "$WARMUP" --steps "$STEPS" ;;
      esac
    done
  done
  # shellcheck disable=SC2046
  run "${c}_pt_2threads" $(torch_cmd 2) --model "$MODEL" --warmup "$WARMUP" --steps "$STEPS"
  # shellcheck disable=SC2046
  run "${c}_pt_1thread" $(torch_cmd 1) --model "$MODEL" --warmup "$WARMUP" --steps "$STEPS"
  stop_background
done

if [ "$BASE" = 1 ]; then
  for r in $(seq "$ROUNDS"); do
    run "quiet_base_lt_default_r$r" "$BENCH_TRAIN" --model bert-base --backend cpu --warmup "${WARMUP_BASE:-1}" --steps "${STEPS_BASE:-3}"
    run "quiet_base_lt_spinning_r$r" env GOMP_SPINCOUNT=300000 OMP_NUM_THREADS="$(nproc)" "$BENCH_TRAIN" --model bert-base \
      --backend cpu --warmup "${WARMUP_BASE:-1}" --steps "${STEPS_BASE:-3}"
  done
fi

# The main job's model and arguments, shortened (scripts/run_main_job.sh).
MAIN_ARGS=(--config_name "$DATA/bert-base-uncased/config.json"
  --config_overrides "hidden_size=128,num_hidden_layers=2,num_attention_heads=2,intermediate_size=512"
  --tokenizer_name "$DATA/bert-base-uncased/vocab.txt" --train_file "$DATA/wikitext-2/valid.txt"
  --validation_file "$DATA/sample-text/sample_text.txt" --max_seq_length 128 --per_device_train_batch_size 16
  --per_device_eval_batch_size 16 --learning_rate 1e-3 --logging_steps 20 --seed 42)
for w in $([ "$MAIN" = 1 ] && echo 0 1); do
  run "main_lt_workers$w" "$BUILD_DIR/lazytrain" run_mlm --model_type bert "${MAIN_ARGS[@]}" --max_steps "$MAIN_STEPS" --do_train --save_strategy no \
    --report_to none --disable_tqdm --overwrite_output_dir --dataloader_num_workers "$w" --output_dir "$LOG_DIR/main_lt_workers$w"
  run "main_pt_workers$w" env "${openblas_core[@]}" tools/torch_reference/with_openblas.sh "$PYTHON" tools/torch_reference/run_mlm.py "${MAIN_ARGS[@]}" --max_steps "$TORCH_MAIN_STEPS" --dataloader_num_workers "$w" \
    --output_dir "$LOG_DIR/main_pt_workers$w"
done

tok() { field "$1" tokens_per_s; }
lt_tok() {  # lt_tok NAME: the mean tokens/s of NAME's rounds (n/a unless every round has a number)
  local r v sum=0
  for r in $(seq "$ROUNDS"); do
    v=$(tok "${1}_r$r")
    is_num "$v" || { echo "$v"; return; }
    sum=$(awk -v a="$sum" -v b="$v" 'BEGIN{print a + b}')
  done
  awk -v s="$sum" -v n="$ROUNDS" 'BEGIN{printf "%.2f", s / n}'
}
samples() {  # samples RUN: train_samples_per_second from the run's train_results.json
  local f=$LOG_DIR/$1/train_results.json
  if [ -e "$f" ]; then "$PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1]))['train_samples_per_second'])" "$f"
  else echo failed; fi
}

echo
echo "### On a shared machine: $MODEL training steps (batch $(field "${CONDITIONS[0]}_lt_default_r1" batch), seq 128), tokens/s over $STEPS timed steps (lazytrain: mean of $ROUNDS runs)"
echo
echo "| condition | lazytrain default | lazytrain spinning (before) | lazytrain 1 thread | default / 1 thread | PyTorch 2 threads | PyTorch 1 thread | lazytrain default / PyTorch best |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for c in "${CONDITIONS[@]}"; do
  d=$(lt_tok "${c}_lt_default"); s=$(lt_tok "${c}_lt_spinning"); one=$(lt_tok "${c}_lt_1thread")
  p2=$(tok "${c}_pt_2threads"); p1=$(tok "${c}_pt_1thread")
  pbest=$p2
  if is_num "$p1" && { ! is_num "$p2" || awk -v a="$p1" -v b="$p2" 'BEGIN{exit !(a > b)}'; }; then pbest=$p1; fi
  label=$c
  [ "$c" = busy ] && label="one core busy (busy loop on CPU $LAST_CPU)"
  [ "$c" = competing ] && label="another 2-thread training process (PyTorch bert-mini)"
  echo "| $label | $(fmt "$d" 0) | $(fmt "$s" 0) | $(fmt "$one" 0) | $(ratio "$d" "$one") | $(fmt "$p2" 0) | $(fmt "$p1" 0) | $(ratio "$d" "$pbest") |"
done
if [ "$BASE" = 1 ]; then
  echo
  echo "bert-base, quiet: lazytrain default $(fmt "$(lt_tok quiet_base_lt_default)" 1) tokens/s, spinning" \
    "$(fmt "$(lt_tok quiet_base_lt_spinning)" 1) (default / spinning $(ratio "$(lt_tok quiet_base_lt_default)" "$(lt_tok quiet_base_lt_spinning)"))"
  [[ " ${CONDITIONS[*]} " == *" quiet "* ]] &&
    echo "$MODEL, quiet: default / spinning $(ratio "$(lt_tok quiet_lt_default)" "$(lt_tok quiet_lt_spinning)")"
fi
if [ "$MAIN" = 1 ]; then
  echo
  echo "Main job's model, quiet: train_samples_per_second (lazytrain $MAIN_STEPS steps, its compile included; PyTorch $TORCH_MAIN_STEPS steps)"
  echo
  echo "| | --dataloader_num_workers 0 | 1 | 1 / 0 |"
  echo "|---|---:|---:|---:|"
  echo "| lazytrain run_mlm | $(samples main_lt_workers0) | $(samples main_lt_workers1) | $(ratio "$(samples main_lt_workers1)" "$(samples main_lt_workers0)") |"
  echo "| PyTorch (tools/torch_reference/run_mlm.py, 2 threads) | $(samples main_pt_workers0) | $(samples main_pt_workers1) | $(ratio "$(samples main_pt_workers1)" "$(samples main_pt_workers0)") |"
fi
echo
echo "lazytrain's thread count and wait policy, as it printed them: $(grep -h '^compute threads' "$LOG_DIR/${CONDITIONS[0]}_lt_default_r1.log" | head -1)"
echo "lazytrain default, compute threads in its last step (the thread governor's choice), each run:" \
  "$(for c in "${CONDITIONS[@]}"; do printf "%s" "$c"; for r in $(seq "$ROUNDS"); do printf " %s" "$(field "${c}_lt_default_r$r" threads_in_use)"; done; printf "; "; done)"
print_run_footer "runs:"
