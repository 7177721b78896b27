#!/usr/bin/env bash
# The TF/TPU recipe end to end on a small slice of WikiText-2: train_tokenizer,
# make_tfrecords, run_mlm --model_type roberta streaming the shards; and its bad
# input (one error line naming the file, the record or the flag; exit non-zero).
# Usage: roberta_tfrecords_cli_test.sh <lazytrain binary> <shared data dir>
set -uo pipefail
bin="$1"
data="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
head -n 1500 "$data/wikitext-2/valid.txt" > "$work/train.txt"
head -n 600 "$data/wikitext-2/test.txt" > "$work/valid.txt"
passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL $1"; cat "$work/stderr" 2>/dev/null; }

# expect_error NAME EXPECTED ARGS...: non-zero exit, one stderr line containing EXPECTED.
expect_error() {
  local name="$1" expected="$2"
  shift 2
  "$bin" "$@" > "$work/stdout" 2> "$work/stderr"
  local rc=$?
  if [ $rc -ne 0 ] && [ "$(wc -l < "$work/stderr")" -eq 1 ] && grep -qF -- "$expected" "$work/stderr"; then pass; else fail "$name (rc=$rc)"; fi
}

"$bin" train_tokenizer --model_type unigram --vocab_size 600 --input "$work/train.txt" --output_dir "$work/tok" > /dev/null 2> "$work/stderr" &&
  [ -s "$work/tok/spm.model" ] && [ -s "$work/tok/special_tokens_map.json" ] && pass || fail train_tokenizer
"$bin" make_tfrecords --tokenizer "$work/tok" --max_seq_length 64 --shard_size 100 --input "$work/train.txt" \
  --output_dir "$work/shards" --prefix train > /dev/null 2> "$work/stderr" &&
  "$bin" make_tfrecords --tokenizer "$work/tok" --max_seq_length 64 --shard_size 100 --input "$work/valid.txt" \
  --output_dir "$work/shards" --prefix validation > /dev/null 2>> "$work/stderr" &&
  ls "$work/shards"/train-00000-of-*.tfrecord > /dev/null && grep -q '"num_examples"' "$work/shards/train.json" && pass || fail make_tfrecords

roberta=(run_mlm --model_type roberta --tokenizer_name "$work/tok"
         --config_overrides "vocab_size=600,hidden_size=32,num_hidden_layers=1,num_attention_heads=2,intermediate_size=37,max_position_embeddings=66"
         --per_device_train_batch_size 4 --per_device_eval_batch_size 4 --max_steps 4 --logging_steps 2 --disable_tqdm)
"$bin" "${roberta[@]}" --train_tfrecords "$work/shards/train-*.tfrecord" --validation_tfrecords "$work/shards/validation-*.tfrecord" \
  --do_train --do_eval --output_dir "$work/run" > "$work/stdout" 2> "$work/stderr"
rc=$?
ok=1
for f in config.json model.safetensors spm.model train_results.json eval_results.json trainer_state.json metrics_report.txt; do
  [ -s "$work/run/$f" ] || { ok=0; echo "missing $f"; }
done
grep -q '"RobertaForMaskedLM"' "$work/run/config.json" || ok=0
grep -q '"perplexity"' "$work/run/eval_results.json" || ok=0
grep -A1 "Metric: CompileTime" "$work/run/metrics_report.txt" | grep -q "TotalSamples: 2" || { ok=0; echo "CompileTime is not 2 samples"; }
head -c 8192 "$work/run/model.safetensors" | grep -q '"lm_head.bias"' || { ok=0; echo "no lm_head.bias in the checkpoint"; }
[ $rc -eq 0 ] && [ $ok -eq 1 ] && pass || fail "roberta_from_tfrecords (rc=$rc)"

# Streamed shards resume exactly mid-epoch (the examples already trained on are
# read and dropped), and --max_eval_samples limits the evaluation stream.
tf=(--train_tfrecords "$work/shards/train-*.tfrecord" --validation_tfrecords "$work/shards/validation-*.tfrecord"
    --do_train --do_eval --max_steps 6 --save_steps 3 --max_eval_samples 10 --report_to none)
