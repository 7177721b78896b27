#!/usr/bin/env bash
# End-to-end checks of `lazytrain run_mlm`: bad input gets one clear error line, a
# non-zero exit and nothing written to --output_dir; a tiny run writes Hugging
# Face's files and compiles its training step once.
# Usage: run_mlm_cli_test.sh <lazytrain binary> <shared data dir>
set -uo pipefail
bin="$1"
data="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
vocab="$data/bert-base-uncased/vocab.txt"
config="$data/bert-base-uncased/config.json"
text="$data/sample-text/sample_text.txt"
tiny="hidden_size=32,num_hidden_layers=1,num_attention_heads=2,intermediate_size=37"
passed=0
failed=0

# expect_error NAME EXPECTED_SUBSTRING ARGS...: fails unless the run exits non-zero
# with exactly one stderr line containing the substring, leaving $work/out absent.
expect_error() {
  local name="$1" expected="$2"
  shift 2
  rm -rf "$work/out"
  "$bin" run_mlm "$@" > "$work/stdout" 2> "$work/stderr"
  local rc=$?
  local lines
  lines=$(wc -l < "$work/stderr")
  if [ $rc -ne 0 ] && [ "$lines" -eq 1 ] && grep -qF -- "$expected" "$work/stderr" && [ ! -e "$work/out" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name: rc=$rc lines=$lines out_exists=$([ -e "$work/out" ] && echo yes || echo no)"
    cat "$work/stderr"
  fi
}

common=(--tokenizer_name "$vocab" --config_name "$config" --config_overrides "$tiny" --max_seq_length 32
        --per_device_train_batch_size 2 --max_steps 2 --do_train --disable_tqdm)

expect_error missing_train_file "--train_file '$work/nope.txt' does not exist" \
  "${common[@]}" --train_file "$work/nope.txt" --output_dir "$work/out"
expect_error missing_vocabulary "cannot open vocabulary" \
  --train_file "$text" --tokenizer_name "$work/no-vocab.txt" --config_name "$config" --do_train --output_dir "$work/out"
expect_error unknown_override "key hidden_sise isn't in the original config dict" \
  "${common[@]}" --config_overrides "hidden_sise=32" --train_file "$text" --output_dir "$work/out"
expect_error seq_too_long "--max_seq_length 1024 is larger than the model's max_position_embeddings 512" \
  "${common[@]}" --max_seq_length 1024 --train_file "$text" --output_dir "$work/out"
: > "$work/empty.txt"
expect_error empty_file "empty.txt" "${common[@]}" --train_file "$work/empty.txt" --output_dir "$work/out"
printf 'valid line\n\xff\xfe broken\n' > "$work/latin1.txt"
expect_error not_utf8 "UTF-8" "${common[@]}" --train_file "$work/latin1.txt" --output_dir "$work/out"
expect_error bad_config "is not valid JSON" \
  --tokenizer_name "$vocab" --config_name "$work/latin1.txt" --train_file "$text" --do_train --output_dir "$work/out"

expect_error output_dir_not_creatable "cannot be created" \
  "${common[@]}" --train_file "$text" --output_dir "$work/latin1.txt/sub"
# An evaluation batch larger than the data: one batch of every example, as Hugging Face runs it.
"$bin" run_mlm "${common[@]}" --train_file "$text" --validation_file "$text" --do_eval --per_device_eval_batch_size 100000 \
  --max_steps 1 --output_dir "$work/big_eval_batch" > /dev/null 2> "$work/stderr"
rc=$?
if [ $rc -eq 0 ] && grep -q -- "--per_device_eval_batch_size 100000 is more than the .* examples there are" "$work/stderr" &&
   grep -q '"eval_loss"' "$work/big_eval_batch/eval_results.json"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL eval_batch_larger_than_data: rc=$rc"; cat "$work/stderr"
fi
expect_error huge_epochs "--num_train_epochs" \
  --tokenizer_name "$vocab" --config_name "$config" --config_overrides "$tiny" --max_seq_length 32 \
  --per_device_train_batch_size 2 --num_train_epochs 1e30 --do_train --train_file "$text" --output_dir "$work/out"
expect_error zero_mlm_probability "--mlm_probability must be in (0, 1]" \
  "${common[@]}" --mlm_probability 0 --train_file "$text" --output_dir "$work/out"
expect_error nonpositive_seq_length "--max_seq_length must be at least 2" "${common[@]}" --max_seq_length 0 --train_file "$text" --output_dir "$work/out"
expect_error heads_not_dividing "is not a multiple of the number of attention heads" \
  "${common[@]}" --config_overrides "hidden_size=30,num_attention_heads=4" --train_file "$text" --output_dir "$work/out"
expect_error directory_as_train_file "is a directory" "${common[@]}" --train_file "$work" --output_dir "$work/out"

# An existing non-empty output directory without --overwrite_output_dir: untouched.
mkdir -p "$work/existing" && echo keep > "$work/existing/notes.txt"
"$bin" run_mlm "${common[@]}" --train_file "$text" --output_dir "$work/existing" > /dev/null 2> "$work/stderr"
rc=$?
if [ $rc -ne 0 ] && grep -q "already exists and is not empty. Use --overwrite_output_dir" "$work/stderr" &&
   [ "$(ls "$work/existing")" = "notes.txt" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL existing_output_dir: rc=$rc"; cat "$work/stderr"
fi

# A tiny real run: files as Hugging Face writes them; the step compiles once.
"$bin" run_mlm "${common[@]}" --max_steps 4 --logging_steps 2 --train_file "$text" --validation_file "$text" \
  --do_eval --per_device_eval_batch_size 2 --output_dir "$work/run" > "$work/stdout" 2> "$work/stderr"
rc=$?
ok=1
for f in config.json model.safetensors vocab.txt train_results.json eval_results.json all_results.json trainer_state.json metrics_report.txt; do
  [ -s "$work/run/$f" ] || { ok=0; echo "missing $f"; }
done
grep -q '"perplexity"' "$work/run/eval_results.json" || ok=0
grep -q '"train_loss"' "$work/run/train_results.json" || ok=0
# 2 graphs: the training step and the evaluation step; every other step hits the cache.
grep -A1 "Metric: CompileTime" "$work/run/metrics_report.txt" | grep -q "TotalSamples: 2" || { ok=0; echo "CompileTime is not 2 samples"; }
cached=$(grep -A1 "Counter: CachedCompile" "$work/run/metrics_report.txt" | sed -n 's/.*Value: //p')
steps=$(grep -A1 "Counter: MarkStep" "$work/run/metrics_report.txt" | sed -n 's/.*Value: //p')
[ -n "$cached" ] && [ "$cached" -eq $((steps - 2)) ] || { ok=0; echo "CachedCompile ($cached) is not MarkStep ($steps) - 2"; }
ls "$work/run" | grep -q "\.tmp\." && { ok=0; echo "temporary file left behind"; }
if [ $rc -eq 0 ] && [ $ok -eq 1 ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL tiny_run: rc=$rc"; cat "$work/stderr"; cat "$work/run/metrics_report.txt" 2>/dev/null
fi

# The same tiny run with --bf16: trains, keeps f32 master weights (the checkpoint
# holds F32 tensors only) and lands near the f32 run's training loss.
"$bin" run_mlm "${common[@]}" --max_steps 4 --logging_steps 2 --train_file "$text" --validation_file "$text" \
  --do_eval --per_device_eval_batch_size 2 --bf16 --output_dir "$work/run_bf16" > /dev/null 2> "$work/stderr"
rc=$?
loss_f32=$(sed -n 's/.*"train_loss": *\([0-9.eE+-]*\).*/\1/p' "$work/run/train_results.json")
loss_bf16=$(sed -n 's/.*"train_loss": *\([0-9.eE+-]*\).*/\1/p' "$work/run_bf16/train_results.json" 2>/dev/null)
header=$(head -c 4096 "$work/run_bf16/model.safetensors" 2>/dev/null | tr -d '\0')
# The start-up note that bf16 is slower than f32 here: once exactly where the CPU has no bf16
# instructions (oneDNN's bf16 kernels need AVX512_BF16 or AMX; plain AVX-512 ones emulate them),
# or ONEDNN_MAX_CPU_ISA caps oneDNN; never elsewhere.
# oneDNN reads ONEDNN_MAX_CPU_ISA, or DNNL_MAX_CPU_ISA in its absence; a cap at or above
# AVX512_CORE_BF16 (or ALL) leaves the bf16 instructions on.
isa_cap=${ONEDNN_MAX_CPU_ISA:-${DNNL_MAX_CPU_ISA:-ALL}}
notes_expected=1
case ${isa_cap^^} in ALL | AVX512_CORE_BF16 | AVX512_CORE_AMX) uncapped=1 ;; *) uncapped=0 ;; esac
if grep -q -w -E 'avx512_bf16|amx_bf16' /proc/cpuinfo && [ $uncapped = 1 ] && [ "${LAZYTRAIN_KERNEL_ISA:-}" != avx2 ]; then
  notes_expected=0
fi
notes=$(grep -c "no native bf16 matmul" "$work/stderr")
if [ $rc -eq 0 ] && [ -n "$loss_bf16" ] && awk -v a="$loss_f32" -v b="$loss_bf16" 'BEGIN{d=a-b; if (d<0) d=-d; exit !(d < 0.05*a)}' &&
   echo "$header" | grep -q '"F32"' && ! echo "$header" | grep -q '"BF16"' && [ "$notes" -eq "$notes_expected" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL bf16_run: rc=$rc train_loss f32=$loss_f32 bf16=$loss_bf16 notes=$notes (want $notes_expected)"; cat "$work/stderr"
fi

# The bf16 run as on a CPU without AVX-512 (oneDNN capped at AVX2, AVX2 kernels):
# it runs, says once that bf16 has no native matmul here, and lands on the
# native bf16 run's loss (the same bf16 products, summed in f32 in another order).
ONEDNN_MAX_CPU_ISA=AVX2 LAZYTRAIN_KERNEL_ISA=avx2 "$bin" run_mlm "${common[@]}" --max_steps 4 --logging_steps 2 --train_file "$text" \
  --validation_file "$text" --do_eval --per_device_eval_batch_size 2 --bf16 --output_dir "$work/run_bf16_avx2" > /dev/null 2> "$work/stderr"
rc=$?
loss_avx2=$(sed -n 's/.*"train_loss": *\([0-9.eE+-]*\).*/\1/p' "$work/run_bf16_avx2/train_results.json" 2>/dev/null)
if [ $rc -eq 0 ] && [ -n "$loss_avx2" ] && awk -v a="$loss_bf16" -v b="$loss_avx2" 'BEGIN{d=a-b; if (d<0) d=-d; exit !(d < 0.005*a)}' &&
   [ "$(grep -c "no native bf16 matmul" "$work/stderr")" -eq 1 ] && ! grep -qi "primitive descriptor" "$work/stderr"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL bf16_avx2_run: rc=$rc train_loss bf16=$loss_bf16 avx2=$loss_avx2"; cat "$work/stderr"
fi

# --gradient_checkpointing: the same training and evaluation losses as the tiny
# run (the layers are recomputed in backward, dropout masks replayed), one
# training graph still, and the flag lands in training_args.json.
"$bin" run_mlm "${common[@]}" --max_steps 4 --logging_steps 2 --train_file "$text" --validation_file "$text" \
  --do_eval --per_device_eval_batch_size 2 --gradient_checkpointing --output_dir "$work/run_gc" > /dev/null 2> "$work/stderr"
rc=$?
loss_gc=$(sed -n 's/.*"train_loss": *\([0-9.eE+-]*\).*/\1/p' "$work/run_gc/train_results.json" 2>/dev/null)
eval_f32=$(sed -n 's/.*"eval_loss": *\([0-9.eE+-]*\).*/\1/p' "$work/run/eval_results.json")
eval_gc=$(sed -n 's/.*"eval_loss": *\([0-9.eE+-]*\).*/\1/p' "$work/run_gc/eval_results.json" 2>/dev/null)
close() { awk -v a="$1" -v b="$2" 'BEGIN{d=a-b; if (d<0) d=-d; exit !(a != "" && b != "" && d <= 1e-5*a)}'; }
if [ $rc -eq 0 ] && close "$loss_f32" "$loss_gc" && close "$eval_f32" "$eval_gc" &&
   grep -A1 "Metric: CompileTime" "$work/run_gc/metrics_report.txt" | grep -q "TotalSamples: 2" &&
   grep -q '"gradient_checkpointing": true' "$work/run_gc/training_args.json"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL gradient_checkpointing: rc=$rc train_loss $loss_f32 vs $loss_gc, eval_loss $eval_f32 vs $eval_gc"; cat "$work/stderr"
fi

# Resume from the tiny run's model: evaluation only, with the trained weights.
"$bin" run_mlm --model_name_or_path "$work/run" --validation_file "$text" --do_eval --max_seq_length 32 \
  --per_device_eval_batch_size 2 --disable_tqdm --output_dir "$work/eval" > /dev/null 2> "$work/stderr"
rc=$?
if [ $rc -eq 0 ] && grep -q '"eval_loss"' "$work/eval/eval_results.json" && ! grep -q "randomly initialised" "$work/stderr"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL model_name_or_path: rc=$rc"; cat "$work/stderr"
fi

# Evaluation of the trained model in its own directory (no --overwrite_output_dir,
# as Hugging Face checks the output directory only when training): the model,
# train_results.json and trainer_state.json stay as training left them, and
# all_results.json keeps the train_* entries beside the new eval_* ones.
mkdir -p "$work/before"
cp "$work/run/model.safetensors" "$work/run/config.json" "$work/run/vocab.txt" "$work/run/train_results.json" \
   "$work/run/trainer_state.json" "$work/before/"
"$bin" run_mlm --model_name_or_path "$work/run" --validation_file "$text" --do_eval --max_seq_length 32 \
  --per_device_eval_batch_size 2 --disable_tqdm --output_dir "$work/run" > /dev/null 2> "$work/stderr"
rc=$?
ok=1
for f in model.safetensors config.json vocab.txt train_results.json trainer_state.json; do
  cmp -s "$work/before/$f" "$work/run/$f" || { ok=0; echo "$f changed"; }
done
train_loss=$(sed -n 's/.*"train_loss": *\([0-9.eE+-]*\).*/\1/p' "$work/run/train_results.json")
eval_loss=$(sed -n 's/.*"eval_loss": *\([0-9.eE+-]*\).*/\1/p' "$work/run/eval_results.json")
[ -n "$train_loss" ] && grep -q "\"train_loss\": $train_loss" "$work/run/all_results.json" || { ok=0; echo "all_results.json lost train_loss"; }
[ -n "$eval_loss" ] && grep -q "\"eval_loss\": $eval_loss" "$work/run/all_results.json" || { ok=0; echo "all_results.json lacks the new eval_loss"; }
grep -q '"perplexity"' "$work/run/all_results.json" || { ok=0; echo "all_results.json lacks perplexity"; }
if [ $rc -eq 0 ] && [ $ok -eq 1 ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL eval_in_model_dir: rc=$rc"; cat "$work/stderr"; cat "$work/run/all_results.json"
fi
# Training into it again resumes from the checkpoint saved at max_steps (Hugging Face's get_last_checkpoint):
# nothing is left to train, and the model stays as it was.
"$bin" run_mlm "${common[@]}" --max_steps 4 --train_file "$text" --output_dir "$work/run" > /dev/null 2> "$work/stderr"
rc=$?
if [ $rc -eq 0 ] && grep -q "Checkpoint detected, resuming training" "$work/stderr" && cmp -s "$work/before/model.safetensors" "$work/run/model.safetensors"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL train_into_model_dir: rc=$rc"; cat "$work/stderr"
fi

# Blank lines are [CLS] [SEP] in the grouped stream, as in Hugging Face's run_mlm.py:
# 4 + 2 + 4 + 2 = 12 tokens, 3 blocks of 4: one batch of 3, one step per epoch.
printf 'hello world\n\nhello world\n\n' > "$work/blank.txt"
"$bin" run_mlm --tokenizer_name "$vocab" --config_name "$config" --config_overrides "$tiny" --max_seq_length 4 \
  --per_device_train_batch_size 3 --max_steps 2 --do_train --disable_tqdm --train_file "$work/blank.txt" \
  --output_dir "$work/blank" > /dev/null 2> "$work/stderr"
rc=$?
if [ $rc -eq 0 ] && grep -q '"epoch": 2.0' "$work/blank/train_results.json"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL blank_lines_grouped: rc=$rc"; cat "$work/stderr"; cat "$work/blank/train_results.json" 2>/dev/null
fi
# --line_by_line skips them: 2 examples, fewer than a batch of 3: one batch of 2.
"$bin" run_mlm --tokenizer_name "$vocab" --config_name "$config" --config_overrides "$tiny" --max_seq_length 4 --line_by_line \
  --pad_to_max_length --per_device_train_batch_size 3 --max_steps 1 --do_train --disable_tqdm --train_file "$work/blank.txt" \
  --output_dir "$work/blank_lbl" > /dev/null 2> "$work/stderr"
rc=$?
if [ $rc -eq 0 ] && grep -q -- "--per_device_train_batch_size 3 is more than the 2 examples there are: batches of 2" "$work/stderr"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL blank_lines_line_by_line: rc=$rc"; cat "$work/stderr"
fi

# --backend: the interpreter trains to the same losses as the default cpu backend
# (the main job's losses are identical on both); an unknown name is refused.
"$bin" run_mlm "${common[@]}" --max_steps 4 --logging_steps 2 --train_file "$text" --backend interpreter \
  --output_dir "$work/interp" > /dev/null 2> "$work/stderr"
rc=$?
loss_interp=$(sed -n 's/.*"train_loss": *\([0-9.eE+-]*\).*/\1/p' "$work/interp/train_results.json" 2>/dev/null)
"$bin" run_mlm "${common[@]}" --max_steps 4 --logging_steps 2 --train_file "$text" --backend cpu \
  --output_dir "$work/cpu" > /dev/null 2>> "$work/stderr"
rc2=$?
loss_cpu=$(sed -n 's/.*"train_loss": *\([0-9.eE+-]*\).*/\1/p' "$work/cpu/train_results.json" 2>/dev/null)
if [ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ -n "$loss_interp" ] &&
   awk -v a="$loss_interp" -v b="$loss_cpu" 'BEGIN{d=a-b; if (d<0) d=-d; exit !(d < 1e-4*a)}'; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL backend_interpreter: rc=$rc/$rc2 train_loss interpreter=$loss_interp cpu=$loss_cpu"; cat "$work/stderr"
fi
expect_error unknown_backend "--backend" "${common[@]}" --backend tpu --train_file "$text" --output_dir "$work/out"

# --compile_cache_dir: the second run of the same job compiles nothing (every graph
# loads from the disk cache) and trains to the same loss; --dump_hlo writes each
# graph's HLO before and after the passes and its kernels.
for n in 1 2; do
  "$bin" run_mlm "${common[@]}" --max_steps 2 --train_file "$text" --compile_cache_dir "$work/cc" --dump_hlo "$work/dump$n" \
    --output_dir "$work/cached$n" > /dev/null 2> "$work/stderr$n"
done
ok=1
grep -A1 "Metric: CompileTime" "$work/cached1/metrics_report.txt" | grep -q "TotalSamples: 1" || { ok=0; echo "first run: CompileTime is not 1 sample"; }
grep -q "Metric: CompileTime" "$work/cached2/metrics_report.txt" && { ok=0; echo "second run compiled"; }
grep -A1 "Counter: PersistentCacheHit" "$work/cached2/metrics_report.txt" | grep -q "Value: 1" || { ok=0; echo "second run: no PersistentCacheHit"; }
cmp -s <(sed -n 's/.*"train_loss": *\([0-9.eE+-]*\).*/\1/p' "$work/cached1/train_results.json") \
       <(sed -n 's/.*"train_loss": *\([0-9.eE+-]*\).*/\1/p' "$work/cached2/train_results.json") || { ok=0; echo "train_loss differs"; }
before=$(ls "$work/dump1"/*.before.hlo 2>/dev/null | head -1)
[ -n "$before" ] && head -1 "$before" | grep -q "^HloModule SyncTensorsGraph" || { ok=0; echo "no HLO dump"; }
ls "$work/dump1"/*.after.hlo "$work/dump1"/*.kernels.cpp > /dev/null 2>&1 || { ok=0; echo "no optimized HLO or kernels dumped"; }
if [ $ok -eq 1 ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL compile_cache_and_dump"; cat "$work/stderr1" "$work/stderr2"; cat "$work/cached2/metrics_report.txt" 2>/dev/null | head -30
fi

# The environment only gives defaults: --backend overrides a bad LAZYTRAIN_BACKEND,
# which alone is one error naming it; a CXX that does not run is an error naming
# it (not a silent fall-back to the interpreter); --dump_hlo at a file is an error.
LAZYTRAIN_BACKEND=bogus "$bin" run_mlm "${common[@]}" --train_file "$text" --backend cpu --output_dir "$work/envflag" > /dev/null 2> "$work/stderr"
rc=$?
if [ $rc -eq 0 ] && [ -s "$work/envflag/train_results.json" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL backend_flag_over_environment: rc=$rc"; cat "$work/stderr"
fi
LAZYTRAIN_BACKEND=bogus expect_error bad_backend_environment "LAZYTRAIN_BACKEND='bogus' names no backend; registered: cpu, interpreter" \
  "${common[@]}" --train_file "$text" --output_dir "$work/out"
CXX=/nonexistent/c++ expect_error bad_cxx "CXX='/nonexistent/c++' does not run" \
  "${common[@]}" --train_file "$text" --backend cpu --output_dir "$work/out"
expect_error dump_hlo_at_a_file "(--dump_hlo or LAZYTRAIN_DUMP_HLO): expected a writable directory" \
  "${common[@]}" --train_file "$text" --dump_hlo "$work/latin1.txt" --output_dir "$work/out"

# --profile_dir: one Chrome trace-event file, lazytrain-<host>-<pid>.trace.json,
# with the training steps' mark_steps and the device's generated kernels; a
# directory that cannot be made is one error naming the flag.
"$bin" run_mlm "${common[@]}" --train_file "$text" --output_dir "$work/profiled" --profile_dir "$work/profile" > /dev/null 2> "$work/stderr"
rc=$?
traces=("$work"/profile/lazytrain-*-*.trace.json)
if [ $rc -eq 0 ] && [ ${#traces[@]} -eq 1 ] && grep -qF "profile trace written to ${traces[0]}" "$work/stderr" &&
   python3 - "${traces[0]}" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
marks = [e for e in events if e["ph"] == "X" and e["name"] == "mark_step"]
kernels = [e for e in events if e["ph"] == "X" and e["cat"] in ("kernel", "dot")]
rows = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
sys.exit(0 if len(marks) >= 2 and kernels and {"host (trace)", "device cpu:0 execution"} <= rows else 1)
PY
then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL profile_dir: rc=$rc traces=${traces[*]}"; cat "$work/stderr"
fi
# The flag overrides LAZYTRAIN_PROFILE: the one trace goes to --profile_dir.
LAZYTRAIN_PROFILE="$work/env_profile" "$bin" run_mlm "${common[@]}" --train_file "$text" --output_dir "$work/profiled_env" \
  --profile_dir "$work/flag_profile" > /dev/null 2> "$work/stderr"
rc=$?
flag_traces=("$work"/flag_profile/lazytrain-*.trace.json)
if [ $rc -eq 0 ] && [ ${#flag_traces[@]} -eq 1 ] && [ -s "${flag_traces[0]}" ] && [ -z "$(ls -A "$work/env_profile" 2>/dev/null)" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL profile_dir_over_environment: rc=$rc traces=${flag_traces[*]}"; ls "$work/env_profile"; cat "$work/stderr"
fi
expect_error profile_dir_not_creatable "[profiler] --profile_dir '$work/latin1.txt/sub': cannot create the directory" \
  "${common[@]}" --train_file "$text" --profile_dir "$work/latin1.txt/sub" --output_dir "$work/out"

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
