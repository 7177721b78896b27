#!/usr/bin/env bash
# Makes the venvs that bench/peers/ and tools/torch_reference/hf_run_*.py run in, with pinned
# versions, installs Debian's jemalloc and tcmalloc (the allocators bench/run_all.sh tries under
# PyTorch eager), and prints what it installed.
#
#   bash bench/setup_peers.sh
#
# Environment (defaults in brackets):
#   PEERS_VENV [~/.cache/lazytrain/venv-peers]     torch 2.13.0 (CPU wheel), transformers 5.23.0, datasets 5.2.0,
#                                     accelerate (the Trainer's), jax/jaxlib 0.10.2, optax 0.2.8
#   XLA_VENV   [~/.cache/lazytrain/venv-torchxla]  torch_xla 2.9.0 with the torch it requires (2.9.0) and transformers 5.23.0
#   PYTHON     [python3]              the interpreter the venvs are made from (3.11 here)
#   SKIP_XLA   [0]                    1: no PyTorch/XLA venv
set -euo pipefail
PEERS_VENV=${PEERS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/lazytrain/venv-peers}
XLA_VENV=${XLA_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/lazytrain/venv-torchxla}
PYTHON=${PYTHON:-python3}
SKIP_XLA=${SKIP_XLA:-0}

# The same torch/transformers/datasets as python/requirements-interop.txt. torch==2.13.0 resolves to
# the CPU wheel (2.13.0+cpu) that this machine's pip finds on disk; never plain "torch" (a CUDA build).
PEERS_PINS=(torch==2.13.0 transformers==5.23.0 datasets==5.2.0 accelerate==1.16.0
            jax==0.10.2 jaxlib==0.10.2 optax==0.2.8 numpy==2.2.6)
# torch_xla 2.9.0 requires torch==2.9.0 exactly. PyPI's torch 2.9.0 for Linux x86_64 is the CUDA 12.8
# build (it pulls the nvidia-* wheels, ~3 GB); PyTorch/XLA runs it on its CPU device all the same.
XLA_PINS=(torch==2.9.0 torch_xla==2.9.0 transformers==5.23.0 numpy==2.4.6)

make_venv() {  # make_venv DIR PIN...
  local dir=$1; shift
  [ -x "$dir/bin/python" ] || "$PYTHON" -m venv "$dir"
  "$dir/bin/pip" install --quiet "$@"
  echo "$dir ($("$dir/bin/python" --version 2>&1)):"
  "$dir/bin/pip" list 2>/dev/null | grep -iE '^(torch|torch[-_]xla|transformers|datasets|accelerate|jax|jaxlib|optax|numpy|tokenizers) ' | sed 's/^/    /'
}

if ! ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 >/dev/null 2>&1; then
  apt-get install -y --no-install-recommends libjemalloc2 libtcmalloc-minimal4 >/dev/null
fi
echo "allocators: $(ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 | tr '\n' ' ')"
echo "    ($(dpkg-query -W -f='${Package} ${Version}\n' libjemalloc2 libtcmalloc-minimal4 2>/dev/null | paste -sd, -))"
make_venv "$PEERS_VENV" "${PEERS_PINS[@]}"
if [ "$SKIP_XLA" != 1 ]; then
  if make_venv "$XLA_VENV" "${XLA_PINS[@]}"; then
    PJRT_DEVICE=CPU "$XLA_VENV/bin/python" -c "import torch, torch_xla; x = torch.ones(2, device=torch_xla.device()); print('    PyTorch/XLA CPU device:', torch_xla.device(), float(x.sum()))"
  else
    echo "PyTorch/XLA: pip could not install ${XLA_PINS[*]} into $XLA_VENV (its message is above); bench/run_all.sh skips that peer" >&2
  fi
fi
