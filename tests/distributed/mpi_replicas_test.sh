#!/usr/bin/env bash
# Data parallelism across processes (CTest distributed.mpi_replicas): Open MPI
# runs the processes on this host over TCP on the loopback interface, as it
# would over a network between hosts.
#   1. 2 processes x 1 replica, 2 processes x 2 replicas and 4 processes (with AdamW and with
#      the sharded ZeroRedundancyAdamW), each replica at
#      batch 8/W, match one replica at batch 8 after 20 steps, and all replicas
#      hold the same bits after every step;
#   2. SPMD: FSDP by annotations over 2 processes x 1 device matches the same reference;
#   3. a rank that never reaches an all-reduce is named by the others within
#      the timeout, and the job ends non-zero (bounded to a minute).
# Usage: mpi_replicas_test.sh MPI_REPLICAS_TEST_BINARY
set -euo pipefail
bin="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
mpi=(mpirun --oversubscribe --bind-to none --mca btl tcp,self --mca btl_tcp_if_include lo -np 2)
mpi4=(mpirun --oversubscribe --bind-to none --mca btl tcp,self --mca btl_tcp_if_include lo -np 4)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$bin" reference "$tmp/reference.bin"
for run in "1" "2" "1 sharded" "2 sharded"; do
  # shellcheck disable=SC2086
  if out="$(timeout 300 "${mpi[@]}" "$bin" replicas "$tmp/reference.bin" $run 2>&1)"; then
    echo "$out" | grep "world"
    echo "$out" | grep -q "replicas differ at 0 step(s)" || fail "replicas differ ($run per process): $out"
  else
    fail "2 processes x $run replicas: $out"
  fi
done

# 4 processes: the all-reduce ring of more than two ranks (chunks of uneven sizes).
if out="$(timeout 300 "${mpi4[@]}" "$bin" replicas "$tmp/reference.bin" 1 2>&1)"; then
  echo "$out" | grep "world"
  echo "$out" | grep -q "replicas differ at 0 step(s)" || fail "replicas differ (4 processes): $out"
else
  fail "4 processes: $out"
fi

# SPMD (issue 34): the step traced once a process, FSDP over the 2 processes' devices.
if out="$(timeout 300 "${mpi[@]}" "$bin" spmd "$tmp/reference.bin" 2>&1)"; then
  echo "$out" | grep "spmd over"
else
  fail "spmd over 2 processes: $out"
fi

start=$(date +%s)
set +e
out="$(timeout 60 "${mpi[@]}" "$bin" hang 3 2>&1)"
status=$?
set -e
elapsed=$(( $(date +%s) - start ))
echo "hang: exit $status after ${elapsed}s"
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || fail "a job with a rank that never arrives must end non-zero before the test's bound (exit $status)"
echo "$out" | grep -q "process rank 1: it died, raised or never arrived" || fail "the error must name rank 1: $out"
[ "$elapsed" -lt 60 ] || fail "took ${elapsed}s"

[ "$failures" -eq 0 ] && echo "all MPI checks passed"
exit "$failures"
