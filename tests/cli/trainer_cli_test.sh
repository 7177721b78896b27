#!/usr/bin/env bash
# End-to-end checks of the Trainer's flags through `lazytrain run_mlm`: flags from
# a JSON file, checkpoints (layout, rotation, best model), resuming (explicit,
# automatic on a re-run, exact), --overwrite_output_dir, TensorBoard scalars read
# with the published schema, and one clear error for each bad input, leaving the
# existing checkpoints untouched.
# Usage: trainer_cli_test.sh <lazytrain> <shared data dir> <python3 with protobuf> <proto dir> <protoc>
set -uo pipefail
bin="$1"
data="$2"
python="$3"
proto="$4"
protoc="$5"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() {  # check NAME CONDITION-COMMAND...
  local name="$1"
  shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $name"; fi
}

common=(--tokenizer_name "$data/bert-base-uncased/vocab.txt" --config_name "$data/bert-base-uncased/config.json"
        --config_overrides "hidden_size=32,num_hidden_layers=1,num_attention_heads=2,intermediate_size=37"
        --max_seq_length 32 --train_file "$data/sample-text/sample_text.txt"
        --validation_file "$data/sample-text/sample_text.txt" --per_device_train_batch_size 4
        --per_device_eval_batch_size 8 --logging_steps 2 --do_train --disable_tqdm
        --compile_cache_dir "$work/cache")
train() { "$bin" run_mlm "${common[@]}" "$@" > "$work/stdout" 2> "$work/stderr"; }

# A run with evaluation, checkpoints every 4 steps and a limit of 2.
train --max_steps 12 --evaluation_strategy steps --eval_steps 4 --save_steps 4 --save_total_limit 2 --output_dir "$work/a"
check run_a_exit test $? -eq 0
check two_checkpoints_kept test "$(ls -d "$work"/a/checkpoint-* | xargs -n1 basename | tr '\n' ' ')" = "checkpoint-12 checkpoint-8 "
for f in checkpoint_complete.json config.json model.safetensors optimizer.safetensors scheduler.json rng_state.json \
         data_state.json trainer_state.json training_args.json vocab.txt; do
  check "checkpoint_has_$f" test -s "$work/a/checkpoint-8/$f"
done
check eval_accuracy_reported "$python" -c "
import json, sys
r = json.load(open('$work/a/eval_results.json'))
sys.exit(not (0 <= r['eval_accuracy'] <= 1 and r['eval_samples'] == 33 and 'perplexity' in r))"
check training_args_resolved "$python" -c "
import json, sys
a = json.load(open('$work/a/training_args.json'))
sys.exit(not (a['save_total_limit'] == 2 and a['eval_steps'] == 4 and a['do_eval'] is True and a['lr_scheduler_type'] == 'linear'))"
check log_history_has_grad_norm "$python" -c "
import json, sys
h = json.load(open('$work/a/trainer_state.json'))['log_history']
train = [e for e in h if 'loss' in e]
evals = [e for e in h if 'eval_loss' in e]
# Steps 4, 8, 12 during training, and run_mlm's final evaluate() at 12 again (as Hugging Face logs it).
sys.exit(not (len(train) == 6 and all('grad_norm' in e and 'learning_rate' in e for e in train) and [e['step'] for e in evals] == [4, 8, 12, 12]))"

# Each evaluation during training prints its log line, as Hugging Face's ProgressCallback does
# (the final evaluate() after training prints none: it goes to eval_results.json).
check eval_lines_printed_during_training test "$(grep -c '"eval_loss"' "$work/stderr")" -eq 3

# TensorBoard scalars, through protobuf with the published schema.
"$python" "$(dirname "$0")/tensorboard_scalars.py" "$proto" "$work/a/runs" "$protoc" > "$work/scalars.json" 2> "$work/tb.err"
check tensorboard_parsed test $? -eq 0
check tensorboard_tags "$python" -c "
import json, math, sys
s = json.load(open('$work/scalars.json'))
h = json.load(open('$work/a/trainer_state.json'))['log_history']
want = {'train/loss', 'train/learning_rate', 'train/grad_norm', 'train/tokens_per_second', 'eval/loss', 'eval/accuracy', 'eval/perplexity'}
missing = want - set(s)
assert not missing, missing
assert [p[0] for p in s['train/loss']] == [2, 4, 6, 8, 10, 12], s['train/loss']
assert [p[0] for p in s['eval/loss']] == [4, 8, 12, 12], s['eval/loss']
losses = {e['step']: e['loss'] for e in h if 'loss' in e}
for step, v in s['train/loss']:
    assert abs(v - losses[step]) < 1e-6 * abs(losses[step]), (step, v, losses[step])
