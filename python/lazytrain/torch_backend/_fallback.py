"""fallback="partition": the graph split into lazytrain partitions (the ops
LOWERINGS covers) and torch eager nodes between them, with
torch.fx's CapabilityBasedPartitioner (as torch_xla's dynamo bridge does)."""
import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport

from ._lower_graph import is_supported


class _LoweredOps(OperatorSupport):
    def is_node_supported(self, submodules, node):
        return node.op == "call_function" and is_supported(node)


def partitioned(gm, make_call):
    """gm with each supported region replaced by a submodule that calls
    make_call(submodule, index) on its torch inputs; returns gm.forward's
    boxed-able callable (positional tensors -> outputs)."""
    partitioner = CapabilityBasedPartitioner(gm, _LoweredOps(), allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    fused = partitioner.fuse_partitions(partitions)
    for i, name in enumerate(sorted(n.target for n in fused.graph.nodes if n.op == "call_module")):
        sub = getattr(fused, name)
        call = make_call(sub, i)

        def forward(*args, _call=call, _single=_single_output(sub)):
            out = _call(*args)
            return out[0] if _single else tuple(out)

        sub.forward = forward
    return fused.forward


def _single_output(sub):
    out = next(n for n in sub.graph.nodes if n.op == "output")
    return not isinstance(out.args[0], (tuple, list))