"$bin" "${roberta[@]}" "${tf[@]}" --output_dir "$work/tf_a" > "$work/stdout" 2> "$work/stderr"
rc_a=$?
mkdir -p "$work/tf_b" && cp -r "$work/tf_a/checkpoint-3" "$work/tf_b/"
"$bin" "${roberta[@]}" "${tf[@]}" --output_dir "$work/tf_b" > "$work/stdout" 2> "$work/stderr"
rc_b=$?
[ $rc_a -eq 0 ] && [ $rc_b -eq 0 ] && grep -q "Resuming training from $work/tf_b/checkpoint-3 at step 3" "$work/stderr" &&
  cmp -s "$work/tf_a/model.safetensors" "$work/tf_b/model.safetensors" && grep -q '"eval_samples": 10' "$work/tf_a/eval_results.json" &&
  pass || fail "roberta_tfrecords_resume (rc=$rc_a/$rc_b)"

# RoBERTa from text files, as BERT: every line <s> ... </s> grouped into blocks
# (blank lines too), and --line_by_line padded with <pad>; train and evaluate.
"$bin" "${roberta[@]}" --train_file "$work/train.txt" --validation_file "$work/valid.txt" --max_seq_length 64 \
  --do_train --do_eval --output_dir "$work/run_text" > "$work/stdout" 2> "$work/stderr"
rc=$?
ok=1
for f in config.json model.safetensors spm.model spm.vocab special_tokens_map.json train_results.json eval_results.json all_results.json trainer_state.json; do
  [ -s "$work/run_text/$f" ] || { ok=0; echo "missing $f"; }
done
cmp -s "$work/tok/spm.model" "$work/run_text/spm.model" || { ok=0; echo "spm.model differs from the tokenizer's"; }
grep -q '"RobertaForMaskedLM"' "$work/run_text/config.json" || ok=0
grep -q '"train_loss"' "$work/run_text/all_results.json" && grep -q '"perplexity"' "$work/run_text/all_results.json" || ok=0
grep -A1 "Metric: CompileTime" "$work/run_text/metrics_report.txt" | grep -q "TotalSamples: 2" || { ok=0; echo "CompileTime is not 2 samples"; }
[ $rc -eq 0 ] && [ $ok -eq 1 ] && pass || fail "roberta_from_text_files (rc=$rc)"
"$bin" "${roberta[@]}" --train_file "$work/train.txt" --validation_file "$work/valid.txt" --max_seq_length 64 \
  --line_by_line --pad_to_max_length --do_train --do_eval --output_dir "$work/run_lines" > "$work/stdout" 2> "$work/stderr"
rc=$?
[ $rc -eq 0 ] && grep -q '"perplexity"' "$work/run_lines/eval_results.json" && grep -q '"train_loss"' "$work/run_lines/train_results.json" &&
  pass || fail "roberta_line_by_line (rc=$rc)"
# ... and evaluated again from its own directory.
"$bin" run_mlm --model_type roberta --model_name_or_path "$work/run_text" --validation_file "$work/valid.txt" --max_seq_length 64 \
  --per_device_eval_batch_size 4 --do_eval --disable_tqdm --output_dir "$work/run_text" > "$work/stdout" 2> "$work/stderr"
rc=$?
[ $rc -eq 0 ] && grep -q '"train_loss"' "$work/run_text/all_results.json" && grep -q '"eval_loss"' "$work/run_text/eval_results.json" &&
  pass || fail "roberta_eval_from_model_dir (rc=$rc)"

# SentencePiece on lines longer than its default max_sentence_length (4192 bytes):
# the corpus joined and cut every 6000 characters (ASCII, so every line is 6000 bytes).
LC_ALL=C tr -cd ' -~\n' < "$work/train.txt" | tr '\n' ' ' | fold -w 6000 | head -n -1 > "$work/long.txt"
long_lines=$(wc -l < "$work/long.txt")
"$bin" train_tokenizer --vocab_size 600 --input "$work/long.txt" --output_dir "$work/tok_long" > /dev/null 2> "$work/stderr"
rc=$?
[ $rc -eq 0 ] && [ "$long_lines" -ge 20 ] && [ -s "$work/tok_long/spm.model" ] && ! grep -q "too long" "$work/stderr" &&
  pass || fail "tokenizer_long_lines (rc=$rc, $long_lines lines)"
