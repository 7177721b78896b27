#!/usr/bin/env bash
# Results do not depend on the number of threads a step ran on (issue 30): the
# same command gives the same model.safetensors byte for byte
#  1. at --num_threads 1 and 2, with oneDNN's native kernels and capped at AVX2
#     (LAZYTRAIN_KERNEL_ISA=avx2, whose gemm once split its sums by thread count);
#  2. with the default thread count, which the thread governor lowers while a
#     competing busy loop holds a CPU, killed mid-run and resumed, against an
#     uninterrupted run on a quiet machine.
# Usage: thread_independence_test.sh <lazytrain> <shared data dir>
set -uo pipefail
bin="$1"
data="$2"
work="$(mktemp -d)"
busy=()
cleanup() {
  for p in "${busy[@]}"; do kill "$p" 2> /dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
unset OMP_NUM_THREADS  # ctest's one thread per test would switch the governor off
passed=0
failed=0
check() {  # check NAME CONDITION-COMMAND...
  local name="$1"
  shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $name"; fi
}
args=(run_mlm --tokenizer_name "$data/bert-base-uncased/vocab.txt" --config_name "$data/bert-base-uncased/config.json"
      --config_overrides "hidden_size=32,num_hidden_layers=1,num_attention_heads=2,intermediate_size=37"
      --max_seq_length 64 --train_file "$data/wikitext-2/valid.txt" --max_train_samples 400 --per_device_train_batch_size 8
      --max_steps 40 --logging_steps 10 --seed 42 --do_train --disable_tqdm --report_to none --compile_cache_dir "$work/cache")

for isa in auto avx2; do
  for threads in 1 2; do
    LAZYTRAIN_KERNEL_ISA=$isa "$bin" "${args[@]}" --save_strategy no --num_threads "$threads" --output_dir "$work/$isa-$threads" \
      > "$work/$isa-$threads.log" 2>&1 || { echo "FAIL: the $isa run at $threads threads"; cat "$work/$isa-$threads.log"; exit 1; }
  done
  check "same_model_at_1_and_2_threads_$isa" cmp -s "$work/$isa-1/model.safetensors" "$work/$isa-2/model.safetensors"
done

# Governed threads under load, killed and resumed (AVX2 kernels: where the counts mattered).
export LAZYTRAIN_KERNEL_ISA=avx2
"$bin" "${args[@]}" --save_steps 5 --output_dir "$work/quiet" > "$work/quiet.log" 2>&1 || { echo "FAIL: the quiet run"; cat "$work/quiet.log"; exit 1; }
# A busy loop on a CPU for the rest of the test (ended by the trap, and by itself after 10 minutes).
timeout 600 bash -c 'while :; do :; done' &
busy+=($!)
"$bin" "${args[@]}" --save_steps 5 --output_dir "$work/loaded" > "$work/loaded1.log" 2>&1 &
pid=$!
# Killed once it has saved a checkpoint (at most 5 minutes).
for ((i = 0; i < 3000; i++)); do
  compgen -G "$work/loaded/checkpoint-*/checkpoint_complete.json" > /dev/null && break
  sleep 0.1
done
kill -9 "$pid" 2> /dev/null
wait "$pid" 2> /dev/null
check killed_after_a_checkpoint compgen -G "$work/loaded/checkpoint-*/checkpoint_complete.json" > /dev/null
"$bin" "${args[@]}" --save_steps 5 --output_dir "$work/loaded" > "$work/loaded2.log" 2>&1
check resumed_run_exit test $? -eq 0
check resumed grep -q "Resuming training from" "$work/loaded2.log"
grep -A1 "ExecutionThreadsReduced" "$work/loaded/metrics_report.txt" | sed -n "s/^ *Value: /governor lowered the threads under load (times): /p"
check loaded_and_resumed_equals_quiet cmp -s "$work/quiet/model.safetensors" "$work/loaded/model.safetensors"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
