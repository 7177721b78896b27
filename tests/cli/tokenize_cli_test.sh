#!/usr/bin/env bash
# `lazytrain tokenize` with each kind of tokenizer:
#  - GPT-2 (byte-level BPE) and BERT (WordPiece): every golden case of
#    ../shared/data/tokenizer-golden/*_llamacpp_golden.json, written to a file
#    byte for byte and read back through --input --json, gives the golden ids;
#  - SentencePiece (a model in tests/golden): ids and tokens, with and
#    without --add_special_tokens;
#  - no text, two texts, a missing file: one error line.
# Usage: tokenize_cli_test.sh <lazytrain binary> <shared data dir> <source dir> <python3>
set -uo pipefail
bin="$1"
data="$2"
src="$3"
python="$4"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() {  # check NAME EXIT_CODE_OF_THE_CONDITION
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $1"; cat "$work/stderr" 2>/dev/null | tail -5; fi
}

"$python" - "$bin" "$data" "$work" <<'PY'
import json, subprocess, sys
bin, data, work = sys.argv[1:4]
bad = 0
for name, tokenizer in (("gpt2", data + "/gpt2"), ("bert-base-uncased", data + "/bert-base-uncased/vocab.txt")):
    cases = json.load(open(f"{data}/tokenizer-golden/{name}_llamacpp_golden.json", encoding="utf-8"))["cases"]
    for i, case in enumerate(cases):
        path = f"{work}/case.txt"
        with open(path, "wb") as f:
            f.write(case["text"].encode("utf-8"))
        out = subprocess.run([bin, "tokenize", "--tokenizer", tokenizer, "--input", path, "--json"], capture_output=True)
        got = json.loads(out.stdout) if out.returncode == 0 else None
        if got is None or got["ids"] != case["ids"] or (name == "gpt2" and got["tokens"] != case["tokens"]):
            bad += 1
            print(f"{name} case {i} {case['text']!r}: got {got}, want {case['ids']}")
    print(f"{name}: {len(cases)} golden cases through `lazytrain tokenize --json`")
sys.exit(1 if bad else 0)
PY
check golden_cases_through_the_cli $?

spm="$src/tests/golden/fill_mask_roberta"
"$bin" tokenize --tokenizer "$spm" --text "the cat" --json > "$work/plain" 2> "$work/stderr" &&
  "$bin" tokenize --tokenizer "$spm" --text "the cat" --json --add_special_tokens > "$work/special" 2>> "$work/stderr" &&
  "$python" - "$work/plain" "$work/special" <<'PY'
import json, sys
plain, special = (json.load(open(p)) for p in sys.argv[1:3])
assert plain["tokens"] and all(t.startswith("▁") or t for t in plain["tokens"]), plain
assert special["ids"] == [0] + plain["ids"] + [2], (plain, special)
assert special["tokens"][0] == "<s>" and special["tokens"][-1] == "</s>", special
PY
check sentencepiece_with_and_without_special_tokens $?

"$bin" tokenize --tokenizer "$data/gpt2" --text "Hello world" > "$work/stdout" 2> "$work/stderr"
[ $? -eq 0 ] && [ "$(cat "$work/stdout")" = "$(printf '15496\tHello\n995\tĠworld')" ]
check text_lines $?

# make_tfrecords takes the GPT-2 tokenizer (lines keep their line breaks).
"$bin" make_tfrecords --tokenizer "$data/gpt2" --input "$data/sample-text/sample_text.txt" --max_seq_length 64 \
  --output_dir "$work/shards" > "$work/stdout" 2> "$work/stderr" &&
  "$python" - "$work/shards/data.json" <<'PY'
import json, sys
info = json.load(open(sys.argv[1]))
assert info["num_examples"] > 1 and info["max_seq_length"] == 64 and info["tokenizer"].endswith("gpt2"), info
PY
check make_tfrecords_with_gpt2 $?

one_error() {  # one_error NAME EXPECTED ARGS...
  local name="$1" expected="$2"
  shift 2
  "$bin" tokenize "$@" > "$work/stdout" 2> "$work/stderr"
  local rc=$?
  [ $rc -ne 0 ] && [ "$(wc -l < "$work/stderr")" -eq 1 ] && grep -qF -- "$expected" "$work/stderr"
  check "$name" $?
}
one_error no_text "--text TEXT or --input FILE" --tokenizer "$data/gpt2"
one_error two_texts "excludes" --tokenizer "$data/gpt2" --text a --input "$work/stdout"
one_error missing_file "cannot read --input" --tokenizer "$data/gpt2" --input "$work/nope.txt"
one_error no_tokenizer "holds no tokenizer" --tokenizer "$work" --text a
one_error input_is_a_directory "expected a text file" --tokenizer "$data/gpt2" --input "$work"

echo "tokenize_cli: $passed passed, $failed failed"
[ $failed -eq 0 ]
