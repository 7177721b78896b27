#!/usr/bin/env bash
# GPT-2 124M training step, lazytrain against today's PyTorch (2.13, bench/setup_peers.sh's venv)
# in one run (bench/README.md), or with MODEL=llama a SmolLM2-135M-shaped Llama against
# transformers' LlamaForCausalLM on PyTorch 2.13 (bench/run_all.sh adds torch.compile, JAX and PyTorch/XLA):
# batch 4 x sequence 64 (the plain-C GPT-2 trainer's default) and 4 x 1024, f32 and bf16
# (autocast), tokens/s, MFU against the oneDNN matmul peak measured in the same run, and
# peak RSS. PyTorch runs at each thread count of TORCH_THREADS and its best counts (the
# table names it and shows the others). Prints one markdown table.
#
#   bash bench/run_gpt2.sh
#   MODEL=llama TORCH_PYTHON=/work/venv-llama/bin/python SEQS=64 bash bench/run_gpt2.sh
#
# Environment (defaults in brackets):
#   BUILD_DIR     [build]   CMake build directory (configured with Ninja if absent)
#   SEQS          ["64 1024"]   sequence lengths (batch 4 each)
#   DTYPES        ["f32 bf16"]  the dtypes run (bf16: autocast)
#   STEPS_64 ["2 5"]  STEPS_1024 ["1 2"]  STEPS_OTHER ["1 2"]   "warm-up timed" steps per sequence length
#   THREADS       [2]       lazytrain's threads (OMP_NUM_THREADS), and the cores every run is pinned to (taskset)
#   TORCH_THREADS ["1 2"]   PyTorch thread counts tried (torch.set_num_threads, OPENBLAS_NUM_THREADS)
#   MODEL         [gpt2]    gpt2 or llama (bench_gpt2_train --model_type, torch_gpt2_bench.py --model_type)
#   CONFIG        [gpt2: ../shared/data/gpt2/config.json; llama: bench/smollm2_135m_config.json]
#   TORCH_PYTHON  [~/.cache/lazytrain/venv-peers/bin/python (bench/setup_peers.sh: torch 2.13, transformers), run
#                  with the BLAS its wheel ships; /usr/bin/python3 gives the older figures against Debian's torch 1.13,
#                  run with OpenBLAS's AVX-512 kernels]
#   RUN_TIMEOUT   [1200]    seconds before one run is killed (its cells read "timeout")
#   PEAK_MIN_TIME [1]       seconds per matmul shape in bench_matmul_peak
#   LOG_DIR       [a new /tmp/lazytrain-gpt2-bench.XXXXXX]   every run's full output
set -uo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
SEQS=${SEQS:-"64 1024"}
DTYPES=${DTYPES:-"f32 bf16"}
THREADS=${THREADS:-2}
TORCH_THREADS=${TORCH_THREADS:-"1 2"}
MODEL=${MODEL:-gpt2}
PYTHON=${TORCH_PYTHON:-${XDG_CACHE_HOME:-$HOME/.cache}/lazytrain/venv-peers/bin/python}
case $MODEL in
  gpt2) CONFIG=${CONFIG:-../shared/data/gpt2/config.json} ;;
  llama) CONFIG=${CONFIG:-bench/smollm2_135m_config.json} ;;
  *) echo "run_gpt2.sh: MODEL must be gpt2 or llama, got '$MODEL'" >&2; exit 2 ;;
esac
RUN_TIMEOUT=${RUN_TIMEOUT:-1200}
PEAK_MIN_TIME=${PEAK_MIN_TIME:-1}
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/lazytrain-gpt2-bench.XXXXXX)}
mkdir -p "$LOG_DIR"
export OMP_NUM_THREADS=$THREADS
unset LAZYTRAIN_CACHE_DIR LAZYTRAIN_PROFILE LAZYTRAIN_PROFILE_STDERR LAZYTRAIN_BACKEND
[ -r "$CONFIG" ] || { echo "run_gpt2.sh: no $MODEL config at '$CONFIG' (set CONFIG)" >&2; exit 2; }

steps_for() {
  case $1 in
    64) echo "${STEPS_64:-2 5}" ;;
    1024) echo "${STEPS_1024:-1 2}" ;;
    *) echo "${STEPS_OTHER:-1 2}" ;;
  esac
}

# run, field, is_num, fmt, ratio, mfu, mib, measure_peak, best, all, best_run, per_thread, print_peak_table, print_run_footer
source bench/bench_lib.sh
require_torch
if [ "$MODEL" = llama ] && ! "$PYTHON" -c "import transformers" 2>/dev/null; then
  echo "run_gpt2.sh: $PYTHON cannot import transformers (MODEL=llama's peer is its LlamaForCausalLM)" >&2; exit 1
fi
TORCH_VERSION=$("$PYTHON" -c "import torch; print(torch.__version__)")

# Every run on the same cores: the first $THREADS of this machine.
PIN=()
if command -v taskset >/dev/null; then PIN=(taskset -c "0-$((THREADS - 1))"); fi

