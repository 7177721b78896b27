#!/usr/bin/env bash
# Run a command with OpenBLAS instead of the system libblas.so.3.
#
# Debian's torch (/usr/bin/python3) calls the system libblas.so.3; on this machine that is the
# netlib *reference* BLAS (~1 GFLOP/s), which makes run_mlm.py ~25x slower. This wrapper fetches
# Debian's libopenblas0-pthread .deb once (apt-get download, no install, nothing system-wide
# changes), unpacks it under $OPENBLAS_DIR (default /tmp/lazytrain-openblas) and runs the command
# with LD_LIBRARY_PATH pointing at its libblas.so.3.
#   tools/torch_reference/with_openblas.sh /usr/bin/python3 tools/torch_reference/run_mlm.py ...
set -euo pipefail
dir=${OPENBLAS_DIR:-/tmp/lazytrain-openblas}
lib=$dir/root/usr/lib/x86_64-linux-gnu/openblas-pthread
if [ ! -e "$lib/libblas.so.3" ]; then
  mkdir -p "$dir"
  (cd "$dir" && apt-get download libopenblas0-pthread >&2 && dpkg -x libopenblas0-pthread_*.deb root)
fi
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-2}
exec "$@"
