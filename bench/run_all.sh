#!/usr/bin/env bash
# Builds the benchmarks and measures lazytrain against PyTorch 1.13 in one run
# (bench/README.md): BertForMaskedLM training-step throughput at seq 128 with AdamW
# for bert-tiny, bert-mini, bert-base and bert-large, f32 (and bf16), MFU against the oneDNN
# matmul peak measured here, and peak RSS. PyTorch runs at each thread count of
# TORCH_THREADS and its fastest is compared (every one is printed); every run is
# pinned to the same cores (taskset). Prints one markdown table.
#
#   bash bench/run_all.sh
#
# Environment (defaults in brackets):
#   BUILD_DIR   [build]  CMake build directory holding the bench targets (configured with Ninja if absent)
#   MODELS      ["bert-tiny bert-mini bert-base bert-large"]
#   BACKENDS    ["interpreter cpu"]   lazytrain backends, one table row each (bert-large: cpu only)
#   STEPS_TINY ["2 8"]  STEPS_MINI ["2 5"]  STEPS_BASE ["2 3"]  STEPS_LARGE ["1 2"]   "warm-up timed" steps per model
#   THREADS     [2]      lazytrain's threads (OMP_NUM_THREADS)
#   TORCH_THREADS ["1 2"]  PyTorch thread counts tried per model and dtype (torch.set_num_threads and
#                        OPENBLAS_NUM_THREADS); the fastest is compared and every one is printed
#   ONE_THREAD  [1]      1: also run lazytrain's cpu backend on one thread (pinned as PyTorch's runs) and print a second
#                        table against PyTorch's one-thread runs (needs 1 in TORCH_THREADS); 0: skip
#   RUN_TIMEOUT [600]    seconds before one run is killed (its cells read "timeout")
#   PEAK_MIN_TIME [1]    seconds per matmul shape in bench_matmul_peak
#   LOG_DIR     [a new /tmp/lazytrain-bench.XXXXXX]   every run's full output
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

BUILD_DIR=${BUILD_DIR:-build}
MODELS=${MODELS:-"bert-tiny bert-mini bert-base bert-large"}
BACKENDS=${BACKENDS:-"interpreter cpu"}
THREADS=${THREADS:-2}
TORCH_THREADS=${TORCH_THREADS:-"1 2"}
ONE_THREAD=${ONE_THREAD:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
PEAK_MIN_TIME=${PEAK_MIN_TIME:-1}
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/lazytrain-bench.XXXXXX)}
mkdir -p "$LOG_DIR"
PYTHON=/usr/bin/python3
export OMP_NUM_THREADS=$THREADS
# Cold compiles and quiet runs: no on-disk compile cache, no per-instruction profile.
unset LAZYTRAIN_CACHE_DIR LAZYTRAIN_PROFILE LAZYTRAIN_PROFILE_STDERR LAZYTRAIN_BACKEND

steps_for() {
  case $1 in
    bert-tiny) echo "${STEPS_TINY:-2 8}" ;;
    bert-mini) echo "${STEPS_MINI:-2 5}" ;;
    bert-base) echo "${STEPS_BASE:-2 3}" ;;
    bert-large) echo "${STEPS_LARGE:-1 2}" ;;
    *) echo "run_all.sh: unknown model '$1' (bert-tiny, bert-mini, bert-base, bert-large)" >&2; exit 2 ;;
  esac
}

# bert-large runs on the cpu backend only (the interpreter would take minutes a step).
skip_backend() { [ "$1" = bert-large ] && [ "$2" = interpreter ]; }

# run, field, is_num, fmt, ratio, mfu, mib, measure_peak, best, all, best_run, per_thread, print_peak_table, print_run_footer
source bench/bench_lib.sh
require_torch

# Every run on the same cores: the first $THREADS of this machine.
PIN=()
if command -v taskset >/dev/null; then PIN=(taskset -c "0-$((THREADS - 1))"); fi

START_UPTIME=$(uptime)
echo "run_all.sh: logs in $LOG_DIR; start: $START_UPTIME" >&2

