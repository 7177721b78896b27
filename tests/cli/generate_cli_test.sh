#!/usr/bin/env bash
# `lazytrain generate` on a tiny GPT-2 that run_clm trained: greedy text that
# continues the prompt, 200 new tokens in 2 graphs, a batch of prompts with
# --json in Hugging Face's pipeline structure, sampling that repeats with its
# seed, the Hub's checkpoint layout (no "transformer." prefix, attn.bias
# buffers) giving the same text, and bad flags as one error line.
# Usage: generate_cli_test.sh <lazytrain binary> <shared data dir> <python3>
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

"$bin" run_clm --tokenizer_name "$data/gpt2" --config_overrides "n_embd=32,n_layer=1,n_head=2,n_positions=256" --block_size 32 \
  --disable_tqdm --report_to none --seed 42 --train_file "$data/wikitext-2/valid.txt" --do_train --max_train_samples 64 \
  --per_device_train_batch_size 4 --max_steps 8 --learning_rate 3e-3 --output_dir "$work/model" > "$work/stdout" 2> "$work/stderr"
check train_a_model $?

"$bin" generate --model "$work/model" --prompt "The game" --max_new_tokens 200 > "$work/greedy.txt" 2> "$work/stderr"
rc=$?
[ $rc -eq 0 ] && grep -q '^The game' "$work/greedy.txt" && [ "$(wc -c < "$work/greedy.txt")" -gt 200 ] &&
  grep -q '200 new tokens' "$work/stderr" && grep -q 'prompt bucket 16, KV cache 256 slots, 2 graph(s) run' "$work/stderr"
check greedy_200_tokens_in_2_graphs $?

"$bin" generate --model "$work/model" --prompt "The game" --prompt "In 1998 , the" --max_new_tokens 12 --json > "$work/batch.json" 2> "$work/stderr" &&
  "$bin" generate --model "$work/model" --prompt "In 1998 , the" --max_new_tokens 12 --json > "$work/alone.json" 2> "$work/stderr" &&
  "$python" - "$work/batch.json" "$work/alone.json" <<'PY'
import json, sys
batch, alone = (json.load(open(p)) for p in sys.argv[1:3])
assert len(batch) == 2 and all(len(b) == 1 for b in batch), batch
assert batch[0][0]["generated_text"].startswith("The game") and batch[1][0]["generated_text"].startswith("In 1998 , the"), batch
assert isinstance(alone, list) and len(alone) == 1, alone
assert batch[1][0]["generated_text"] == alone[0]["generated_text"], (batch, alone)  # left padding changes nothing
PY
check batch_json_equals_one_at_a_time $?

sample=(--model "$work/model" --prompt "The game" --max_new_tokens 16 --do_sample --top_k 20 --top_p 0.9 --temperature 1.2 --num_return_sequences 3 --json)
"$bin" generate "${sample[@]}" --seed 1 > "$work/s1.json" 2> "$work/stderr" &&
  "$bin" generate "${sample[@]}" --seed 1 > "$work/s1b.json" 2> "$work/stderr" &&
  "$bin" generate "${sample[@]}" --seed 2 > "$work/s2.json" 2> "$work/stderr" &&
  cmp -s "$work/s1.json" "$work/s1b.json" && ! cmp -s "$work/s1.json" "$work/s2.json" &&
  "$python" - "$work/s1.json" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
texts = [o["generated_text"] for o in out]
assert len(texts) == 3 and all(t.startswith("The game") for t in texts) and len(set(texts)) > 1, texts
PY
check sampling_repeats_with_its_seed $?

# A tiny temperature samples as greedy search chooses (no overflow to NaN).
"$bin" generate --model "$work/model" --prompt "The game" --max_new_tokens 200 --do_sample --temperature 1e-40 > "$work/cold.txt" 2> "$work/stderr" &&
  cmp -s "$work/greedy.txt" "$work/cold.txt"
check tiny_temperature_is_greedy $?

# The Hub's gpt2 layout: GPT2Model names and the causal-mask buffers.
mkdir -p "$work/hub" && cp "$work/model/config.json" "$work/model/vocab.json" "$work/model/merges.txt" "$work/hub/" &&
  "$python" - "$work/model/model.safetensors" "$work/hub/model.safetensors" <<'PY'
import json, struct, sys
src, dst = sys.argv[1:3]
with open(src, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    data = f.read()
tensors = {}
for name, info in header.items():
    if name == "__metadata__":
        continue
    b, e = info["data_offsets"]
    tensors[name[len("transformer."):]] = (info["dtype"], info["shape"], data[b:e])
mask = b"".join(struct.pack("<f", 1.0 if j <= i else 0.0) for i in range(256) for j in range(256))
tensors["h.0.attn.bias"] = ("F32", [1, 1, 256, 256], mask)
tensors["h.0.attn.masked_bias"] = ("F32", [], struct.pack("<f", -1e4))
out_header, blob = {"__metadata__": {"format": "pt"}}, b""
for name, (dtype, shape, raw) in tensors.items():
    out_header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(blob), len(blob) + len(raw)]}
    blob += raw
h = json.dumps(out_header).encode()
h += b" " * (-(8 + len(h)) % 8)
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + blob)
PY
"$bin" generate --model "$work/hub" --prompt "The game" --max_new_tokens 200 > "$work/hub.txt" 2> "$work/stderr" && cmp -s "$work/greedy.txt" "$work/hub.txt"
check hub_layout_generates_the_same_text $?

one_error() {  # one_error NAME EXPECTED ARGS...
  local name="$1" expected="$2"
  shift 2
  "$bin" generate "$@" > "$work/stdout" 2> "$work/stderr"
  local rc=$?
  [ $rc -ne 0 ] && [ "$(wc -l < "$work/stderr")" -eq 1 ] && grep -qF -- "$expected" "$work/stderr" && [ ! -s "$work/stdout" ]
  check "$name" $?
}
one_error greedy_with_many_sequences "num_return_sequences 2 needs do_sample" --model "$work/model" --prompt "a" --num_return_sequences 2
one_error too_long "more than the model's n_positions 256" --model "$work/model" --prompt "a b" --max_new_tokens 300
one_error no_model_dir "--model '$work/none' does not exist" --model "$work/none" --prompt "a"
one_error no_weights "holds no model.safetensors" --model "$data/gpt2" --prompt "a"
one_error empty_prompt "prompt 1 is empty" --model "$work/model" --prompt ""
one_error return_tensors_needs_json "--return_tensors requires --json" --model "$work/model" --prompt "a" --return_tensors
one_error prompt_not_utf8 "--prompt 1 is not valid UTF-8" --model "$work/model" --prompt "$(printf 'a\xff')"
mkdir -p "$work/bert_config" && cp -r "$work/model/." "$work/bert_config/" && cp "$data/bert-base-uncased/config.json" "$work/bert_config/"
one_error bert_config "model_type is 'bert', expected 'gpt2'" --model "$work/bert_config" --prompt "a"
one_error bad_top_p "top_p must be a float between 0 and 1, got 2" --model "$work/model" --prompt "a" --do_sample --top_p 2

echo "generate_cli: $passed passed, $failed failed"
[ $failed -eq 0 ]