START_UPTIME=$(uptime)
echo "run_gpt2.sh: logs in $LOG_DIR; start: $START_UPTIME" >&2
if [ ! -e "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAZYTRAIN_WERROR=ON >&2 || exit 1
fi
cmake --build "$BUILD_DIR" --target bench_gpt2_train bench_matmul_peak >&2 || { echo "run_gpt2.sh: build failed" >&2; exit 1; }
BENCH_TRAIN=$BUILD_DIR/bench/bench_gpt2_train
BENCH_PEAK=$BUILD_DIR/bench/bench_matmul_peak

# PyTorch f32 through OpenBLAS with its AVX-512 kernels (the system libblas.so.3 is the netlib reference here).
# OpenBLAS's AVX-512 kernels only where the CPU has AVX-512 (they die with SIGILL elsewhere);
# otherwise OpenBLAS picks its own (Haswell's AVX2 ones on Zen 3).
if grep -qw avx512f /proc/cpuinfo; then openblas_core=(OPENBLAS_CORETYPE=SkylakeX); else openblas_core=(); fi
torch_cmd() {  # torch_cmd THREADS: the PyTorch command line prefix
  if [ "$MODEL" = llama ]; then  # the pip wheel brings its own BLAS and oneDNN
    echo "$PYTHON" bench/torch_gpt2_bench.py --model_type llama --threads "$1" --config "$CONFIG"
  elif [[ $TORCH_VERSION != 1.* ]]; then
    echo "$PYTHON" bench/torch_gpt2_bench.py --threads "$1" --config "$CONFIG"
  else
    echo env "${openblas_core[@]}" OPENBLAS_NUM_THREADS="$1" tools/torch_reference/with_openblas.sh "$PYTHON" bench/torch_gpt2_bench.py \
      --threads "$1" --config "$CONFIG"
  fi
}

for seq in $SEQS; do
  read -r warm timed <<<"$(steps_for "$seq")"
  measure_peak
  for dtype in $DTYPES; do
    flag=(); [ "$dtype" = bf16 ] && flag=(--bf16)
    run "lt_${seq}_${dtype}" "${PIN[@]}" "$BENCH_TRAIN" --model_type "$MODEL" --config "$CONFIG" --seq_len "$seq" --warmup "$warm" --steps "$timed" "${flag[@]}"
    for t in $TORCH_THREADS; do
      # shellcheck disable=SC2046
      run "pt_${seq}_${dtype}_t${t}" "${PIN[@]}" $(torch_cmd "$t") --dtype "$dtype" --seq_len "$seq" --warmup "$warm" --steps "$timed"
    done
  done
done
measure_peak
PEAK_F32=$(best peak_gflops "dtype=f32 peak")
PEAK_BF16=$(best peak_gflops "dtype=bf16 peak")

echo
echo "### lazytrain vs PyTorch $TORCH_VERSION: $MODEL training step (forward, backward, clip 1.0, AdamW), batch 4, config $CONFIG"
echo
echo "| seq | dtype | lazytrain tok/s | PyTorch tok/s (best threads) | ratio | PyTorch, every thread count tried | MFU lazytrain / PyTorch | peak RSS MiB lazytrain / PyTorch | step s lazytrain / PyTorch |"
echo "|---:|---|---:|---:|---:|---|---:|---:|---:|"
for seq in $SEQS; do
  read -r warm timed <<<"$(steps_for "$seq")"
  for dtype in $DTYPES; do
    lt="lt_${seq}_${dtype}"
    pt=$(best_run "pt_${seq}_${dtype}" $TORCH_THREADS)
    peak=$PEAK_F32; [ "$dtype" = bf16 ] && peak=$PEAK_BF16
    tried=$(per_thread "pt_${seq}_${dtype}" $TORCH_THREADS)
    printf "| %s (%s+%s steps) | %s | %s | %s (%s thr) | %s | %s | %s / %s | %s / %s | %s / %s |\n" \
      "$seq" "$warm" "$timed" "$dtype" "$(fmt "$(field "$lt" tokens_per_s_best)" 1)" "$(fmt "$(field "$pt" tokens_per_s_best)" 1)" \
      "$(field "$pt" threads)" "$(ratio "$(field "$lt" tokens_per_s_best)" "$(field "$pt" tokens_per_s_best)")" "$tried" \
      "$(mfu "$(field "$lt" model_gflops_best)" "$peak")" "$(mfu "$(field "$pt" model_gflops_best)" "$peak")" \
      "$(mib "$(field "$lt" vmhwm_kb)")" "$(mib "$(field "$pt" vmhwm_kb)")" \
      "$(fmt "$(field "$lt" step_median_s)" 2)" "$(fmt "$(field "$pt" step_median_s)" 2)"
  done
done
echo
echo "tok/s: best timed step (contention only slows a step down); ratio = lazytrain / PyTorch's best thread count."
echo "MFU = model matmul FLOPs/s of the best step (3 x forward matmul FLOPs per token, attention's full S x S"
echo "included) / the oneDNN matmul peak of the dtype below. step s: median timed step. lazytrain: $THREADS threads."
echo "PyTorch BLAS for f32: $(field "$(best_run "pt_${SEQS%% *}_f32" $TORCH_THREADS)" blas); every run pinned with: ${PIN[*]:-(no taskset)}"
echo
echo "oneDNN matmul peak ($THREADS threads; M x K x N), measured ${#PEAK_RUNS[@]} times:"
echo
print_peak_table
echo "peak (best of all): f32 $PEAK_F32 GFLOP/s, bf16 $PEAK_BF16 GFLOP/s"
echo
echo "command: MODEL=$MODEL BUILD_DIR=$BUILD_DIR SEQS=\"$SEQS\" DTYPES=\"$DTYPES\" THREADS=$THREADS TORCH_THREADS=\"$TORCH_THREADS\" bash bench/run_gpt2.sh"
print_run_footer "runs:"
