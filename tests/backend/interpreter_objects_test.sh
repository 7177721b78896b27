#!/usr/bin/env bash
# The interpreter backend and the HLO evaluator are the reference every other
# backend is compared with, so they link none of the kernels they check: no
# undefined symbol of their object files names oneDNN (dnnl), lazytrain's fast
# host kernels (lazytrain::kernels, SLEEF's vector functions) or the CPU
# backend. (Their headers: Layering.TheInterpreterAndEvaluatorIncludeNoKernelsAndNoOneDnn.)
# Usage: interpreter_objects_test.sh <lazytrain_lib's object folder> <source folder>
set -euo pipefail
objdir=$1
srcdir=$2
forbidden='dnnl|lazytrain::kernels::|lazytrain::backend::cpu::|Sleef_'
# The objects of sources that exist (a build folder keeps those of removed files).
objects=()
while IFS= read -r o; do
  rel=${o#"$objdir"/}
  [ -f "$srcdir/${rel%.o}" ] && objects+=("$o")
done < <(find "$objdir/src/hlo/evaluator" "$objdir/src/backend/interpreter" -name '*.cpp.o' | sort)
if [ "${#objects[@]}" -lt 5 ]; then
  echo "FAIL: expected the evaluator's and the interpreter's object files under $objdir, found ${#objects[@]}"
  exit 1
fi
# The pattern finds what it is meant to: the CPU backend's objects do link them.
backend_symbols=$(nm -C --undefined-only "$objdir"/src/kernels/*.o "$objdir"/src/backend/cpu/*.o)
if ! grep -qE "$forbidden" <<< "$backend_symbols"; then
  echo "FAIL: the pattern '$forbidden' matches nothing in kernels/ and backend/cpu/: the check would see nothing"
  exit 1
fi
status=0
for o in "${objects[@]}"; do
  symbols=$(nm -C --undefined-only "$o")
  if hits=$(grep -E "$forbidden" <<< "$symbols"); then
    echo "FAIL: ${o#"$objdir"/} links kernels the reference must not share:"
    echo "$hits"
    status=1
  fi
done
[ $status -eq 0 ] && echo "ok: ${#objects[@]} object files of the evaluator and the interpreter link no oneDNN, kernels/ or backend/cpu/"
exit $status
