"""Patch convolutions: a convolution whose stride equals its kernel (no
padding, dilation 1, one group), as vision transformers' patch embeddings
use. Non-overlapping patches make im2col a reshape, so the convolution is one
matrix product (forward) or two (backward), which is how it runs fastest; any
other convolution is not lowered (fallback="partition" runs it in torch)."""
import torch

import lazytrain as lt

from . import register

aten = torch.ops.aten


def _patch_geometry(x_shape, w_shape, stride, padding, dilation, transposed, groups):
    """(spatial sizes of the output) for a patch convolution, or
    NotImplementedError naming what makes this convolution another kind."""
    kernel = list(w_shape[2:])
    spatial = len(kernel)
    if spatial not in (1, 2):
        raise NotImplementedError(f"{spatial}-d convolutions are not lowered (patch convolutions are 1-d or 2-d)")
    if transposed or groups != 1 or any(p != 0 for p in padding) or any(d != 1 for d in dilation) \
            or list(stride) != kernel:
        raise NotImplementedError(
            "only patch convolutions are lowered (stride == kernel size, no padding, dilation 1, groups 1); got "
            f"kernel {kernel}, stride {list(stride)}, padding {list(padding)}, dilation {list(dilation)}, "
            f"groups {groups}, transposed {transposed}")
    return [size // k for size, k in zip(x_shape[2:], kernel)]


def _not_a_patch_convolution(node):
    """The reason the node's convolution is not lowered, from its FakeTensor
    shapes and arguments (convolution and convolution_backward alike), or None."""
    backward = node.target is aten.convolution_backward.default
    x, weight = node.args[1:3] if backward else node.args[0:2]
    stride, padding, dilation, transposed, _, groups = node.args[4:10] if backward else node.args[3:9]
    try:
        _patch_geometry(x.meta["val"].shape, weight.meta["val"].shape, stride, padding, dilation, transposed, groups)
    except NotImplementedError as e:
        return str(e)
    return None


def _patches(x, kernel, out_sizes):
    """x [N, C, *spatial] as patch rows [N * prod(out), C * prod(kernel)]."""
    n, c = x.shape[0], x.shape[1]
    index = [slice(None), slice(None)] + [slice(0, o * k) for o, k in zip(out_sizes, kernel)]
    x = x[tuple(index)]
    if len(kernel) == 1:
        (o,), (k,) = out_sizes, kernel
        rows = lt.permute(lt.reshape(x, [n, c, o, k]), [0, 2, 1, 3])
        return lt.reshape(rows, [n * o, c * k])
    (oh, ow), (kh, kw) = out_sizes, kernel
    rows = lt.permute(lt.reshape(x, [n, c, oh, kh, ow, kw]), [0, 2, 4, 1, 3, 5])
    return lt.reshape(rows, [n * oh * ow, c * kh * kw])


def _channels_first(rows, n, out_sizes, channels):
    """Rows [N * prod(out), channels] as [N, channels, *out]."""
    spatial = len(out_sizes)
    y = lt.reshape(rows, [n, *out_sizes, channels])
    return lt.permute(y, [0, spatial + 1, *range(1, spatial + 1)])


def _channels_last_rows(g):
    """g [N, O, *out] as rows [N * prod(out), O]."""
    spatial = g.dim() - 2
    rows = lt.permute(g, [0, *range(2, spatial + 2), 1])
    return lt.reshape(rows, [-1, g.shape[1]])


@register(aten.convolution.default, unsupported=_not_a_patch_convolution)
def convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    out_sizes = _patch_geometry(x.shape, weight.shape, stride, padding, dilation, transposed, groups)
    kernel = list(weight.shape[2:])
    out_channels = weight.shape[0]
    w = lt.reshape(weight, [out_channels, -1])
    rows = lt.matmul(_patches(x, kernel, out_sizes), lt.transpose(w, 0, 1))
    if bias is not None:
        rows = rows + bias
    return _channels_first(rows, x.shape[0], out_sizes, out_channels)


@register(aten.convolution_backward.default, unsupported=_not_a_patch_convolution)
def convolution_backward(grad_output, x, weight, bias_sizes, stride, padding, dilation, transposed, output_padding,
                         groups, output_mask):
    """(grad_input, grad_weight, grad_bias), None where output_mask is False."""
    out_sizes = _patch_geometry(x.shape, weight.shape, stride, padding, dilation, transposed, groups)
    kernel = list(weight.shape[2:])
    out_channels = weight.shape[0]
    g = _channels_last_rows(grad_output)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        grad_input = _unpatch(lt.matmul(g, lt.reshape(weight, [out_channels, -1])), x, kernel, out_sizes)
    if output_mask[1]:
        patches = _patches(x, kernel, out_sizes)
        grad_weight = lt.reshape(lt.matmul(lt.transpose(g, 0, 1), patches), list(weight.shape))
    if output_mask[2]:
        grad_bias = lt.sum(g, [0])
    return grad_input, grad_weight, grad_bias


def _unpatch(rows, x, kernel, out_sizes):
    """Patch rows [N * prod(out), C * prod(kernel)] back to x's layout
    [N, C, *spatial], zeros where no patch reached (the remainder)."""
    n, c = x.shape[0], x.shape[1]
    if len(kernel) == 1:
        (o,), (k,) = out_sizes, kernel
        y = lt.reshape(lt.permute(lt.reshape(rows, [n, o, c, k]), [0, 2, 1, 3]), [n, c, o * k])
    else:
        (oh, ow), (kh, kw) = out_sizes, kernel
        y = lt.permute(lt.reshape(rows, [n, oh, ow, c, kh, kw]), [0, 3, 1, 4, 2, 5])
        y = lt.reshape(y, [n, c, oh * kh, ow * kw])
    for dim, (covered, size) in enumerate(zip(y.shape[2:], x.shape[2:]), start=2):
        if covered < size:
            shape = list(y.shape)
            shape[dim] = size - covered
            y = lt.cat([y, lt.zeros(shape, dtype=y.dtype)], dim)
    return y.to(x.dtype) if y.dtype != x.dtype else y