evals = {e['step']: e for e in h if 'eval_loss' in e}
for step, v in s['eval/perplexity']:
    assert abs(v - math.exp(evals[step]['eval_loss'])) < 1e-3, (step, v)
for step, v in s['eval/accuracy']:
    assert abs(v - evals[step]['eval_accuracy']) < 1e-6, (step, v)
"

# Resuming: a copy of checkpoint-8 re-run with the same command continues from it
# and ends with the uninterrupted run's weights, byte for byte.
mkdir -p "$work/b" && cp -r "$work/a/checkpoint-8" "$work/b/"
train --max_steps 12 --evaluation_strategy steps --eval_steps 4 --save_steps 4 --save_total_limit 2 --output_dir "$work/b"
check rerun_resumes grep -q "Resuming training from $work/b/checkpoint-8 at step 8" "$work/stderr"
check resumed_weights_identical cmp -s "$work/a/model.safetensors" "$work/b/model.safetensors"
check resumed_eval_loss_identical "$python" -c "
import json, sys
a = json.load(open('$work/a/eval_results.json')); b = json.load(open('$work/b/eval_results.json'))
sys.exit(a['eval_loss'] != b['eval_loss'])"

# --resume_from_checkpoint latest and a path.
mkdir -p "$work/c" && cp -r "$work/a/checkpoint-8" "$work/c/"
train --max_steps 12 --save_steps 4 --output_dir "$work/c" --resume_from_checkpoint latest
check resume_latest grep -q "at step 8" "$work/stderr"
train --max_steps 12 --save_steps 4 --output_dir "$work/c2" --resume_from_checkpoint "$work/a/checkpoint-8"
check resume_path cmp -s "$work/a/model.safetensors" "$work/c2/model.safetensors"

# --overwrite_output_dir deletes nothing (as Hugging Face's): it skips the automatic resume and
# the "not empty" check; the new run's checkpoints sit beside the old ones.
checkpoints() { ls -d "$1"/checkpoint-* | xargs -n1 basename | sort -V | tr '\n' ' '; }
train --max_steps 2 --save_steps 1 --output_dir "$work/c" --overwrite_output_dir
check overwrite_exit test $? -eq 0
check overwrite_does_not_resume test "$(grep -c "Resuming training" "$work/stderr")" -eq 0
check overwrite_keeps_old_checkpoints test "$(checkpoints "$work/c")" = "checkpoint-1 checkpoint-2 checkpoint-8 checkpoint-12 "
# Starting from one of its own checkpoints with a save limit of 1: the limit counts this run's
# checkpoints only (its 1 and 2 replaced the older run's, then rotated away); the older run's
# and the one read stay, unchanged.
cp "$work/c/checkpoint-12/model.safetensors" "$work/source.safetensors"
train --max_steps 3 --save_steps 1 --save_total_limit 1 --model_name_or_path "$work/c/checkpoint-12" --output_dir "$work/c" \
  --overwrite_output_dir
check overwrite_from_own_checkpoint_exit test $? -eq 0
check overwrite_rotation_keeps_the_source_and_the_older_run test "$(checkpoints "$work/c")" = "checkpoint-3 checkpoint-8 checkpoint-12 "
check source_checkpoint_unchanged cmp -s "$work/source.safetensors" "$work/c/checkpoint-12/model.safetensors"
# A run that would save over the checkpoint it starts from is refused before any work.
cp "$work/c/checkpoint-3/model.safetensors" "$work/source3.safetensors"
train --max_steps 3 --save_steps 1 --model_name_or_path "$work/c/checkpoint-3" --output_dir "$work/c" --overwrite_output_dir
check save_over_the_source_refused grep -q "would save checkpoint-3 over '$work/c/checkpoint-3', which it read its starting weights from" \
  "$work/stderr"
