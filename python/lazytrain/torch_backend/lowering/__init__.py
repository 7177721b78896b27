"""The lowering table: one function per ATen op overload, from the ATen FX
graphs AOTAutograd hands the backend to lazytrain's ops.

A lowering takes the node's arguments with tensors already lazytrain tensors
(lazytrain.Tensor), torch dtypes and Python numbers as they are, and returns
what the ATen op returns (a tensor, or a tuple for multi-output ops). Torch's
type promotion, scalar and index semantics are applied by the lazytrain ops
themselves (issue 53) or by the shared helpers in _common.py, never repeated
in a lowering.

LOWERINGS is filled by the modules imported at the bottom; `register` adds to it.
"""

LOWERINGS = {}


def register(*ops):
    """Decorator: `fn` lowers each of the ATen overloads `ops`."""

    def add(fn):
        for op in ops:
            if op in LOWERINGS:
                raise ValueError(f"{op} is lowered twice ({LOWERINGS[op].__name__} and {fn.__name__})")
            LOWERINGS[op] = fn
        return fn

    return add


# The lowerings, by kind of op; each module registers its functions on import.
from . import convolution, creation, indexing, nn, pointwise, reductions, shape  # noqa: E402,F401
