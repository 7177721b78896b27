#!/usr/bin/env bash
# `lazytrain run_clm` end to end on WikiText-2 with GPT-2's tokenizer and a tiny
# GPT-2: Hugging Face's output files (config.json of a GPT-2, model.safetensors
# with its parameter names), eval_loss, perplexity and next-token accuracy,
# one training graph; the saved model evaluates alike when loaded again; bad
# flags are one error line.
# Usage: run_clm_cli_test.sh <lazytrain binary> <shared data dir> <python3>
set -uo pipefail
bin="$1"
data="$2"
python="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() {
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $1"; tail -5 "$work/stderr"; fi
}
tiny="n_embd=32,n_layer=1,n_head=2,n_positions=64"
common=(--tokenizer_name "$data/gpt2" --config_overrides "$tiny" --block_size 32 --disable_tqdm --report_to none --seed 42)

"$bin" run_clm "${common[@]}" --train_file "$data/wikitext-2/valid.txt" --validation_file "$data/wikitext-2/test.txt" \
  --do_train --do_eval --max_train_samples 64 --max_eval_samples 16 --per_device_train_batch_size 4 --per_device_eval_batch_size 4 \
  --max_steps 6 --learning_rate 1e-3 --output_dir "$work/out" > "$work/stdout" 2> "$work/stderr"
rc=$?
[ $rc -eq 0 ] && grep -q '^\[Trainer\] training ran 1 distinct graph' "$work/stderr" &&
  "$python" - "$work/out" <<'PY'
