"""The lowering table: one function per ATen op overload, from the ATen FX
graphs AOTAutograd hands the backend to lazytrain's ops.

A lowering takes the node's arguments with tensors already lazytrain tensors
(lazytrain.Tensor), torch dtypes and Python numbers as they are, and returns
what the ATen op returns (a tensor, or a tuple for multi-output ops). Torch's
type promotion, scalar and index semantics are applied by the lazytrain ops
themselves (issue 53) or by the shared helpers in _common.py, never repeated
in a lowering.

LOWERINGS is filled by the modules imported at the bottom; `register` adds to
it. A lowering that covers only some uses of its op (patch convolutions, not
every convolution) registers `unsupported(node) -> str | None` too: the reason
a node is not lowered, decided from its arguments before anything runs, so
that fallback="partition" leaves that node to torch and fallback="error" says why.
"""

LOWERINGS = {}
UNSUPPORTED = {}  # op -> fn(node) -> reason the node is not lowered, or None


def register(*ops, unsupported=None):
    """Decorator: `fn` lowers each of the ATen overloads `ops` (for the nodes
    `unsupported` gives no reason against, when it is given)."""

    def add(fn):
        for op in ops:
            if op in LOWERINGS:
                raise ValueError(f"{op} is lowered twice ({LOWERINGS[op].__name__} and {fn.__name__})")
            LOWERINGS[op] = fn
            if unsupported is not None:
                UNSUPPORTED[op] = unsupported
        return fn

    return add


def unsupported_reason(node):
    """Why this call_function node is not lowered, or None when it is."""
    if node.target not in LOWERINGS:
        return "has no lowering in lazytrain"
    check = UNSUPPORTED.get(node.target)
    return check(node) if check is not None else None


# The lowerings, by kind of op; each module registers its functions on import.
from . import convolution, creation, indexing, nn, pointwise, reductions, shape  # noqa: E402,F401
