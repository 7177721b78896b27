#!/usr/bin/env bash
# `lazytrain run_clm --model_type llama` and `lazytrain generate` on its output:
# a tiny grouped-query Llama (tied embeddings) trained a few steps on WikiText-2
# with GPT-2's tokenizer, then one with a SentencePiece model; Hugging Face's
# files (config.json of a Llama, model.safetensors with its parameter names,
# the tied lm_head stored once); generation from the directory, the same
# tokens for a prompt alone and in a left-padded batch; bad configs are one
# error line.
# Usage: llama_cli_test.sh <lazytrain binary> <shared data dir> <python3> <source dir>
set -uo pipefail
bin="$1"
data="$2"
python="$3"
src="$4"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() {
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $1"; tail -5 "$work/stderr"; fi
}
tiny="vocab_size=50257,hidden_size=32,intermediate_size=64,num_hidden_layers=2,num_attention_heads=4,num_key_value_heads=2"
tiny="$tiny,max_position_embeddings=64,tie_word_embeddings=true,bos_token_id=50256,eos_token_id=50256"
common=(--model_type llama --block_size 32 --disable_tqdm --report_to none --seed 42 --per_device_train_batch_size 4
        --per_device_eval_batch_size 4 --learning_rate 1e-2)

"$bin" run_clm "${common[@]}" --tokenizer_name "$data/gpt2" --config_overrides "$tiny" --train_file "$data/wikitext-2/valid.txt" \
  --validation_file "$data/wikitext-2/test.txt" --do_train --do_eval --max_train_samples 64 --max_eval_samples 16 --max_steps 6 \
  --output_dir "$work/out" > "$work/stdout" 2> "$work/stderr"
rc=$?
[ $rc -eq 0 ] && grep -q '^\[Trainer\] training ran 1 distinct graph' "$work/stderr" &&
  "$python" - "$work/out" <<'PY'
