#!/usr/bin/env bash
# `lazytrain fill_mask` on the golden tiny models (tests/golden/fill_mask_{bert,roberta}/):
# one --text and a --file of lines, the ranked list and --json checked against the
# PyTorch reference's output (tools/make_golden_fill_mask.py) with Python's json
# module; and its bad input (one error line naming the flag or file; exit non-zero).
# Usage: fill_mask_cli_test.sh <lazytrain binary> <source dir>
set -uo pipefail
bin="$1"
golden="$2/tests/golden"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL $1"; cat "$work/stderr" 2>/dev/null; }

# expect_error NAME EXPECTED ARGS...: non-zero exit, nothing on stdout, one stderr line containing EXPECTED.
expect_error() {
  local name="$1" expected="$2"
  shift 2
  "$bin" "$@" > "$work/stdout" 2> "$work/stderr"
  local rc=$?
  if [ $rc -ne 0 ] && [ ! -s "$work/stdout" ] && [ "$(wc -l < "$work/stderr")" -eq 1 ] && grep -qF -- "$expected" "$work/stderr"; then
    pass
  else
    fail "$name (rc=$rc)"
  fi
}

# golden_field MODEL KEY: a metadata entry of tests/golden/fill_mask_MODEL.safetensors.
golden_field() {
  python3 -c '
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    print(json.loads(f.read(n))["__metadata__"][sys.argv[2]])' "$golden/fill_mask_$1.safetensors" "$2"
}

# compare_json EXPECTED_JSON GOT_FILE: same structure, tokens and strings; scores within 1e-5.
compare_json() {
  python3 -c '
import json, sys
want, got = json.loads(sys.argv[1]), json.load(open(sys.argv[2]))
def same(a, b):
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return (list(b) == ["score", "token", "token_str", "sequence"] and a["token"] == b["token"]
            and a["token_str"] == b["token_str"] and a["sequence"] == b["sequence"] and abs(a["score"] - b["score"]) < 1e-5)
sys.exit(0 if same(want, got) else 1)' "$1" "$2"
}

for model in bert roberta; do
  golden_field "$model" texts | python3 -c 'import json, sys; print("\n\n".join(json.load(sys.stdin)))' > "$work/$model.txt"
  expected="$(golden_field "$model" expected)"
  # A file of lines (blank lines skipped), batched by 3: a list per input.
  "$bin" fill_mask --model "$golden/fill_mask_$model" --file "$work/$model.txt" --top_k 5 --batch_size 3 --json \
    > "$work/$model.json" 2> "$work/stderr" && compare_json "$expected" "$work/$model.json" && pass || fail "${model}_file_json"
  # One text: HF returns the list of the one input, unwrapped. (The reference
  # interpreter from here on: a run compiles nothing, and the golden test holds it to the cpu backend.)
  first="$(head -n 1 "$work/$model.txt")"
  "$bin" fill_mask --model "$golden/fill_mask_$model" --text "$first" --json --backend interpreter > "$work/one.json" 2> "$work/stderr" &&
    compare_json "$(python3 -c 'import json, sys; print(json.dumps(json.loads(sys.argv[1])[0]))' "$expected")" "$work/one.json" &&
    pass || fail "${model}_text_json"
  # The ranked list: the text, then "  k. score  token_str  sequence" with 4 decimals.
  "$bin" fill_mask --model "$golden/fill_mask_$model" --text "$first" --top_k 3 --backend interpreter > "$work/ranked.txt" 2> "$work/stderr"
  python3 -c '
import json, sys
want = [sys.argv[2]] + ["  %d. %.4f  %s  %s" % (k + 1, p["score"], p["token_str"], p["sequence"]) for k, p in enumerate(json.loads(sys.argv[1])[0][:3])]
got = open(sys.argv[3], encoding="utf-8").read().split("\n")[:-1]
sys.exit(0 if got == want else print("want", want, "\ngot ", got) or 1)' "$expected" "$first" "$work/ranked.txt" && pass || fail "${model}_ranked"
done

bert=(fill_mask --model "$golden/fill_mask_bert" --backend interpreter)
mkdir -p "$work/no_config"
printf '\n  \n\t\n' > "$work/blank.txt"
expect_error model_missing "--model '$work/none' does not exist or is not a directory" fill_mask --model "$work/none" --text "a [MASK]"
expect_error no_config "'$work/no_config' holds no config.json" fill_mask --model "$work/no_config" --text "a [MASK]"
expect_error no_mask "has no mask token [MASK]" "${bert[@]}" --text "Paris is the capital of France."
expect_error roberta_mask_for_bert "marks the word to predict with [MASK], not <mask>" "${bert[@]}" --text "Paris is the <mask> of France."
expect_error bert_mask_for_roberta "with <mask>, not [MASK]" fill_mask --model "$golden/fill_mask_roberta" --backend interpreter --text "Paris is the [MASK] of France."
expect_error top_k_zero "--top_k must be at least 1, got 0" "${bert[@]}" --text "the [MASK]" --top_k 0
expect_error top_k_above_vocab "--top_k 53 is larger than the vocabulary of '$golden/fill_mask_bert' (52 tokens)" "${bert[@]}" --text "the [MASK]" --top_k 53
expect_error batch_size_zero "--batch_size must be at least 1, got 0" "${bert[@]}" --text "the [MASK]" --batch_size 0
expect_error file_missing "--file '$work/none.txt' does not exist" "${bert[@]}" --file "$work/none.txt"
expect_error file_blank "--file '$work/blank.txt' has no non-blank line" "${bert[@]}" --file "$work/blank.txt"
expect_error no_input "give --text TEXT or --file FILE" "${bert[@]}"
expect_error text_empty "--text is empty; expected a text holding the model's mask token" "${bert[@]}" --text ''
expect_error text_blank "--text is empty; expected a text holding the model's mask token" "${bert[@]}" --text '  '
expect_error text_and_file "excludes" "${bert[@]}" --text "the [MASK]" --file "$work/bert.txt"

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