check save_over_the_source_left_it cmp -s "$work/source3.safetensors" "$work/c/checkpoint-3/model.safetensors"
# A run that fails at its first step (non-finite weights) deletes and writes no checkpoint.
train --max_steps 1 --save_steps 1 --learning_rate 1e38 --max_grad_norm 0 --output_dir "$work/c" --overwrite_output_dir
check failing_run_exit test $? -ne 0
check failing_run_keeps_checkpoints test "$(checkpoints "$work/c")" = "checkpoint-3 checkpoint-8 checkpoint-12 "
check failing_run_names_the_tensor grep -q "non-finite" "$work/stderr"
# One that fails after saving (at step 2, limit 1) still removes none of the older run's checkpoints.
train --max_steps 4 --save_steps 1 --save_total_limit 1 --learning_rate 1e20 --max_grad_norm 0 --output_dir "$work/c" --overwrite_output_dir
check failing_later_run_exit test $? -ne 0
check failing_later_run_keeps_the_older_run test "$(checkpoints "$work/c" | grep -o 'checkpoint-8 checkpoint-12')" = "checkpoint-8 checkpoint-12"

# load_best_model_at_end: the best checkpoint is never rotated away and its weights end up in the model.
train --max_steps 8 --evaluation_strategy steps --eval_steps 2 --save_steps 2 --save_total_limit 1 --load_best_model_at_end \
  --metric_for_best_model loss --output_dir "$work/best"
check best_run_exit test $? -eq 0
check best_model_loaded grep -q "Loading best model from" "$work/stderr"
check best_kept "$python" -c "
import json, os, sys
s = json.load(open('$work/best/trainer_state.json'))
best = s['best_model_checkpoint']
evals = [e for e in s['log_history'] if 'eval_loss' in e and e['step'] in (2, 4, 6, 8)]
want = min(evals, key=lambda e: e['eval_loss'])['step']
sys.exit(not (best.endswith('checkpoint-%d' % want) and os.path.isdir(best)))"

# Fractional epochs (ceil(0.5 x 9 steps) = 5), --max_train_samples / --max_eval_samples,
# gradient accumulation (2 steps of 2 micro-batches an epoch of 20 examples), and
# --dataloader_drop_last.
train --num_train_epochs 0.5 --save_strategy no --report_to none --output_dir "$work/half"
check fractional_epochs "$python" -c "
import json, sys
sys.exit(json.load(open('$work/half/trainer_state.json'))['global_step'] != 5)"
train --max_train_samples 20 --max_eval_samples 10 --do_eval --gradient_accumulation_steps 2 --num_train_epochs 2 \
  --save_strategy no --report_to none --output_dir "$work/samples"
check max_samples "$python" -c "
import json, sys
t = json.load(open('$work/samples/train_results.json')); e = json.load(open('$work/samples/eval_results.json'))
s = json.load(open('$work/samples/trainer_state.json'))
# 20 examples in batches of 4: 5 micro-batches, 3 optimizer steps an epoch (the last of one).
sys.exit(not (t['train_samples'] == 20 and e['eval_samples'] == 10 and s['global_step'] == 6))"
train --max_train_samples 22 --dataloader_drop_last --num_train_epochs 1 --save_strategy no --report_to none --output_dir "$work/drop"
check drop_last "$python" -c "
import json, sys
sys.exit(json.load(open('$work/drop/trainer_state.json'))['global_step'] != 5)"

# Flags from a JSON file (HfArgumentParser), and a typo in it.
cat > "$work/args.json" <<EOF
{"tokenizer_name": "$data/bert-base-uncased/vocab.txt", "config_name": "$data/bert-base-uncased/config.json",
 "config_overrides": "hidden_size=32,num_hidden_layers=1,num_attention_heads=2,intermediate_size=37",
 "max_seq_length": 32, "train_file": "$data/sample-text/sample_text.txt", "per_device_train_batch_size": 4,
 "max_steps": 3, "learning_rate": 0.002, "do_train": true, "do_eval": false, "save_strategy": "no",
 "report_to": ["none"], "disable_tqdm": true, "output_dir": "$work/json"}
