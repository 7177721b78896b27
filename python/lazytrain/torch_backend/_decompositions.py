"""The decomposition table handed to AOTAutograd: PyTorch's core ATen
decompositions (torch._decomp.core_aten_decompositions) minus the ops that
lazytrain has as fused ops of its own, so that they reach the lowering whole.

Kept whole (lowered to one lazytrain op each):
- aten.silu -> lazytrain silu (core decomposes it to x * sigmoid(x));
- aten._scaled_dot_product_flash_attention_for_cpu -> lazytrain's fused
  scaled_dot_product_attention, plus the logsumexp its backward needs.

Already outside the core table and lowered whole: gelu, native_layer_norm,
_softmax, _log_softmax, and _scaled_dot_product_flash_attention_for_cpu_backward
(the backward of the op above, reached through its autograd formula).

Everything else in the core table is decomposed, backward ops included
(native_layer_norm_backward, gelu_backward, silu_backward, _softmax_backward_data,
embedding_dense_backward, nll_loss_*): they become elementwise ops, reductions
and index ops that lazytrain's compiler fuses anyway.
"""
import functools

import torch
from torch._decomp import core_aten_decompositions

aten = torch.ops.aten

# Ops removed from the core table: lazytrain lowers them whole.
KEPT_WHOLE = (
    aten.silu.default,
    aten._scaled_dot_product_flash_attention_for_cpu.default,
)


@functools.lru_cache(maxsize=1)
def decomposition_table():
    """{OpOverload: decomposition} for aot_autograd(decompositions=...): the core
    ATen table of the pinned torch (2.13.0) without KEPT_WHOLE. Built once."""
    table = core_aten_decompositions()
    return {op: fn for op, fn in table.items() if op not in KEPT_WHOLE}
