#!/usr/bin/env bash
# A checkpoint written by lazytrain follows the safetensors specification and
# Hugging Face's parameter names exactly: lazytrain loads the reference files of
# tools/make_golden_hf_checkpoint.py (tests/golden/hf_*), saves them with
# save_pretrained, and a standard-library-only Python script
# (tools/check_safetensors_checkpoint.py, run with -I -S so no installed package
# is importable) compares names, dtypes, shapes and bytes with the reference.
# Usage: hf_checkpoint_format_test.sh <resave_pretrained binary> <source dir>
set -uo pipefail
bin="$1"
src="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
golden="$src/tests/golden"
check="$src/tools/check_safetensors_checkpoint.py"
failed=0

# NAME INPUT REFERENCE [expected stderr substring]
resave_and_check() {
  local name="$1" input="$2" reference="$3" expected_warning="${4:-}"
  if ! "$bin" "$input" "$work/$name" 2> "$work/$name.stderr"; then
    echo "FAIL $name: resave_pretrained failed"; cat "$work/$name.stderr"; failed=1; return
  fi
  if [ -n "$expected_warning" ] && ! grep -qF -- "$expected_warning" "$work/$name.stderr"; then
    echo "FAIL $name: no warning containing '$expected_warning'"; cat "$work/$name.stderr"; failed=1
  fi
  if [ -z "$expected_warning" ] && [ -s "$work/$name.stderr" ]; then
    echo "FAIL $name: unexpected output on stderr"; cat "$work/$name.stderr"; failed=1
  fi
  /usr/bin/python3 -I -S "$check" "$reference" "$work/$name/model.safetensors" || failed=1
}

resave_and_check bert "$golden/hf_bert_tiny" "$golden/hf_bert_tiny/model.safetensors"
resave_and_check roberta "$golden/hf_roberta_tiny" "$golden/hf_roberta_tiny/model.safetensors"
# An older-style file (tied decoder copies, position_ids, pooler, next-sentence
# head) loads and is written back in today's layout, equal to the clean one.
resave_and_check bert_legacy "$golden/hf_bert_tiny_legacy" "$golden/hf_bert_tiny/model.safetensors" \
  "bert.pooler.dense.bias, bert.pooler.dense.weight, cls.seq_relationship.bias, cls.seq_relationship.weight"

# The checker itself fails on a file that breaks the specification (a tensor too few).
if /usr/bin/python3 -I -S "$check" "$golden/hf_bert_tiny/model.safetensors" "$golden/hf_roberta_tiny/model.safetensors" > "$work/neg" 2>&1; then
  echo "FAIL checker accepted a different model"; failed=1
fi
exit $failed