# ---- build ----
if [ ! -e "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAZYTRAIN_WERROR=ON >&2 || exit 1
fi
cmake --build "$BUILD_DIR" --target bench_bert_train bench_matmul_peak >&2 ||
  { echo "run_all.sh: build failed (does the top-level CMakeLists.txt have add_subdirectory(bench)?)" >&2; exit 1; }
BENCH_TRAIN=$BUILD_DIR/bench/bench_bert_train
BENCH_PEAK=$BUILD_DIR/bench/bench_matmul_peak

# PyTorch f32: OpenBLAS (Debian's default libblas.so.3 here is the netlib reference BLAS)
# with its AVX-512 kernels (its Zen detection otherwise falls back to slow ones).
# OpenBLAS's AVX-512 kernels only where the CPU has AVX-512 (they die with SIGILL elsewhere);
# otherwise OpenBLAS picks its own (Haswell's AVX2 ones on Zen 3).
if grep -qw avx512f /proc/cpuinfo; then openblas_core=(OPENBLAS_CORETYPE=SkylakeX); else openblas_core=(); fi
torch_cmd() {  # torch_cmd THREADS: the PyTorch command line at that thread count
  echo env "${openblas_core[@]}" OPENBLAS_NUM_THREADS="$1" tools/torch_reference/with_openblas.sh "$PYTHON" bench/torch_bert_bench.py \
    --threads "$1"
}

# ---- training steps ----
for model in $MODELS; do
  read -r warm timed <<<"$(steps_for "$model")"
  measure_peak
  for backend in $BACKENDS; do
    skip_backend "$model" "$backend" && continue
    run "lt_${model}_${backend}" "${PIN[@]}" "$BENCH_TRAIN" --model "$model" --backend "$backend" --warmup "$warm" --steps "$timed"
    run "lt_${model}_${backend}_bf16" "${PIN[@]}" "$BENCH_TRAIN" --model "$model" --backend "$backend" --bf16 --warmup "$warm" --steps "$timed"
  done
  if [ "$ONE_THREAD" = 1 ]; then
    run "lt1_${model}_cpu" env OMP_NUM_THREADS=1 "${PIN[@]}" "$BENCH_TRAIN" --model "$model" --backend cpu --warmup "$warm" --steps "$timed"
    run "lt1_${model}_cpu_bf16" env OMP_NUM_THREADS=1 "${PIN[@]}" "$BENCH_TRAIN" --model "$model" --backend cpu --bf16 --warmup "$warm" --steps "$timed"
  fi
  for t in $TORCH_THREADS; do
    # shellcheck disable=SC2046
    run "pt_${model}_f32_t$t" "${PIN[@]}" $(torch_cmd "$t") --model "$model" --dtype f32 --warmup "$warm" --steps "$timed"
    # shellcheck disable=SC2046
    run "pt_${model}_bf16_t$t" "${PIN[@]}" $(torch_cmd "$t") --model "$model" --dtype bf16 --warmup "$warm" --steps "$timed"
  done
done

measure_peak
PEAK_F32=$(best peak_gflops "dtype=f32 peak")
PEAK_BF16=$(best peak_gflops "dtype=bf16 peak")

# ---- report ----
# tok/s cells: best step (mean of the timed steps). Ratios and MFU use the best step:
# on a shared machine contention only ever slows a step down.
tok() { if is_num "$1"; then printf "%.1f (%.1f)" "$1" "$2"; else printf "%s" "$1"; fi; }
echo
echo "### lazytrain vs PyTorch 1.13: BertForMaskedLM training step (seq 128, AdamW, clip 1.0), $THREADS threads"
echo
echo "| model | backend | lazytrain f32 tok/s | PyTorch f32 tok/s | ratio | lazytrain bf16 tok/s | PyTorch bf16 tok/s | ratio | MFU f32 lazytrain / PyTorch | MFU bf16 lazytrain / PyTorch | peak RSS MiB lazytrain / PyTorch f32 / PyTorch bf16 | CPU s/step lazytrain / PyTorch f32 (ratio) | first-step compile s | ExecuteTime share |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
PEER_NOTES=()
for model in $MODELS; do
  read -r warm timed <<<"$(steps_for "$model")"
  # PyTorch's fastest thread count for each dtype (best_run).
  ptn=$(best_run "pt_${model}_f32" $TORCH_THREADS); ptbn=$(best_run "pt_${model}_bf16" $TORCH_THREADS)
  pt=$(field "$ptn" tokens_per_s_best); pt_mean=$(field "$ptn" tokens_per_s)
  ptb=$(field "$ptbn" tokens_per_s_best); ptb_mean=$(field "$ptbn" tokens_per_s)
  pt_g=$(field "$ptn" model_gflops_best)
  ptb_g=$(field "$ptbn" model_gflops_best)
  pt_rss=$(field "$ptn" vmhwm_kb)
  pt_cpu=$(field "$ptn" cpu_s_per_step)
  ptb_rss=$(field "$ptbn" vmhwm_kb)
  batch=$(field "$ptn" batch)
  PEER_NOTES+=("$model: PyTorch f32 $(per_thread "pt_${model}_f32" $TORCH_THREADS)bf16 $(per_thread "pt_${model}_bf16" $TORCH_THREADS)compared: f32 $(field "$ptn" threads) thr, bf16 $(field "$ptbn" threads) thr")
  for backend in $BACKENDS; do
    skip_backend "$model" "$backend" && continue
    n="lt_${model}_${backend}"
    lt=$(field "$n" tokens_per_s_best); lt_mean=$(field "$n" tokens_per_s)
    ltb=$(field "${n}_bf16" tokens_per_s_best); ltb_mean=$(field "${n}_bf16" tokens_per_s)
    lt_g=$(field "$n" model_gflops_best)
    ltb_g=$(field "${n}_bf16" model_gflops_best)
    lt_rss=$(field "$n" vmhwm_kb)
    lt_cpu=$(field "$n" cpu_s_per_step)
    comp=$(field "$n" first_compile_s)
    share=$(field "$n" execute_share)
    is_num "$share" && share=$(awk -v s="$share" 'BEGIN{printf "%.0f%%", 100*s}')
    is_num "$batch" || batch=$(field "$n" batch)
    printf "| %s (b%s, %s+%s steps) | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s | %s / %s / %s | %s / %s (%s) | %s | %s |\n" \
      "$model" "$batch" "$warm" "$timed" "$backend" "$(tok "$lt" "$lt_mean")" "$(tok "$pt" "$pt_mean")" "$(ratio "$lt" "$pt")" \
      "$(tok "$ltb" "$ltb_mean")" "$(tok "$ptb" "$ptb_mean")" "$(ratio "$ltb" "$ptb")" \
      "$(mfu "$lt_g" "$PEAK_F32")" "$(mfu "$pt_g" "$PEAK_F32")" "$(mfu "$ltb_g" "$PEAK_BF16")" "$(mfu "$ptb_g" "$PEAK_BF16")" \
      "$(mib "$lt_rss")" "$(mib "$pt_rss")" "$(mib "$ptb_rss")" \
      "$(fmt "$lt_cpu" 2)" "$(fmt "$pt_cpu" 2)" "$(ratio "$pt_cpu" "$lt_cpu")" "$(fmt "$comp" 2)" "$share"
  done
done
echo
echo "tok/s: best timed step (mean over the timed steps in parentheses). ratio = lazytrain / PyTorch, best steps"
echo "(above 1: lazytrain is faster). Both run the MLM head on the labelled rows only (--lm_head labelled: about 15%"
echo "of the tokens; lazytrain pads them to a static capacity, 224 of 1024 rows at batch 8, PyTorch indexes exactly the"
echo "labelled ones). MFU = best-step matmul FLOPs/s (3 x forward matmul FLOPs per token, the head counted on the"
echo "labelled rows only for both, x tokens/s) / the oneDNN matmul peak below. CPU s/step: process user + system time per timed step, all threads"
echo "(OpenMP/OpenBLAS spin-waits included), barely moved by other load; its ratio is PyTorch / lazytrain (above 1:"
echo "lazytrain needs less CPU). PyTorch BLAS for f32:" \
     "$(for m in $MODELS; do printf "%s %s; " "$m" "$(field "$(best_run "pt_${m}_f32" $TORCH_THREADS)" blas)"; done)"
if [ "$ONE_THREAD" = 1 ]; then
  echo
  echo "### One thread: lazytrain cpu backend vs PyTorch 1.13 at one thread, both pinned to the same cores"
  echo
  echo "| model | lazytrain f32 tok/s | PyTorch f32 tok/s | ratio | lazytrain bf16 tok/s | PyTorch bf16 tok/s | ratio |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  for model in $MODELS; do
    l=$(field "lt1_${model}_cpu" tokens_per_s_best); lb=$(field "lt1_${model}_cpu_bf16" tokens_per_s_best)
    p=$(field "pt_${model}_f32_t1" tokens_per_s_best); pb=$(field "pt_${model}_bf16_t1" tokens_per_s_best)
    printf "| %s | %s | %s | %s | %s | %s | %s |\n" "$model" \
      "$(tok "$l" "$(field "lt1_${model}_cpu" tokens_per_s)")" "$(tok "$p" "$(field "pt_${model}_f32_t1" tokens_per_s)")" "$(ratio "$l" "$p")" \
      "$(tok "$lb" "$(field "lt1_${model}_cpu_bf16" tokens_per_s)")" "$(tok "$pb" "$(field "pt_${model}_bf16_t1" tokens_per_s)")" "$(ratio "$lb" "$pb")"
  done
fi
echo
echo "PyTorch at each thread count tried (tokens/s of the best step; the faster one is in the table):"
for n in "${PEER_NOTES[@]}"; do echo "    $n"; done
echo
echo "oneDNN matmul peak ($THREADS threads; M x K x N), measured ${#PEAK_RUNS[@]} times: before each model's runs and after the last:"
echo
print_peak_table
echo "peak (best of all): f32 $PEAK_F32 GFLOP/s, bf16 $PEAK_BF16 GFLOP/s"
echo
echo "command: BUILD_DIR=$BUILD_DIR MODELS=\"$MODELS\" BACKENDS=\"$BACKENDS\" STEPS_TINY=\"$(steps_for bert-tiny)\"" \
     "STEPS_MINI=\"$(steps_for bert-mini)\" STEPS_BASE=\"$(steps_for bert-base)\" STEPS_LARGE=\"$(steps_for bert-large)\" THREADS=$THREADS TORCH_THREADS=\"$TORCH_THREADS\" ONE_THREAD=$ONE_THREAD bash bench/run_all.sh"
print_run_footer "runs (OMP_NUM_THREADS=$THREADS):"
