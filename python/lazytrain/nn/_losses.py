"""torch.nn.functional's losses: cross_entropy, nll_loss, mse_loss, with every reduction.

Shapes, as torch: input [N, C], [C] or [N, C, d1, ...]; class targets int [N],
[] or [N, d1, ...]; probability targets (floating) of input's shape.
reduction 'mean' divides by the summed weights of the counted targets (so a
batch whose targets are all ignore_index gives nan, as torch), 'sum' adds
(0 when all are ignored), 'none' keeps target's shape (0 at ignored targets).
The plain case (no weight or label smoothing, [N, C] or [C], 'mean'/'sum') is
the fused C++ loss (tensor/ops.h); the others compose log_softmax and gather.
"""
from .. import _C
from .._C import LazytrainError, dtype as _dtype
from .._reductions import _called_from

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(op, reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction" + _called_from())


def _rows(t):
    """[N, C, d1, ...] as [N * d1 * ..., C] (C moved last); [C] as [1, C]; [N, C] as it is."""
    if t.ndim == 1:
        return t.unsqueeze(0)
    if t.ndim >= 3:
        t = t.permute(0, *range(2, t.ndim), 1)
    return t.reshape([-1, t.shape[-1]])


def _classes_last(input, target):
    """input as [M, C] and target as [M], and target's shape."""
    return _rows(input), target.reshape([-1]), list(target.shape)


def _check_class_target(input, target):
    if target.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"expected scalar type Long but found {target.dtype}" + _called_from())
    if input.ndim == 1:
        if target.ndim != 0:
            raise RuntimeError(f"0D or 1D target tensor expected, multi-target not supported" + _called_from())
        return
    if target.ndim != input.ndim - 1 or target.shape[0] != input.shape[0]:
        # A shape error, a LazytrainError (RuntimeError) as every shape error here; torch raises ValueError.
        raise LazytrainError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0] if target.ndim else 0}) for input {list(input.shape)} and target "
                         f"{list(target.shape)}." + _called_from())
    if list(target.shape[1:]) != list(input.shape[2:]):
        raise LazytrainError(f"Expected target size {[input.shape[0]] + list(input.shape[2:])}, got {list(target.shape)}"
                           + _called_from())


def _target_weights(target, weight, ignore_index, dtype):
    """Per target: weight[target] (1 without weight), 0 where target == ignore_index; and target made safe to gather."""
    counted = target != ignore_index
    safe = _C.where(counted, target, _C._zeros([], target.dtype)).long()
    w = counted.to(dtype)
    if weight is not None:
        w = w * weight.index_select(0, safe)
    return w, safe


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """torch.nn.functional.nll_loss: -input[target] per target (input holds log-probabilities), times
    weight[target]; reduced as the module docstring says. A target outside [0, C) other than
    ignore_index raises when the graph runs."""
    _check_reduction("nll_loss", reduction)
    _check_class_target(input, target)
    logp, flat_target, target_shape = _classes_last(input, target)
    w, safe = _target_weights(flat_target, weight, ignore_index, logp.dtype)
    losses = -logp.gather(1, safe.unsqueeze(1)).squeeze(1) * w
    if reduction == "none":
        return losses.reshape(target_shape)
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / w.sum()


def _smoothing_term(logp, flat_target, weight, ignore_index, reduction, target_shape):
    """torch's label-smoothing term: -sum_c w_c logp_c per target (0 at ignored ones), reduced."""
    smooth = -(logp * weight if weight is not None else logp).sum(1)
    w, _ = _target_weights(flat_target, weight, ignore_index, logp.dtype)
    counted = (flat_target != ignore_index).to(logp.dtype)
    smooth = smooth * counted
    if reduction == "none":
        return smooth.reshape(target_shape)
    if reduction == "sum":
        return smooth.sum()
    return smooth.sum() / w.sum()


def _probability_targets(logp, target, weight, reduction, label_smoothing):
    classes = logp.shape[-1]
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    terms = logp * target
    if weight is not None:
        terms = terms * weight
    losses = -terms.sum(1)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / float(losses.shape[0]) if losses.shape[0] else losses.sum() * float("nan")


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """torch.nn.functional.cross_entropy: log_softmax over the class dim (1, or 0 for [C] input) then
    nll_loss (class targets) or -sum(target * log_softmax) (probability targets of input's shape);
    weight [C] scales each class, label_smoothing in [0, 1] mixes in the uniform distribution as
    torch does. Errors as torch: ValueError for a bad reduction, LazytrainError (a RuntimeError) for shapes."""
    _check_reduction("cross_entropy", reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}" + _called_from())
    class_dim = 0 if input.ndim == 1 else 1
    if target.dtype.is_floating_point:
        if list(target.shape) != list(input.shape):
            raise RuntimeError(f"Expected target of input's shape {list(input.shape)} for probability targets, got "
                               f"{list(target.shape)}" + _called_from())
        logp, flat_target = _rows(_C.log_softmax(input, class_dim)), _rows(target)
        out = _probability_targets(logp, flat_target, weight, reduction, label_smoothing)
        if reduction == "none":
            return out.reshape([input.shape[0]] + list(input.shape[2:]) if input.ndim > 1 else [])
        return out
    _check_class_target(input, target)
    if weight is None and label_smoothing == 0.0 and input.ndim <= 2 and reduction != "none":
        loss = _C.cross_entropy(input, target, ignore_index)  # the fused mean over counted targets
        if reduction == "mean":
            return loss
        counted = (target != ignore_index).to(loss.dtype).sum()
        # mean * count, but 0 (not nan * 0) when every target is ignored.
        return _C.where(counted > 0, loss * counted, _C._zeros([], loss.dtype))
    logp = _C.log_softmax(input, class_dim)
    nll = nll_loss(logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0.0:
        return nll
    flat_logp, flat_target, target_shape = _classes_last(logp, target)
    smooth = _smoothing_term(flat_logp, flat_target, weight, ignore_index, reduction, target_shape)
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / input.shape[class_dim])


def mse_loss(input, target, reduction="mean"):
    """torch.nn.functional.mse_loss: (input - target)^2 (broadcast), averaged, summed or kept ('none')."""
    _check_reduction("mse_loss", reduction)
    diff = input - target
    squares = diff * diff
    if reduction == "none":
        return squares
    return squares.mean() if reduction == "mean" else squares.sum()