import json, math, struct, sys
out = sys.argv[1]
config = json.load(open(out + "/config.json"))
assert config["model_type"] == "llama" and config["architectures"] == ["LlamaForCausalLM"], config
assert config["num_key_value_heads"] == 2 and config["rope_scaling"] is None and config["tie_word_embeddings"] is True, config
with open(out + "/model.safetensors", "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
names = set(header) - {"__metadata__"}
assert header["model.layers.1.self_attn.k_proj.weight"]["shape"] == [16, 32], header["model.layers.1.self_attn.k_proj.weight"]
assert header["model.layers.0.mlp.gate_proj.weight"]["shape"] == [64, 32]
assert "model.norm.weight" in names and "lm_head.weight" not in names, sorted(names)  # tied: stored once
assert len(names) == 1 + 2 * 9 + 1, sorted(names)
ev = json.load(open(out + "/eval_results.json"))
assert abs(ev["perplexity"] - math.exp(ev["eval_loss"])) < 1e-6 * ev["perplexity"], ev
assert ev["eval_loss"] < math.log(50257) - 0.5, ev  # it learned something in 6 steps
print("run_clm tiny Llama: eval_loss %.4f, perplexity %.1f, eval_accuracy %.4f" % (ev["eval_loss"], ev["perplexity"], ev["eval_accuracy"]))
PY
check train_and_evaluate $?

# The saved model evaluates to the same loss when loaded again (--model_name_or_path reads its config and weights).
"$bin" run_clm --block_size 32 --disable_tqdm --report_to none --model_name_or_path "$work/out" --validation_file "$data/wikitext-2/test.txt" \
  --do_eval --max_eval_samples 16 --per_device_eval_batch_size 4 --output_dir "$work/eval" > "$work/stdout" 2> "$work/stderr" &&
  "$python" - "$work/out" "$work/eval" <<'PY'
import json, sys
a, b = (json.load(open(d + "/eval_results.json"))["eval_loss"] for d in sys.argv[1:3])
assert abs(a - b) <= 1e-5 * a, (a, b)
PY
check reload_evaluates_alike $?

# generate from the directory: 12 greedy tokens; each prompt alone gives the tokens it gets in a left-padded batch.
gen=(generate --model "$work/out" --max_new_tokens 12 --json --return_tensors)
"$bin" "${gen[@]}" --prompt "The game" --prompt "In the second half of the season , the" > "$work/batch.json" 2> "$work/stderr" &&
  "$bin" "${gen[@]}" --prompt "The game" > "$work/one.json" 2>> "$work/stderr" &&
  "$bin" "${gen[@]}" --prompt "In the second half of the season , the" > "$work/two.json" 2>> "$work/stderr" &&
  grep -q 'KV cache 32 slots, 2 graph(s) run' "$work/stderr" &&
  "$python" - "$work" <<'PY'
import json, sys
w = sys.argv[1]
batch = [row[0]["generated_token_ids"] for row in json.load(open(w + "/batch.json"))]
alone = [json.load(open(w + f))[0]["generated_token_ids"] for f in ("/one.json", "/two.json")]
assert batch == alone, (batch, alone)
assert len(alone[0]) == 2 + 12 and alone[0][:2] == [464, 983], alone[0]  # "The game" is 2 GPT-2 tokens; no eos in 12 steps here
PY
check generate_batch_equals_alone $?

# A SentencePiece model as the tokenizer (the 330-piece BPE of tests/golden/fill_mask_roberta), saved with the model.
"$bin" run_clm "${common[@]}" --tokenizer_name "$src/tests/golden/fill_mask_roberta" --train_file "$data/wikitext-2/valid.txt" --do_train \
  --config_overrides "vocab_size=330,hidden_size=32,intermediate_size=64,num_hidden_layers=1,num_attention_heads=4,num_key_value_heads=1,max_position_embeddings=64" \
  --max_train_samples 32 --max_steps 3 --output_dir "$work/spm" > "$work/stdout" 2> "$work/stderr" &&
  [ -s "$work/spm/spm.model" ] &&
  "$bin" generate --model "$work/spm" --prompt "The game" --max_new_tokens 5 --json --return_tensors > "$work/spm.json" 2> "$work/stderr" &&
  "$python" -c "import json,sys; ids = json.load(open(sys.argv[1]))[0]['generated_token_ids']; assert len(ids) > 5 and max(ids) < 330, ids" "$work/spm.json"
check sentencepiece_tokenizer $?

one_error() {  # one_error NAME EXPECTED ARGS...
  local name="$1" expected="$2"
  shift 2
  "$bin" run_clm "$@" > "$work/stdout" 2> "$work/stderr"
  local rc=$?
  [ $rc -ne 0 ] && [ "$(wc -l < "$work/stderr")" -eq 1 ] && grep -qF -- "$expected" "$work/stderr"
  check "$name" $?
}
one_error kv_heads "num_attention_heads (4) is not a multiple of num_key_value_heads (3)" "${common[@]}" --tokenizer_name "$data/gpt2" \
  --config_overrides "${tiny/num_key_value_heads=2/num_key_value_heads=3}" --train_file "$data/wikitext-2/valid.txt" --do_train --output_dir "$work/e1"
one_error block_too_long "--block_size 128 must be in [2, max_position_embeddings = 64]" "${common[@]}" --block_size 128 \
  --tokenizer_name "$data/gpt2" --config_overrides "$tiny" --train_file "$data/wikitext-2/valid.txt" --do_train --output_dir "$work/e2"
"$python" -c "import json,sys; c = json.load(open(sys.argv[1])); c['rope_scaling'] = {'rope_type': 'linear', 'factor': 2.0}; json.dump(c, open(sys.argv[2], 'w'))" \
  "$work/out/config.json" "$work/rope.json"
one_error rope_scaling "rope_scaling {\"factor\":2.0,\"rope_type\":\"linear\"} is not supported" "${common[@]}" --config_name "$work/rope.json" \
  --tokenizer_name "$data/gpt2" --train_file "$data/wikitext-2/valid.txt" --do_train --output_dir "$work/e3"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