# An explicit --max_sentence_length below some lines: those are skipped, and said so.
cat "$work/long.txt" "$work/train.txt" > "$work/mixed.txt"
"$bin" train_tokenizer --vocab_size 600 --max_sentence_length 4192 --input "$work/mixed.txt" --output_dir "$work/tok_mixed" \
  > /dev/null 2> "$work/stderr"
rc=$?
[ $rc -eq 0 ] && [ -s "$work/tok_mixed/spm.model" ] &&
  grep -qF "warning: $long_lines of $((long_lines + $(grep -c . "$work/train.txt"))) lines were skipped as longer than --max_sentence_length 4192 bytes (the longest has 6000); pass --max_sentence_length 6000" "$work/stderr" &&
  pass || fail "tokenizer_some_lines_skipped (rc=$rc)"

# Bad input.
printf 'fine\n\xff\xfe bad\n' > "$work/latin1.txt"
expect_error shards_do_not_match "no file matches '$work/shards/nothing-*.tfrecord'" \
  "${roberta[@]}" --train_tfrecords "$work/shards/nothing-*.tfrecord" --do_train --output_dir "$work/out1"
expect_error both_inputs "give --train_file or --train_tfrecords, not both" \
  "${roberta[@]}" --train_file "$work/train.txt" --train_tfrecords "$work/shards/train-*.tfrecord" --do_train --output_dir "$work/out2"
cp "$work/shards/train-00000-of-"*.tfrecord "$work/damaged.tfrecord"
printf '\x55' | dd of="$work/damaged.tfrecord" bs=1 seek=200 conv=notrunc 2> /dev/null
expect_error damaged_shard "'$work/damaged.tfrecord': record" \
  "${roberta[@]}" --train_tfrecords "$work/damaged.tfrecord" --do_train --output_dir "$work/out3"
expect_error seq_len_mismatch "--max_seq_length 32 differs from the 64-token examples" \
  "${roberta[@]}" --train_tfrecords "$work/shards/train-*.tfrecord" --max_seq_length 32 --do_train --output_dir "$work/out7"
expect_error wordpiece_vocab_for_roberta "a WordPiece vocab.txt is for --model_type bert" \
  make_tfrecords --tokenizer "$data/bert-base-uncased/vocab.txt" --input "$work/train.txt" --output_dir "$work/out8"
expect_error tokenizer_input_not_utf8 "'$work/latin1.txt' line 2 is not valid UTF-8" \
  train_tokenizer --vocab_size 400 --input "$work/latin1.txt" --output_dir "$work/out9"
expect_error tokenizer_missing "no model at '$work/none'" \
  make_tfrecords --tokenizer "$work/none" --input "$work/train.txt" --output_dir "$work/out4"
expect_error not_utf8 "'$work/latin1.txt' line 2 is not valid UTF-8" \
  make_tfrecords --tokenizer "$work/tok" --input "$work/latin1.txt" --output_dir "$work/out5"
expect_error vocab_too_large "Vocabulary size" \
  train_tokenizer --vocab_size 500000 --input "$work/train.txt" --output_dir "$work/out6"
expect_error every_line_too_long "every line of $work/long.txt that holds text is longer than --max_sentence_length 4192 bytes (the longest has 6000), so none is left to train on; pass --max_sentence_length 6000" \
  train_tokenizer --vocab_size 600 --max_sentence_length 4192 --input "$work/long.txt" --output_dir "$work/out10"

printf '   \n\t\n' > "$work/blank.txt"
expect_error tokenizer_blank_input "holds no text to train on: every line is blank" \
  train_tokenizer --vocab_size 400 --input "$work/blank.txt" --output_dir "$work/out11"

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
