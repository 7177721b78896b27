#!/usr/bin/env bash
# `lazytrain run_mlm` in each execution mode and with the diagnostics flags:
#  - --line_by_line --pad_to_multiple_of 32 on WikiText-2 trains with at most
#    4 graphs for --max_seq_length 128 (one a bucket), and --debug_recompiles
#    names the sequence dimension that changed;
#  - the same 4 steps give the same train_loss in lazy, fused_eager and
#    strict_eager mode; --debug_graphs prints a line a step;
#  - --detect_anomaly runs; an unknown mode is one error line.
# Usage: execution_modes_cli_test.sh <lazytrain binary> <shared data dir> <python3>
set -uo pipefail
bin="$1"
data="$2"
python="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
vocab="$data/bert-base-uncased/vocab.txt"
config="$data/bert-base-uncased/config.json"
wiki="$data/wikitext-2/valid.txt"
tiny="hidden_size=32,num_hidden_layers=1,num_attention_heads=2,intermediate_size=37"
passed=0
failed=0
check() {  # check NAME CONDITION_EXIT_CODE
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $1"; cat "$work/stderr" | tail -20; fi
}
common=(--tokenizer_name "$vocab" --config_name "$config" --config_overrides "$tiny" --do_train --disable_tqdm --seed 3
        --report_to none --save_strategy no)

# Bounded dynamic shapes on WikiText-2's lines.
"$bin" run_mlm "${common[@]}" --train_file "$wiki" --line_by_line --max_seq_length 128 --pad_to_multiple_of 32 \
  --per_device_train_batch_size 2 --max_steps 30 --debug_recompiles --output_dir "$work/buckets" > "$work/stdout" 2> "$work/stderr"
rc=$?
graphs=$(sed -n 's/^\[Trainer\] training ran \([0-9]*\) distinct graph.*/\1/p' "$work/stderr")
echo "line_by_line --pad_to_multiple_of 32 --max_seq_length 128, batch 2, 30 steps: ${graphs:-?} training graphs"
[ $rc -eq 0 ] && [ -n "$graphs" ] && [ "$graphs" -ge 2 ] && [ "$graphs" -le 4 ]
check buckets_bound_the_graphs $?
grep -q '^\[recompile\] .*dimension 1 changed from' "$work/stderr"
check debug_recompiles_names_the_sequence_dimension $?

# The same steps in three modes.
for mode in lazy fused_eager strict_eager; do
  "$bin" run_mlm "${common[@]}" --train_file "$data/sample-text/sample_text.txt" --max_seq_length 32 --per_device_train_batch_size 4 \
    --max_steps 4 --execution_mode "$mode" --debug_graphs --output_dir "$work/$mode" > "$work/stdout" 2> "$work/stderr"
  rc=$?
  [ $rc -eq 0 ] && [ "$(grep -c '^\[mark_step [0-9]* on cpu:0\]' "$work/stderr")" -ge 4 ]
  check "mode_$mode" $?
done
"$python" - "$work/lazy/train_results.json" "$work/fused_eager/train_results.json" "$work/strict_eager/train_results.json" <<'PY'
import json, sys
losses = [json.load(open(p))["train_loss"] for p in sys.argv[1:]]
print("train_loss lazy %.6f, fused_eager %.6f, strict_eager %.6f" % tuple(losses))
sys.exit(0 if all(abs(l - losses[0]) <= 1e-4 * abs(losses[0]) for l in losses) else 1)
PY
check same_loss_in_every_mode $?

"$bin" run_mlm "${common[@]}" --train_file "$data/sample-text/sample_text.txt" --max_seq_length 32 --per_device_train_batch_size 4 \
  --max_steps 1 --detect_anomaly --output_dir "$work/anomaly" > "$work/stdout" 2> "$work/stderr"
check detect_anomaly_runs $?

"$bin" run_mlm "${common[@]}" --train_file "$wiki" --execution_mode eager --output_dir "$work/bad" > "$work/stdout" 2> "$work/stderr"
rc=$?
[ $rc -ne 0 ] && grep -q -- "--execution_mode" "$work/stderr" && [ ! -e "$work/bad" ]
check unknown_mode_is_an_error $?

# --pad_to_multiple_of: only for lines of different lengths, and a divisor of --max_seq_length.
one_error() {  # one_error NAME EXPECTED ARGS...: one stderr line holding EXPECTED, non-zero exit, no output dir
  local name="$1" expected="$2"
  shift 2
  rm -rf "$work/bad"
  "$bin" run_mlm "${common[@]}" "$@" --output_dir "$work/bad" > "$work/stdout" 2> "$work/stderr"
  local rc=$?
  [ $rc -ne 0 ] && [ "$(wc -l < "$work/stderr")" -eq 1 ] && grep -qF -- "$expected" "$work/stderr" && [ ! -e "$work/bad" ]
  check "$name" $?
}
one_error multiple_not_dividing "--pad_to_multiple_of 48 does not divide --max_seq_length 128" \
  --train_file "$wiki" --line_by_line --max_seq_length 128 --pad_to_multiple_of 48
one_error multiple_without_line_by_line "--pad_to_multiple_of pads lines of different lengths" \
  --train_file "$wiki" --max_seq_length 128 --pad_to_multiple_of 32
one_error multiple_with_pad_to_max_length "without --pad_to_max_length" \
  --train_file "$wiki" --line_by_line --pad_to_max_length --max_seq_length 128 --pad_to_multiple_of 32
one_error negative_multiple "--pad_to_multiple_of" --train_file "$wiki" --line_by_line --pad_to_multiple_of -1

echo "execution_modes_cli: $passed passed, $failed failed"
[ $failed -eq 0 ]
