#!/usr/bin/env bash
# Builds the safetensors reader and its tests (plain and fuzz) alone with
# AddressSanitizer and UndefinedBehaviorSanitizer, and runs them: a malformed
# file must never read out of bounds, overflow or leak. Takes a minute; the
# main build (scripts/build.sh) has no sanitizers.
# Usage: bash scripts/sanitize_safetensors.sh [build dir, default build-sanitize]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-build-sanitize}"
mkdir -p "$out"
flags="-std=c++20 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -Isrc"
objects=()
for f in src/train/safetensors.cpp src/core/error.cpp src/core/atomic_file.cpp \
         tests/train/safetensors_test.cpp tests/train/safetensors_fuzz_test.cpp; do
  o="$out/$(basename "$f" .cpp).o"
  [ "$o" -nt "$f" ] || g++ $flags -c "$f" -o "$o"
  objects+=("$o")
done
g++ -fsanitize=address,undefined "${objects[@]}" -lgtest -lgtest_main -pthread -o "$out/safetensors_sanitized_tests"
"$out/safetensors_sanitized_tests"