EOF
"$bin" run_mlm "$work/args.json" > "$work/stdout" 2> "$work/stderr"
check json_args_run test $? -eq 0
check json_args_used "$python" -c "
import json, os, sys
a = json.load(open('$work/json/training_args.json'))
sys.exit(not (a['learning_rate'] == 0.002 and a['max_steps'] == 3 and a['report_to'] == ['none'] and not os.path.exists('$work/json/runs')))"

# expect_error NAME EXPECTED ARGS...: one stderr line with EXPECTED, a non-zero
# exit, and $work/a's checkpoints untouched.
expect_error() {
  local name="$1" expected="$2"
  shift 2
  local before
  before=$(cd "$work/a" && find checkpoint-* -type f -exec md5sum {} + | sort)
  "$bin" "$@" > "$work/stdout" 2> "$work/stderr"
  local rc=$?
  local after
  after=$(cd "$work/a" && find checkpoint-* -type f -exec md5sum {} + | sort)
  if [ $rc -ne 0 ] && [ "$(wc -l < "$work/stderr")" -eq 1 ] && grep -qF -- "$expected" "$work/stderr" && [ "$before" = "$after" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name: rc=$rc"
    cat "$work/stderr"
  fi
}
sed 's/"learning_rate"/"lerning_rate"/' "$work/args.json" > "$work/typo.json"
expect_error json_typo "'$work/typo.json': unknown key 'lerning_rate'" run_mlm "$work/typo.json"
expect_error save_steps_zero "--save_steps must be positive, got 0" run_mlm "${common[@]}" --max_steps 2 --save_steps 0 --output_dir "$work/a"
expect_error resume_nowhere "--resume_from_checkpoint '$work/nowhere': not a complete checkpoint: no such directory" \
  run_mlm "${common[@]}" --max_steps 2 --output_dir "$work/a" --resume_from_checkpoint "$work/nowhere"
mkdir -p "$work/unmarked" && cp -r "$work/a/checkpoint-8" "$work/unmarked/" && rm "$work/unmarked/checkpoint-8/checkpoint_complete.json"
expect_error resume_unmarked "no checkpoint_complete.json: the save did not finish" \
  run_mlm "${common[@]}" --max_steps 12 --output_dir "$work/a" --resume_from_checkpoint "$work/unmarked/checkpoint-8"
other=("${common[@]}")
other[5]="hidden_size=32,num_hidden_layers=2,num_attention_heads=2,intermediate_size=37"
expect_error resume_other_config "it was made for another model config: num_hidden_layers 1 (this run: 2)" \
  run_mlm "${other[@]}" --max_steps 12 --output_dir "$work/a" --resume_from_checkpoint "$work/a/checkpoint-8"
expect_error resume_other_batch "it was made with per_device_train_batch_size 4, this run has 2" \
  run_mlm "${common[@]}" --per_device_train_batch_size 2 --max_steps 12 --output_dir "$work/a" --resume_from_checkpoint latest
expect_error resume_latest_none "--resume_from_checkpoint 'latest': no complete checkpoint in --output_dir '$work/json'" \
  run_mlm "${common[@]}" --max_steps 2 --output_dir "$work/json" --resume_from_checkpoint latest
expect_error load_best_mismatch "requires the save and eval strategy to match" \
  run_mlm "${common[@]}" --max_steps 2 --load_best_model_at_end --evaluation_strategy steps --save_strategy epoch --output_dir "$work/x"

expect_error bad_metric "--metric_for_best_model 'acc' is not an evaluation metric" \
  run_mlm "${common[@]}" --max_steps 4 --evaluation_strategy steps --eval_steps 2 --save_steps 2 --load_best_model_at_end \
  --metric_for_best_model acc --output_dir "$work/metric"
check bad_metric_wrote_nothing test ! -e "$work/metric"
expect_error negative_seed "--seed" run_mlm "${common[@]}" --seed -5 --output_dir "$work/x"
expect_error json_then_flags "a JSON file of flags must be the only argument" run_mlm "$work/args.json" --max_steps 5
sed 's/"learning_rate": 0.002/"learning_rate": "abc"/' "$work/args.json" > "$work/abc.json"
expect_error json_bad_number "'$work/abc.json': --learning_rate expects a number, got 'abc' (see --help)" run_mlm "$work/abc.json"
# CLI11's parse errors in the command line's own words, the value the flag keeps (its last) named.
expect_error bad_integer "error: --max_steps expects an integer, got 'abc' (see --help)" \
  run_mlm "${common[@]}" --max_steps 2 --max_steps abc --output_dir "$work/x"
expect_error flag_typo "error: unknown flag --max_step (did you mean --max_steps?) (see --help)" \
  run_mlm "${common[@]}" --max_step 2 --output_dir "$work/x"
expect_error unknown_flag "error: unknown flag --frobnicate (see --help)" run_mlm "${common[@]}" --frobnicate 1 --output_dir "$work/x"
expect_error stray_value "error: unexpected argument '7' (every value follows its flag: --name value)" \
  run_mlm "${common[@]}" --max_steps 2 7 --output_dir "$work/x"
sed 's/"max_steps": 3/"max_steps": true/' "$work/args.json" > "$work/bool.json"
expect_error json_bool_value "key 'max_steps': expected a value, got true" run_mlm "$work/bool.json"

# Other text with as many examples: refused by the training data's CRC32C.
sed 's/\bthe\b/and/g' "$data/sample-text/sample_text.txt" > "$work/other.txt"
expect_error resume_other_text "it was made with train_data_crc32c" \
  run_mlm "${common[@]}" --train_file "$work/other.txt" --max_steps 12 --output_dir "$work/a" --resume_from_checkpoint latest

# A damaged newest checkpoint is skipped with a warning naming it; with none whole, one error.
mkdir -p "$work/d" && cp -r "$work/a/checkpoint-8" "$work/a/checkpoint-12" "$work/d/"
truncate -s 1000 "$work/d/checkpoint-12/optimizer.safetensors"
train --max_steps 12 --save_steps 4 --output_dir "$work/d"
check damaged_newest_warned grep -q "warning: skipping checkpoint '$work/d/checkpoint-12': optimizer.safetensors has 1000 bytes" "$work/stderr"
check damaged_newest_skipped grep -q "Resuming training from $work/d/checkpoint-8 at step 8" "$work/stderr"
mkdir -p "$work/e" && cp -r "$work/a/checkpoint-8" "$work/e/" && truncate -s 10 "$work/e/checkpoint-8/model.safetensors"
train --max_steps 12 --output_dir "$work/e"
check none_whole_is_an_error grep -q "holds checkpoints but none is complete" "$work/stderr"
check none_whole_left_untouched test "$(stat -c %s "$work/e/checkpoint-8/model.safetensors")" = 10

# "resume_from_checkpoint": true in a JSON file means the newest checkpoint.
mkdir -p "$work/f" && cp -r "$work/a/checkpoint-8" "$work/f/"
sed -e 's|"output_dir": "[^"]*"|"output_dir": "'"$work/f"'"|' -e 's/"max_steps": 3/"max_steps": 12, "resume_from_checkpoint": true/' \
  "$work/args.json" > "$work/resume.json"
"$bin" run_mlm "$work/resume.json" > "$work/stdout" 2> "$work/stderr"
check json_resume_true grep -q "Resuming training from $work/f/checkpoint-8 at step 8" "$work/stderr"

# max_steps not a multiple of save_steps: a final checkpoint at max_steps, as Hugging Face saves one.
train --max_steps 5 --save_steps 2 --output_dir "$work/g"
check final_checkpoint_at_max_steps test "$(checkpoints "$work/g")" = "checkpoint-2 checkpoint-4 checkpoint-5 "

# Fewer examples than one batch: one padded batch (training and evaluation), as Hugging Face runs it.
head -c 600 "$data/sample-text/sample_text.txt" > "$work/small.txt"
"$bin" run_mlm "${common[@]}" --train_file "$work/small.txt" --validation_file "$work/small.txt" --per_device_train_batch_size 64 \
  --per_device_eval_batch_size 64 --max_steps 2 --do_eval --output_dir "$work/small" > "$work/stdout" 2> "$work/stderr"
check smaller_than_a_batch_runs test $? -eq 0
check smaller_than_a_batch_counts_every_example "$python" -c "
import json, sys
r = json.load(open('$work/small/eval_results.json'))
sys.exit(not (0 < r['eval_samples'] < 64 and r['eval_loss'] == r['eval_loss']))"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