import json, math, struct, sys
out = sys.argv[1]
config = json.load(open(out + "/config.json"))
assert config["model_type"] == "gpt2" and config["n_embd"] == 32 and config["architectures"] == ["GPT2LMHeadModel"], config
with open(out + "/model.safetensors", "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
assert "transformer.wte.weight" in header and "transformer.h.0.attn.c_attn.weight" in header, sorted(header)
assert header["transformer.h.0.attn.c_attn.weight"]["shape"] == [32, 96], header["transformer.h.0.attn.c_attn.weight"]
ev = json.load(open(out + "/eval_results.json"))
assert abs(ev["perplexity"] - math.exp(ev["eval_loss"])) < 1e-6 * ev["perplexity"], ev
assert 0 <= ev["eval_accuracy"] <= 1 and ev["eval_samples"] == 16, ev
assert ev["eval_loss"] < math.log(50257), ev  # it learned something in 6 steps
print("run_clm tiny GPT-2: eval_loss %.4f, perplexity %.1f, eval_accuracy %.4f" % (ev["eval_loss"], ev["perplexity"], ev["eval_accuracy"]))
PY
check train_and_evaluate $?

# --gradient_checkpointing: GPT-2's blocks recomputed in backward give the same losses.
"$bin" run_clm "${common[@]}" --train_file "$data/wikitext-2/valid.txt" --validation_file "$data/wikitext-2/test.txt" \
  --do_train --do_eval --max_train_samples 64 --max_eval_samples 16 --per_device_train_batch_size 4 --per_device_eval_batch_size 4 \
  --max_steps 6 --learning_rate 1e-3 --gradient_checkpointing --output_dir "$work/out_gc" > "$work/stdout" 2> "$work/stderr"
rc=$?
[ $rc -eq 0 ] && grep -q '^\[Trainer\] training ran 1 distinct graph' "$work/stderr" &&
  "$python" - "$work/out" "$work/out_gc" <<'PY'
import json, sys
plain, gc = (json.load(open(d + "/all_results.json")) for d in sys.argv[1:3])
for key in ("train_loss", "eval_loss"):
    assert abs(plain[key] - gc[key]) <= 1e-5 * plain[key], (key, plain[key], gc[key])
PY
check gradient_checkpointing $?

"$bin" run_clm --tokenizer_name "$data/gpt2" --block_size 32 --disable_tqdm --report_to none --model_name_or_path "$work/out" \
  --validation_file "$data/wikitext-2/test.txt" --do_eval --max_eval_samples 16 --per_device_eval_batch_size 4 \
  --output_dir "$work/eval" > "$work/stdout" 2> "$work/stderr" &&
  "$python" - "$work/out/eval_results.json" "$work/eval/eval_results.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["eval_loss"] for p in sys.argv[1:3])
assert abs(a - b) < 1e-5 * abs(a), (a, b)
PY
check saved_model_evaluates_alike $?

one_error() {  # one_error NAME EXPECTED ARGS...
  local name="$1" expected="$2"
  shift 2
  rm -rf "$work/bad"
  "$bin" run_clm "$@" --output_dir "$work/bad" > "$work/stdout" 2> "$work/stderr"
  local rc=$?
  [ $rc -ne 0 ] && [ "$(wc -l < "$work/stderr")" -eq 1 ] && grep -qF -- "$expected" "$work/stderr" && [ ! -e "$work/bad" ]
  check "$name" $?
}
one_error block_too_long "--block_size 128 must be in [2, n_positions = 64]" \
  "${common[@]}" --block_size 128 --train_file "$data/wikitext-2/valid.txt" --do_train
one_error no_tokenizer "--tokenizer_name is required" --config_overrides "$tiny" --train_file "$data/wikitext-2/valid.txt" --do_train
one_error bert_vocab_as_tokenizer "vocab.json" "${common[@]}" --tokenizer_name "$data/bert-base-uncased" --train_file "$data/wikitext-2/valid.txt" --do_train

one_error overrides_with_a_model "--config_overrides can't be used in combination with --config_name or --model_name_or_path" \
  "${common[@]}" --model_name_or_path "$work/out" --validation_file "$data/wikitext-2/test.txt" --do_eval
one_error negative_samples "--max_train_samples must be at least 1, got -1" \
  "${common[@]}" --train_file "$data/wikitext-2/valid.txt" --do_train --max_train_samples -1

# CRLF text reads as Python's text mode does: the same blocks as with "\n".
printf 'a b\r\nc d\r\n%.0s' $(seq 1 40) > "$work/crlf.txt"
tr -d '\r' < "$work/crlf.txt" > "$work/lf.txt"
for f in crlf lf; do
  "$bin" run_clm "${common[@]}" --train_file "$work/$f.txt" --do_train --max_steps 1 --per_device_train_batch_size 1 \
    --output_dir "$work/run_$f" > "$work/stdout" 2> "$work/stderr"
done
"$python" - "$work/run_crlf/train_results.json" "$work/run_lf/train_results.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["train_samples"] for p in sys.argv[1:3])
assert a == b and a > 0, (a, b)
PY
check crlf_reads_as_lf $?

# --no_keep_linebreaks: the breaks are not tokenized, so the text gives fewer tokens and blocks.
for keep in keep drop; do
  flag=(); [ $keep = drop ] && flag=(--no_keep_linebreaks)
  "$bin" run_clm "${common[@]}" --train_file "$data/sample-text/sample_text.txt" --do_train --max_steps 1 "${flag[@]}" \
    --output_dir "$work/lines_$keep" > "$work/stdout" 2> "$work/stderr"
done
"$python" - "$work/lines_keep/train_results.json" "$work/lines_drop/train_results.json" <<'PY'
import json, sys
keep, drop = (json.load(open(p))["train_samples"] for p in sys.argv[1:3])
assert keep > drop > 0, (keep, drop)
print(f"sample_text.txt in blocks of 32: {keep} keeping the line breaks, {drop} without")
PY
check no_keep_linebreaks_drops_the_breaks $?

# TFRecord shards of GPT-2 blocks (make_tfrecords with the GPT-2 tokenizer) train and evaluate:
# every block of the shards is evaluated (the last one padded, its padding without labels).
"$bin" make_tfrecords --tokenizer "$data/gpt2" --max_seq_length 32 --shard_size 200 --input "$data/sample-text/sample_text.txt" \
  --output_dir "$work/shards" > "$work/stdout" 2> "$work/stderr" &&
  "$bin" run_clm "${common[@]}" --block_size 32 --train_tfrecords "$work/shards/data-*.tfrecord" --validation_tfrecords "$work/shards/data-*.tfrecord" \
    --do_train --do_eval --max_steps 2 --per_device_train_batch_size 2 --per_device_eval_batch_size 2 \
    --output_dir "$work/from_shards" > "$work/stdout" 2> "$work/stderr" &&
  "$python" - "$work/from_shards/eval_results.json" "$work/shards/data.json" <<'PY'
import json, math, sys
ev = json.load(open(sys.argv[1]))
shards = json.load(open(sys.argv[2]))
assert shards["max_seq_length"] == 32 and ev["eval_samples"] == shards["num_examples"], (ev, shards)
assert math.isfinite(ev["eval_loss"]) and abs(ev["perplexity"] - math.exp(ev["eval_loss"])) < 1e-6 * ev["perplexity"], ev
PY
check tfrecord_shards_train_and_evaluate $?
rm -rf "$work/bad"
"$bin" run_clm "${common[@]}" --block_size 64 --train_tfrecords "$work/shards/data-*.tfrecord" --do_train --output_dir "$work/bad" \
  > "$work/stdout" 2> "$work/stderr"
[ $? -ne 0 ] && grep -qF "holds blocks of 32 tokens, not --block_size 64" "$work/stderr" && [ ! -e "$work/bad" ]
check tfrecord_block_size_mismatch $?

echo "run_clm_cli: $passed passed, $failed failed"
[ $failed -eq 0 ]
