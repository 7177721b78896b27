#!/usr/bin/env bash
# The BERT training step on every kernel ISA path this CPU can take (issue 33,
# item 5): LAZYTRAIN_KERNEL_ISA=avx2 (generated kernels 8 lanes wide, oneDNN
# capped at AVX2, so a bf16 dot is widened to f32: what an AVX2-only CPU such
# as AMD Zen 3 runs) and, where the CPU has AVX-512, avx512 (oneDNN's native
# bf16 with AVX512_BF16 or AMX; widened again on plain AVX-512, such as Ice
# Lake, where oneDNN's bf16 kernels emulate). f32 and bf16 on each, in one run, and the
# bf16/f32 speed ratio per path: below 1 means --bf16 is slower there, which is
# what the start-up note says on such a CPU.
#
#   bash bench/isa_paths.sh                 # bert-mini
#   MODEL=bert-base STEPS="1 2" bash bench/isa_paths.sh
#
# Environment: BUILD_DIR [build], MODEL [bert-mini], STEPS ["2 5"] (warm-up, timed),
# THREADS [2] (OMP_NUM_THREADS).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
MODEL=${MODEL:-bert-mini}
read -r WARMUP TIMED <<<"${STEPS:-2 5}"
THREADS=${THREADS:-2}
BENCH=$BUILD_DIR/bench/bench_bert_train
[ -x "$BENCH" ] || cmake --build "$BUILD_DIR" --target bench_bert_train >/dev/null

PATHS_=(avx2)
grep -qw avx512f /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo && PATHS_+=(avx512)
native_bf16=$(grep -qw -e avx512_bf16 -e amx_bf16 /proc/cpuinfo && echo yes || echo no)

field() { grep '^RESULT' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
echo "### BERT ($MODEL) training step per kernel ISA path, $THREADS threads"
echo "CPU: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1); native bf16 (AVX512_BF16 or AMX): $native_bf16; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| path | f32 tokens/s (best step) | bf16 tokens/s (best step) | bf16 / f32 | bf16 note |"
echo "|---|---|---|---|---|"
log=$(mktemp -d /tmp/lazytrain-isa.XXXXXX)
for isa in "${PATHS_[@]}"; do
  for dtype in f32 bf16; do
    flag=(); [ "$dtype" = bf16 ] && flag=(--bf16)
    LAZYTRAIN_KERNEL_ISA=$isa OMP_NUM_THREADS=$THREADS "$BENCH" --model "$MODEL" --warmup "$WARMUP" --steps "$TIMED" --no_roofline "${flag[@]}" \
      >"$log/$isa-$dtype.log" 2>&1 || { echo "| $isa | run failed: $log/$isa-$dtype.log |"; continue 2; }
  done
  f32=$(field "$log/$isa-f32.log" tokens_per_s_best)
  bf16=$(field "$log/$isa-bf16.log" tokens_per_s_best)
  note=$(grep -q "no native bf16 matmul" "$log/$isa-bf16.log" && echo "widened; note printed" || echo "native")
  echo "| $isa | $f32 | $bf16 | $(awk -v a="$bf16" -v b="$f32" 'BEGIN{printf "%.2f", a/b}') | $note |"
done
echo
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg); logs in $log"
