#!/usr/bin/env -S /usr/bin/python3
"""Generates the golden data of tests/tensor/ops_golden_test.cpp: one table of op cases
(ggml's test-backend-ops style), each run through PyTorch forward and backward.

For every case:
  * inputs: seeded random tensors (float32; int64/int32 where an op needs indices; bool masks),
    the seed derived from the case name, so adding a case never changes another one;
  * out = op(inputs, attrs), computed by PyTorch;
  * when out is floating point and some input is differentiable: a fixed seeded random tensor R of
    out's shape, and grad_i = d sum(out * R) / d input_i for each differentiable input.
Tensors go to tests/golden/ops.safetensors as "<case>.in0", "<case>.in1", ..., "<case>.out",
"<case>.r", "<case>.grad0", ... (grad<i> belongs to in<i>); the case table goes to
tests/golden/ops.json: [{"name", "op", "attrs", "inputs": [{"dtype", "shape", "grad"}], "out",
"backward"}]. Doubles that JSON cannot hold (inf) are written as the strings "inf"/"-inf".

The op names are the keys of the C++ test's op table (tests/tensor/ops_golden_test.cpp), one per
overload of src/tensor/ops.h: "add" is add(Tensor, Tensor, alpha), "add_scalar" add(Tensor, double),
"op_add" operator+(Tensor, Tensor), ...

Regenerate (from the repository root), with torch 2.13 in a venv (the cases from sigmoid on
need it: F.rms_norm, scale= of scaled_dot_product_attention):
    python3 -m venv /work/venv-torch && /work/venv-torch/bin/pip install torch==2.13.0 numpy
    /work/venv-torch/bin/python tools/make_golden_ops.py
"""
import json
import os
import sys
import zlib

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import NAMES, save_file  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "tests", "golden")

TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
                "int32": torch.int32, "int64": torch.int64, "bool": torch.bool}


# ---------------------------------------------------------------------------------------------
# Input makers. Each returns a function of a torch.Generator, so every case draws from its own
# stream. `grad` says whether the input is differentiable (floating inputs default to True).
# ---------------------------------------------------------------------------------------------
class Input:
    def __init__(self, make, grad=None):
        self.make = make
        self.grad = grad


def randn(*shape, scale=1.0, grad=None):
    return Input(lambda g: torch.randn(shape, generator=g) * scale, grad)


def uniform(lo, hi, *shape, grad=None):
    return Input(lambda g: torch.rand(shape, generator=g) * (hi - lo) + lo, grad)


def positive(*shape, lo=0.1, hi=3.0, grad=None):
    return uniform(lo, hi, *shape, grad=grad)


def away_from_zero(*shape, lo=0.5, hi=2.0, grad=None):
    """|x| in [lo, hi) with a random sign (denominators, pow with negative bases)."""
    def make(g):
        mag = torch.rand(shape, generator=g) * (hi - lo) + lo
        sign = torch.where(torch.rand(shape, generator=g) < 0.5, -1.0, 1.0)
        return mag * sign
    return Input(make, grad)


def steps(*shape, lo=-3, hi=3, scale=0.5, grad=None):
    """Floats on a coarse grid (k * scale): ties and exact zeros are likely."""
    return Input(lambda g: torch.randint(lo, hi + 1, shape, generator=g).float() * scale, grad)


def with_zeros(*shape, grad=None):
    """randn with about a quarter of the entries exactly 0 (relu/abs at their kink)."""
    def make(g):
        x = torch.randn(shape, generator=g)
        return torch.where(torch.rand(shape, generator=g) < 0.25, torch.zeros(()), x)
    return Input(make, grad)


def ints(lo, hi, *shape, dtype=torch.int64):
    return Input(lambda g: torch.randint(lo, hi, shape, generator=g).to(dtype), False)


def mask(*shape, p=0.5):
    return Input(lambda g: torch.rand(shape, generator=g) < p, False)


def attn_mask_bool(*shape, p=0.6):
    """A bool attention mask (True = attend) with key 0 always kept: no row is fully masked."""
    def make(g):
        m = torch.rand(shape, generator=g) < p
        m[..., 0] = True
        return m
    return Input(make, False)


def const(values, dtype=torch.float32, grad=None):
    return Input(lambda g: torch.tensor(values, dtype=dtype), grad)


def targets(n, classes, ignored=(), ignore_index=-100):
    """Class indices [n] with the positions in `ignored` set to ignore_index."""
    def make(g):
        t = torch.randint(0, classes, (n,), generator=g)
        for i in ignored:
            t[i] = ignore_index
        return t
    return Input(make, False)


# ---------------------------------------------------------------------------------------------
# PyTorch implementations, keyed like the C++ op table. f(inputs, attrs) -> tensor.
# ---------------------------------------------------------------------------------------------
def num(v):
    return float(v)  # also parses the strings "inf" / "-inf"


def scalar(x, v):
    """The Python number a case's "value" stands for: an integral value beside an integer tensor
    as a Python int (keeps the tensor's dtype), any other as a Python float (an integer tensor
    promotes to float32). The C++ runner (tests/support/golden_ops.cpp scalar()) passes the
    same kind of Scalar (tensor/type_promotion.h)."""
    v = num(v)
    return int(v) if not x.is_floating_point() and v.is_integer() else v


def dt(name):
    return TORCH_DTYPES[name]


def slice_op(x, a):
    d = a["dim"] % x.dim()
    index = [slice(None)] * x.dim()
    index[d] = slice(a["start"], a["end"], a.get("step", 1))
    return x[tuple(index)]


def reduce_dims(x, a):
    return a["dims"] if a["dims"] else list(range(x.dim()))


def to_dtype_chain(x, a):
    for name in a["dtypes"]:
        x = x.to(dt(name))
    return x


def layer_norm(i, a):
    w = i[1] if len(i) > 1 else None
    b = i[2] if len(i) > 2 else None
    return F.layer_norm(i[0], a["normalized_shape"], w, b, a["eps"])


def flat_cat(parts):
    """The pieces of split/chunk as one tensor: each flattened, concatenated in order."""
    return torch.cat([p.reshape(-1) for p in parts])


def rms_norm(i, a):
    return F.rms_norm(i[0], a["normalized_shape"], i[1] if len(i) > 1 else None, eps=a.get("eps"))


def sdpa(i, a):
    return F.scaled_dot_product_attention(i[0], i[1], i[2], attn_mask=i[3] if len(i) > 3 else None,
                                          is_causal=a.get("is_causal", False), scale=a.get("scale"))


OPS = {
    # creation
    "zeros": lambda i, a: torch.zeros(a["shape"], dtype=dt(a.get("dtype", "float32"))),
    "ones": lambda i, a: torch.ones(a["shape"], dtype=dt(a.get("dtype", "float32"))),
    "full": lambda i, a: torch.full(a["shape"], num(a["value"]), dtype=dt(a.get("dtype", "float32"))),
    "arange": lambda i, a: torch.arange(a["start"], a["end"], a["step"], dtype=dt(a.get("dtype", "int64"))),
    "arange_end": lambda i, a: torch.arange(a["end"], dtype=dt(a.get("dtype", "int64"))),
    "scalar_tensor": lambda i, a: torch.scalar_tensor(num(a["value"]), dtype=dt(a.get("dtype", "float32"))),
    "from_vector_f32": lambda i, a: i[0].clone(),
    "from_vector_i64": lambda i, a: i[0].clone(),
    "from_buffer": lambda i, a: i[0].clone(),
    # elementwise binary
    "add": lambda i, a: torch.add(i[0], i[1], alpha=a["alpha"]) if "alpha" in a else torch.add(i[0], i[1]),
    "sub": lambda i, a: torch.sub(i[0], i[1], alpha=a["alpha"]) if "alpha" in a else torch.sub(i[0], i[1]),
    "mul": lambda i, a: torch.mul(i[0], i[1]),
    "div": lambda i, a: torch.div(i[0], i[1]),
    "maximum": lambda i, a: torch.maximum(i[0], i[1]),
    "minimum": lambda i, a: torch.minimum(i[0], i[1]),
    "add_scalar": lambda i, a: torch.add(i[0], scalar(i[0], a["value"])),
    "sub_scalar": lambda i, a: torch.sub(i[0], scalar(i[0], a["value"])),
    "mul_scalar": lambda i, a: torch.mul(i[0], scalar(i[0], a["value"])),
    "div_scalar": lambda i, a: torch.div(i[0], scalar(i[0], a["value"])),
    "pow": lambda i, a: torch.pow(i[0], num(a["exponent"])),
    # elementwise unary
    "neg": lambda i, a: torch.neg(i[0]),
    "exp": lambda i, a: torch.exp(i[0]),
    "log": lambda i, a: torch.log(i[0]),
    "sqrt": lambda i, a: torch.sqrt(i[0]),
    "rsqrt": lambda i, a: torch.rsqrt(i[0]),
    "tanh": lambda i, a: torch.tanh(i[0]),
    "erf": lambda i, a: torch.erf(i[0]),
    "abs": lambda i, a: torch.abs(i[0]),
    "relu": lambda i, a: torch.relu(i[0]),
    "gelu": lambda i, a: F.gelu(i[0], approximate="none"),
    "gelu_tanh": lambda i, a: F.gelu(i[0], approximate="tanh"),
    "sigmoid": lambda i, a: torch.sigmoid(i[0]),
    "silu": lambda i, a: F.silu(i[0]),
    "sin": lambda i, a: torch.sin(i[0]),
    "cos": lambda i, a: torch.cos(i[0]),
    "clamp": lambda i, a: torch.clamp(i[0], min=scalar(i[0], a["min"]) if "min" in a else None,
                                      max=scalar(i[0], a["max"]) if "max" in a else None),
    # comparisons and logic
    "eq": lambda i, a: torch.eq(i[0], i[1]),
    "ne": lambda i, a: torch.ne(i[0], i[1]),
    "lt": lambda i, a: torch.lt(i[0], i[1]),
    "le": lambda i, a: torch.le(i[0], i[1]),
    "gt": lambda i, a: torch.gt(i[0], i[1]),
    "ge": lambda i, a: torch.ge(i[0], i[1]),
    "eq_scalar": lambda i, a: torch.eq(i[0], scalar(i[0], a["value"])),
    "ne_scalar": lambda i, a: torch.ne(i[0], scalar(i[0], a["value"])),
    "lt_scalar": lambda i, a: torch.lt(i[0], scalar(i[0], a["value"])),
    "gt_scalar": lambda i, a: torch.gt(i[0], scalar(i[0], a["value"])),
    "logical_and": lambda i, a: torch.logical_and(i[0], i[1]),
    "logical_or": lambda i, a: torch.logical_or(i[0], i[1]),
    "logical_not": lambda i, a: torch.logical_not(i[0]),
    "where": lambda i, a: torch.where(i[0], i[1], i[2]),
    "masked_fill": lambda i, a: i[0].masked_fill(i[1], num(a["value"])),
    "to_dtype": lambda i, a: to_dtype_chain(i[0], a),
    # matmul
    "matmul": lambda i, a: torch.matmul(i[0], i[1]),
    # reductions
    "sum": lambda i, a: torch.sum(i[0], dim=reduce_dims(i[0], a), keepdim=a["keepdim"]),
    "mean": lambda i, a: torch.mean(i[0], dim=reduce_dims(i[0], a), keepdim=a["keepdim"]),
    "amax": lambda i, a: torch.amax(i[0], dim=reduce_dims(i[0], a), keepdim=a["keepdim"]),
    "argmax": lambda i, a: torch.argmax(i[0], dim=a["dim"], keepdim=a["keepdim"]),
    "cumsum": lambda i, a: torch.cumsum(i[0], a["dim"]),
    "topk": lambda i, a: torch.topk(i[0], a["k"], dim=a.get("dim", -1), largest=a.get("largest", True)).values,
    "topk_indices": lambda i, a: torch.topk(i[0], a["k"], dim=a.get("dim", -1), largest=a.get("largest", True)).indices,
    # views and data movement
    "reshape": lambda i, a: i[0].reshape(a["shape"]),
    "view": lambda i, a: i[0].view(a["shape"]),
    "transpose": lambda i, a: i[0].transpose(a["dim0"], a["dim1"]),
    "permute": lambda i, a: i[0].permute(a["dims"]),
    "unsqueeze": lambda i, a: i[0].unsqueeze(a["dim"]),
    "squeeze": lambda i, a: i[0].squeeze(a["dim"]),
    "expand": lambda i, a: i[0].expand(a["shape"]),
    "slice": lambda i, a: slice_op(i[0], a),
    "cat": lambda i, a: torch.cat(list(i), a["dim"]),
    "index_select": lambda i, a: torch.index_select(i[0], a["dim"], i[1]),
    "stack": lambda i, a: torch.stack(list(i), a["dim"]),
    "split": lambda i, a: flat_cat(torch.split(i[0], a["split_size"], a["dim"])),
    "split_sections": lambda i, a: flat_cat(torch.split(i[0], a["sections"], a["dim"])),
    "chunk": lambda i, a: flat_cat(torch.chunk(i[0], a["chunks"], a["dim"])),
    "tril": lambda i, a: torch.tril(i[0], a.get("diagonal", 0)),
    "triu": lambda i, a: torch.triu(i[0], a.get("diagonal", 0)),
    "repeat_interleave": lambda i, a: torch.repeat_interleave(i[0], a["repeats"], dim=a.get("dim")),
    "gather": lambda i, a: torch.gather(i[0], a["dim"], i[1]),
    "scatter_add": lambda i, a: torch.scatter_add(i[0], a["dim"], i[1], i[2]),
    # nn functions
    "embedding": lambda i, a: F.embedding(i[1], i[0], padding_idx=a.get("padding_idx")),
    "softmax": lambda i, a: torch.softmax(i[0], a["dim"]),
    "logsumexp": lambda i, a: torch.logsumexp(i[0], dim=reduce_dims(i[0], a), keepdim=a["keepdim"]),
    "log_softmax": lambda i, a: torch.log_softmax(i[0], a["dim"]),
    "layer_norm": layer_norm,
    "dropout": lambda i, a: F.dropout(i[0], a["p"], training=a["training"]),
    "rms_norm": rms_norm,
    "sdpa": sdpa,
    "cross_entropy": lambda i, a: F.cross_entropy(i[0], i[1], ignore_index=a.get("ignore_index", -100)),
    "linear": lambda i, a: F.linear(i[0], i[1], i[2] if len(i) > 2 else None),
    # operators
    "op_add": lambda i, a: i[0] + i[1],
    "op_sub": lambda i, a: i[0] - i[1],
    "op_mul": lambda i, a: i[0] * i[1],
    "op_div": lambda i, a: i[0] / i[1],
    "op_add_scalar": lambda i, a: i[0] + scalar(i[0], a["value"]),
    "op_sub_scalar": lambda i, a: i[0] - scalar(i[0], a["value"]),
    "op_mul_scalar": lambda i, a: i[0] * scalar(i[0], a["value"]),
    "op_div_scalar": lambda i, a: i[0] / scalar(i[0], a["value"]),
    "op_radd_scalar": lambda i, a: scalar(i[0], a["value"]) + i[0],
    "op_rsub_scalar": lambda i, a: scalar(i[0], a["value"]) - i[0],
    "op_rmul_scalar": lambda i, a: scalar(i[0], a["value"]) * i[0],
    "op_neg": lambda i, a: -i[0],
}


# ---------------------------------------------------------------------------------------------
# The case table.
# ---------------------------------------------------------------------------------------------
CASES = []


def case(name, op, inputs=(), **attrs):
    assert op in OPS, op
    assert all(c["name"] != name for c in CASES), f"duplicate case {name}"
    CASES.append({"name": name, "op": op, "inputs": list(inputs), "attrs": attrs})


# creation
case("zeros_2d", "zeros", shape=[2, 3])
case("zeros_i64", "zeros", shape=[4], dtype="int64")
case("ones_3d", "ones", shape=[2, 1, 3])
case("ones_bool", "ones", shape=[3], dtype="bool")
case("full_2d", "full", shape=[3, 2], value=-2.5)
case("full_scalar", "full", shape=[], value=7.0)
case("full_neg_inf", "full", shape=[2, 2], value="-inf")
case("full_i64", "full", shape=[5], value=3.0, dtype="int64")
case("arange_step", "arange", start=2, end=17, step=3)
case("arange_negative_step", "arange", start=5, end=-6, step=-2)
case("arange_float", "arange", start=-3, end=4, step=1, dtype="float32")
case("arange_end", "arange_end", end=7)
case("arange_end_float", "arange_end", end=5, dtype="float32")
case("scalar_tensor_f32", "scalar_tensor", value=0.125)
case("scalar_tensor_i64", "scalar_tensor", value=-9.0, dtype="int64")
case("from_vector_f32", "from_vector_f32", [randn(3, 4, grad=False)])
case("from_vector_i64", "from_vector_i64", [ints(-50, 50, 2, 5)])
case("from_buffer_bool", "from_buffer", [mask(2, 3)])
case("zeros_empty", "zeros", shape=[0, 3])
case("arange_empty", "arange", start=4, end=4, step=1)

# arithmetic with broadcasting
case("add_same", "add", [randn(3, 4), randn(3, 4)])
case("add_broadcast_row_col", "add", [randn(3, 1), randn(1, 4)])
case("add_broadcast_rank", "add", [randn(2, 3, 4), randn(4)])
case("add_scalar_tensor", "add", [randn(2, 3), randn()])
case("add_alpha", "add", [randn(3, 4), randn(3, 4)], alpha=0.5)
case("add_alpha_broadcast", "add", [randn(4), randn(2, 3, 4)], alpha=-2.0)
case("add_i64", "add", [ints(-9, 9, 3, 4), ints(-9, 9, 4)])
case("add_i64_f32_promote", "add", [ints(-9, 9, 3, 4), randn(3, 4)])
case("sub_same", "sub", [randn(3, 4), randn(3, 4)])
case("sub_broadcast", "sub", [randn(2, 1, 4), randn(3, 1)])
case("sub_alpha", "sub", [randn(3, 4), randn(1, 4)], alpha=3.0)
case("mul_same", "mul", [randn(3, 4), randn(3, 4)])
case("mul_broadcast", "mul", [randn(3, 1), randn(1, 4)])
case("mul_broadcast_rank", "mul", [randn(2, 3, 4), randn(3, 1)])
case("mul_one_side_grad", "mul", [randn(3, 4), randn(3, 4, grad=False)])
case("mul_same_input_twice", "mul", [randn(5)], args=[0, 0])
case("div_same", "div", [randn(3, 4), away_from_zero(3, 4)])
case("div_broadcast", "div", [randn(2, 3, 4), away_from_zero(4)])
case("div_broadcast_numerator", "div", [randn(1, 4), away_from_zero(3, 1)])
case("div_i64_true_division", "div", [ints(-20, 20, 6), const([3, -4, 7, 2, -5, 6], torch.int64)])
case("maximum", "maximum", [randn(3, 4), randn(3, 4)])
case("maximum_broadcast", "maximum", [randn(3, 1), randn(1, 4)])
case("maximum_ties", "maximum", [steps(4, 5), steps(4, 5)])
case("minimum", "minimum", [randn(3, 4), randn(3, 4)])
case("minimum_broadcast", "minimum", [randn(2, 3, 4), randn(4)])
case("minimum_ties", "minimum", [steps(4, 5), steps(4, 5)])

# scalar variants
case("add_scalar", "add_scalar", [randn(3, 4)], value=1.5)
case("add_scalar_i64_float", "add_scalar", [ints(-5, 5, 6)], value=2.5)
case("add_scalar_i64_int", "add_scalar", [ints(-5, 5, 6)], value=3.0)
case("sub_scalar", "sub_scalar", [randn(3, 4)], value=-0.75)
case("mul_scalar", "mul_scalar", [randn(3, 4)], value=-3.0)
case("mul_scalar_i64", "mul_scalar", [ints(-5, 5, 6)], value=3.0)
case("div_scalar", "div_scalar", [randn(3, 4)], value=8.0)
case("div_scalar_i64", "div_scalar", [ints(-9, 9, 6)], value=4.0)
case("mul_scalar_i64_fraction", "mul_scalar", [ints(-5, 5, 6)], value=0.5)
case("add_scalar_bool", "add_scalar", [mask(6)], value=1.0)
case("pow_square", "pow", [randn(3, 4)], exponent=2.0)
case("pow_cube", "pow", [randn(3, 4)], exponent=3.0)
case("pow_sqrt", "pow", [positive(3, 4)], exponent=0.5)
case("pow_negative_fraction", "pow", [positive(3, 4)], exponent=-1.5)
case("pow_zero_exponent", "pow", [with_zeros(3, 4)], exponent=0.0)
case("pow_one_exponent", "pow", [with_zeros(3, 4)], exponent=1.0)
case("pow_i64_float_exponent", "pow", [ints(1, 9, 5)], exponent=0.5)

# unary
case("neg", "neg", [randn(3, 4)])
case("neg_i64", "neg", [ints(-9, 9, 5)])
case("exp", "exp", [randn(3, 4)])
case("exp_large_range", "exp", [uniform(-20, 20, 40)])
case("log", "log", [positive(3, 4, lo=0.01, hi=10.0)])
case("sqrt", "sqrt", [positive(3, 4)])
case("rsqrt", "rsqrt", [positive(3, 4)])
case("tanh", "tanh", [randn(3, 4, scale=2.0)])
case("erf", "erf", [randn(3, 4, scale=1.5)])
case("abs", "abs", [with_zeros(4, 5)])
case("abs_i64", "abs", [ints(-9, 9, 6)])
case("relu", "relu", [with_zeros(4, 5)])
case("gelu", "gelu", [randn(4, 5, scale=2.0)])
case("gelu_wide_range", "gelu", [uniform(-8, 8, 64)])
case("gelu_tanh", "gelu_tanh", [randn(4, 5, scale=2.0)])
case("gelu_tanh_wide_range", "gelu_tanh", [uniform(-8, 8, 64)])

# comparisons (forward only; bool outputs)
for op in ["eq", "ne", "lt", "le", "gt", "ge"]:
    case(f"{op}_ties", op, [steps(4, 5, lo=-2, hi=2), steps(4, 5, lo=-2, hi=2)])
    case(f"{op}_broadcast", op, [steps(3, 1, lo=-2, hi=2), steps(1, 4, lo=-2, hi=2)])
case("eq_i64", "eq", [ints(0, 3, 8), ints(0, 3, 8)])
case("lt_i64_f32_promote", "lt", [ints(-2, 3, 3, 4), steps(4, lo=-2, hi=2)])
case("ge_bool", "ge", [mask(6), mask(6)])
case("eq_scalar", "eq_scalar", [steps(4, 5)], value=0.5)
case("eq_scalar_i64", "eq_scalar", [ints(0, 4, 10)], value=2.0)
case("ne_scalar", "ne_scalar", [steps(4, 5)], value=0.0)
case("ne_scalar_i64_ignore_index", "ne_scalar", [const([3, -100, 0, -100, 7], torch.int64)], value=-100.0)
case("lt_scalar", "lt_scalar", [randn(4, 5)], value=0.25)
case("gt_scalar", "gt_scalar", [randn(4, 5)], value=-0.25)
case("gt_scalar_i64_fraction", "gt_scalar", [ints(-3, 4, 8)], value=0.5)
case("logical_and", "logical_and", [mask(4, 5), mask(4, 5)])
case("logical_and_broadcast", "logical_and", [mask(3, 1), mask(1, 4)])
case("logical_and_float", "logical_and", [steps(6, lo=-1, hi=1, grad=False), steps(6, lo=-1, hi=1, grad=False)])
case("logical_or", "logical_or", [mask(4, 5, p=0.3), mask(4, 5, p=0.3)])
case("logical_or_broadcast", "logical_or", [mask(2, 3, 1), mask(4)])
case("logical_not", "logical_not", [mask(4, 5)])
case("logical_not_i64", "logical_not", [ints(-1, 2, 7)])

# where / masked_fill / casts
case("where", "where", [mask(3, 4), randn(3, 4), randn(3, 4)])
case("where_broadcast", "where", [mask(3, 1), randn(1, 4), randn(3, 4)])
case("where_scalar_branch", "where", [mask(2, 3), randn(2, 3), randn()])
case("where_i64", "where", [mask(2, 3), ints(-9, 9, 2, 3), ints(-9, 9, 1, 3)])
case("where_promote_i64_f32", "where", [mask(2, 3), ints(-9, 9, 2, 3), randn(2, 3)])
case("masked_fill", "masked_fill", [randn(4, 5), mask(4, 5)], value=-1e4)
case("masked_fill_broadcast", "masked_fill", [randn(2, 3, 4), mask(3, 1)], value=0.0)
case("masked_fill_neg_inf", "masked_fill", [randn(2, 2, 3, 3), mask(2, 1, 1, 3)], value="-inf")
case("masked_fill_i64", "masked_fill", [ints(-9, 9, 3, 4), mask(3, 4)], value=-1.0)
case("to_dtype_f32_to_i64", "to_dtype", [uniform(-9.9, 9.9, 4, 5, grad=False)], dtypes=["int64"])
case("to_dtype_f32_to_bf16_to_f32", "to_dtype", [randn(4, 5, scale=3.0)], dtypes=["bfloat16", "float32"])
case("to_dtype_f32_to_f16_to_f32", "to_dtype", [randn(4, 5, scale=3.0)], dtypes=["float16", "float32"])
case("to_dtype_i64_to_f32", "to_dtype", [ints(-1000, 1000, 6)], dtypes=["float32"])
case("to_dtype_bool_to_f32", "to_dtype", [mask(6)], dtypes=["float32"])
case("to_dtype_f32_to_bool", "to_dtype", [steps(8, lo=-1, hi=1, grad=False)], dtypes=["bool"])
case("to_dtype_f32_to_i32_to_i64", "to_dtype", [uniform(-99, 99, 7, grad=False)], dtypes=["int32", "int64"])
case("to_dtype_same", "to_dtype", [randn(3)], dtypes=["float32"])
# Exact ties between two bfloat16 neighbours round to even (c10::BFloat16 rounds to nearest even).
case("to_dtype_bf16_round_to_even", "to_dtype",
     [const([1.0 + 2**-8, 1.0 + 3 * 2**-8, -1.0 - 2**-8, 1.0 + 2**-8 + 2**-20, 3.0e38, 1e-40])],
     dtypes=["bfloat16", "float32"])

# matmul
case("matmul_2d_2d", "matmul", [randn(3, 4), randn(4, 5)])
case("matmul_3d_2d", "matmul", [randn(2, 3, 4), randn(4, 5)])
case("matmul_4d_4d_attention_scores", "matmul", [randn(2, 3, 5, 4), randn(2, 3, 4, 5)])
case("matmul_4d_4d_attention_context", "matmul", [randn(2, 3, 5, 5), randn(2, 3, 5, 4)])
case("matmul_1d_1d", "matmul", [randn(6), randn(6)])
case("matmul_1d_2d", "matmul", [randn(4), randn(4, 3)])
case("matmul_2d_1d", "matmul", [randn(3, 4), randn(4)])
case("matmul_1d_3d", "matmul", [randn(4), randn(2, 4, 3)])
case("matmul_3d_1d", "matmul", [randn(2, 3, 4), randn(4)])
case("matmul_broadcast_batch", "matmul", [randn(2, 1, 3, 4), randn(3, 4, 5)])
case("matmul_broadcast_batch_lhs", "matmul", [randn(3, 4), randn(2, 2, 4, 5)])
case("matmul_one_side_grad", "matmul", [randn(3, 4, grad=False), randn(4, 5)])
case("matmul_larger", "matmul", [randn(48, 96), randn(96, 80)])

# reductions
case("sum_all", "sum", [randn(3, 4)], dims=[], keepdim=False)
case("sum_all_keepdim", "sum", [randn(2, 3, 4)], dims=[], keepdim=True)
case("sum_last", "sum", [randn(3, 4)], dims=[-1], keepdim=False)
case("sum_first_keepdim", "sum", [randn(3, 4)], dims=[0], keepdim=True)
case("sum_middle", "sum", [randn(2, 3, 4)], dims=[1], keepdim=False)
case("sum_outer_two", "sum", [randn(2, 3, 4)], dims=[0, 2], keepdim=True)
case("sum_leading_two", "sum", [randn(2, 3, 4)], dims=[1, 0], keepdim=False)
case("sum_i64", "sum", [ints(-9, 9, 3, 4)], dims=[1], keepdim=False)
case("sum_bool", "sum", [mask(3, 4)], dims=[], keepdim=False)
case("sum_scalar_input", "sum", [randn()], dims=[], keepdim=False)
case("sum_empty_dim", "sum", [randn(0, 3)], dims=[0], keepdim=False)
case("mean_all", "mean", [randn(3, 4)], dims=[], keepdim=False)
case("mean_last_keepdim", "mean", [randn(2, 3, 4)], dims=[-1], keepdim=True)
case("mean_middle", "mean", [randn(2, 3, 4)], dims=[1], keepdim=False)
case("mean_two", "mean", [randn(2, 3, 4)], dims=[0, -1], keepdim=False)
case("amax_last", "amax", [randn(3, 5)], dims=[-1], keepdim=False)
case("amax_first_keepdim", "amax", [randn(3, 5)], dims=[0], keepdim=True)
case("amax_two_dims", "amax", [randn(2, 3, 4)], dims=[0, 2], keepdim=False)
case("amax_ties", "amax", [steps(4, 6, lo=-1, hi=1)], dims=[1], keepdim=True)
case("amax_i64", "amax", [ints(-9, 9, 3, 4)], dims=[0], keepdim=False)
case("amax_bool", "amax", [mask(4, 3, p=0.2)], dims=[1], keepdim=False)
case("argmax_last", "argmax", [randn(3, 5)], dim=-1, keepdim=False)
case("argmax_first_keepdim", "argmax", [randn(4, 3)], dim=0, keepdim=True)
case("argmax_middle", "argmax", [randn(2, 5, 3)], dim=1, keepdim=False)
case("argmax_ties_first", "argmax", [steps(5, 6, lo=0, hi=2)], dim=1, keepdim=False)
case("argmax_i64", "argmax", [ints(0, 3, 4, 5)], dim=1, keepdim=False)

# views and data movement
case("reshape", "reshape", [randn(2, 3, 4)], shape=[6, 4])
case("reshape_infer", "reshape", [randn(2, 3, 4)], shape=[4, -1])
case("reshape_to_scalar", "reshape", [randn(1, 1)], shape=[])
case("reshape_same", "reshape", [randn(2, 3)], shape=[2, 3])
case("view_infer_first", "view", [randn(2, 3, 4)], shape=[-1, 2, 2])
case("view_split_heads", "view", [randn(2, 5, 12)], shape=[2, 5, 3, 4])
case("transpose_2d", "transpose", [randn(3, 4)], dim0=0, dim1=1)
case("transpose_negative", "transpose", [randn(2, 3, 4, 5)], dim0=-1, dim1=-2)
case("transpose_outer", "transpose", [randn(2, 3, 4)], dim0=0, dim1=2)
case("transpose_1d", "transpose", [randn(4)], dim0=0, dim1=0)
case("permute_heads", "permute", [randn(2, 5, 3, 4)], dims=[0, 2, 1, 3])
case("permute_reverse", "permute", [randn(2, 3, 4)], dims=[2, 1, 0])
case("permute_negative", "permute", [randn(2, 3, 4)], dims=[-1, 0, 1])
case("unsqueeze_front", "unsqueeze", [randn(3, 4)], dim=0)
case("unsqueeze_back_negative", "unsqueeze", [randn(3, 4)], dim=-1)
case("unsqueeze_middle", "unsqueeze", [randn(3, 4)], dim=1)
case("unsqueeze_scalar", "unsqueeze", [randn()], dim=0)
case("squeeze", "squeeze", [randn(3, 1, 4)], dim=1)
case("squeeze_negative", "squeeze", [randn(3, 4, 1)], dim=-1)
case("squeeze_not_one", "squeeze", [randn(3, 4)], dim=0)
case("expand_rows", "expand", [randn(1, 4)], shape=[3, 4])
case("expand_keep_minus_one", "expand", [randn(3, 1)], shape=[-1, 5])
case("expand_new_leading", "expand", [randn(3, 1)], shape=[2, 3, 4])
case("expand_mask", "expand", [mask(2, 1, 1, 4)], shape=[2, 3, 4, 4])
case("expand_scalar", "expand", [randn()], shape=[2, 3])
case("slice_step", "slice", [randn(7, 3)], dim=0, start=1, end=7, step=2)
case("slice_step_uneven", "slice", [randn(3, 10)], dim=1, start=0, end=10, step=3)
case("slice_step_partial", "slice", [randn(3, 10)], dim=-1, start=2, end=8, step=4)
case("slice_negative_start", "slice", [randn(6, 4)], dim=0, start=-3, end=100)
case("slice_middle", "slice", [randn(2, 8, 3)], dim=1, start=2, end=5)
case("slice_clamped_end", "slice", [randn(4, 6)], dim=1, start=4, end=50, step=1)
case("slice_i64", "slice", [ints(0, 100, 10)], dim=0, start=1, end=9, step=2)
case("slice_empty", "slice", [randn(4, 3)], dim=0, start=3, end=1)
case("slice_negative_end", "slice", [randn(3, 9)], dim=1, start=1, end=-1, step=3)
case("cat_dim0", "cat", [randn(2, 3), randn(4, 3)], dim=0)
case("cat_dim1_three", "cat", [randn(2, 1), randn(2, 3), randn(2, 2)], dim=1)
case("cat_negative_dim", "cat", [randn(2, 3, 2), randn(2, 3, 1)], dim=-1)
case("cat_partial_grad", "cat", [randn(2, 3), randn(2, 3, grad=False), randn(1, 3)], dim=0)
case("cat_promote_i64", "cat", [randn(2, 3), ints(-5, 5, 1, 3)], dim=0)
case("cat_single", "cat", [randn(2, 3)], dim=1)
case("cat_with_empty", "cat", [randn(2, 3), randn(0, 3), randn(1, 3)], dim=0)
case("index_select_rows", "index_select", [randn(5, 3), const([4, 0, 2], torch.int64)], dim=0)
case("index_select_repeated", "index_select", [randn(5, 3), ints(0, 5, 8)], dim=0)
case("index_select_dim1", "index_select", [randn(3, 6), const([5, 1, 1, 0], torch.int64)], dim=1)
case("index_select_3d_last", "index_select", [randn(2, 3, 4), const([3, 0, 3], torch.int64)], dim=-1)
case("index_select_i32", "index_select", [randn(6, 2), const([1, 5, 1], torch.int32)], dim=0)

# nn functions
case("embedding", "embedding", [randn(10, 4), ints(0, 10, 2, 5)])
case("embedding_repeats", "embedding", [randn(4, 3), const([[0, 1, 1, 3], [3, 3, 0, 2]], torch.int64)])
case("embedding_1d_i32", "embedding", [randn(6, 5), const([5, 0, 2, 2], torch.int32)])
case("embedding_padding_idx", "embedding", [randn(6, 3), const([[0, 1, 0, 5], [2, 0, 4, 1]], torch.int64)],
     padding_idx=0)
case("softmax_last", "softmax", [randn(3, 7, scale=2.0)], dim=-1)
case("softmax_first", "softmax", [randn(4, 3)], dim=0)
case("softmax_middle", "softmax", [randn(2, 5, 3)], dim=1)
case("softmax_attention", "softmax", [randn(2, 2, 4, 4, scale=3.0)], dim=-1)
case("softmax_large_values", "softmax", [randn(4, 6, scale=50.0)], dim=1)
case("softmax_large_64x1000", "softmax", [randn(64, 1000, scale=3.0)], dim=-1)
case("logsumexp_last", "logsumexp", [randn(3, 7, scale=2.0)], dims=[-1], keepdim=False)
case("logsumexp_first_keepdim", "logsumexp", [randn(4, 3)], dims=[0], keepdim=True)
case("logsumexp_two_dims", "logsumexp", [randn(2, 3, 4)], dims=[0, 2], keepdim=False)
case("logsumexp_all", "logsumexp", [randn(3, 4, scale=3.0)], dims=[], keepdim=False)
# Rows longer than the CPU kernel's 2048-element chunks, with a large spread: the
# running sum is rescaled whenever a later chunk holds a new maximum.
case("logsumexp_wide_rows", "logsumexp", [randn(3, 5000, scale=20.0)], dims=[1], keepdim=True)
case("logsumexp_infinities", "logsumexp",
     [const([[float("-inf"), float("-inf"), float("-inf")], [float("inf"), 1.0, float("-inf")],
             [float("-inf"), 2.0, 3.0], [float("nan"), 0.0, float("inf")]], grad=False)], dims=[1], keepdim=False)
case("log_softmax_large_offset", "log_softmax", [uniform(1e6, 1e6 + 4.0, 3, 7)], dim=-1)
# A fully masked attention row (scores + finfo.min, as Hugging Face masks): uniform, not all ones.
case("softmax_masked_row", "softmax",
     [const([[-3.4e38, -3.4e38, -3.4e38, -3.4e38, -3.4e38], [0.5, -3.4e38, 1.0, -3.4e38, 2.0]])], dim=-1)
case("log_softmax_last", "log_softmax", [randn(3, 7, scale=2.0)], dim=-1)
case("log_softmax_first", "log_softmax", [randn(4, 3)], dim=0)
case("log_softmax_middle", "log_softmax", [randn(2, 5, 3)], dim=1)
case("log_softmax_large_values", "log_softmax", [randn(4, 6, scale=50.0)], dim=-1)
case("layer_norm_eps_1e12", "layer_norm", [randn(3, 8, scale=2.0), randn(8), randn(8)],
     normalized_shape=[8], eps=1e-12)
case("layer_norm_eps_1e5", "layer_norm", [randn(2, 3, 6), randn(6), randn(6)], normalized_shape=[6], eps=1e-5)
case("layer_norm_two_dims", "layer_norm", [randn(2, 3, 4), randn(3, 4), randn(3, 4)],
     normalized_shape=[3, 4], eps=1e-5)
case("layer_norm_offset_rows", "layer_norm", [uniform(4.0, 6.0, 4, 16), randn(16), randn(16)],
     normalized_shape=[16], eps=1e-12)
case("layer_norm_no_affine", "layer_norm", [randn(3, 5)], normalized_shape=[5], eps=1e-5)
case("dropout_eval", "dropout", [randn(3, 4)], p=0.1, training=False)
case("dropout_eval_p_half", "dropout", [randn(2, 3, 4)], p=0.5, training=False)
case("dropout_p_zero_training", "dropout", [randn(3, 4)], p=0.0, training=True)
case("cross_entropy", "cross_entropy", [randn(5, 7), targets(5, 7)])
case("cross_entropy_ignore_index", "cross_entropy", [randn(8, 6, scale=2.0), targets(8, 6, ignored=[1, 4, 5])])
case("cross_entropy_custom_ignore", "cross_entropy", [randn(6, 4), const([0, 2, 3, 2, 1, 2], torch.int64)],
     ignore_index=2)
case("cross_entropy_1d", "cross_entropy", [randn(9), const(4, torch.int64)])
case("cross_entropy_large_64x1000", "cross_entropy",
     [randn(64, 1000, scale=2.0), targets(64, 1000, ignored=[0, 7, 13, 21, 40, 63])])
# A batch without a single target (an MLM batch with no masked token): the loss is NaN (0/0)
# but the gradient is 0, not NaN, so one such batch does not poison the weights.
case("cross_entropy_wide_rows", "cross_entropy",
     [randn(6, 5000, scale=8.0), targets(6, 5000, ignored=[2])])
# Large logits: the loss must keep its own precision (a logsumexp rounded to f32
# before the target's logit is subtracted would be off by ulp(1e4) = 1e-3, and
# give 0 at 1e7).
case("cross_entropy_large_logits", "cross_entropy", [uniform(1e4, 1e4 + 6.0, 5, 40), targets(5, 40)])
case("cross_entropy_huge_logits", "cross_entropy", [uniform(-1e7 - 6.0, -1e7, 4, 30), targets(4, 30)])
case("cross_entropy_all_ignored", "cross_entropy", [randn(3, 5), targets(3, 5, ignored=[0, 1, 2])])
case("linear", "linear", [randn(4, 3), randn(5, 3), randn(5)])
case("linear_3d", "linear", [randn(2, 4, 6), randn(3, 6), randn(3)])
case("linear_no_bias", "linear", [randn(4, 3), randn(2, 3)])
case("linear_1d_input", "linear", [randn(3), randn(2, 3), randn(2)])

# operators
case("op_add", "op_add", [randn(3, 4), randn(4)])
case("op_sub", "op_sub", [randn(3, 1), randn(3, 4)])
case("op_mul", "op_mul", [randn(3, 4), randn(3, 4)])
case("op_div", "op_div", [randn(3, 4), away_from_zero(3, 1)])
case("op_add_scalar", "op_add_scalar", [randn(3, 4)], value=2.0)
case("op_sub_scalar", "op_sub_scalar", [randn(3, 4)], value=0.5)
case("op_mul_scalar", "op_mul_scalar", [randn(3, 4)], value=-1.25)
case("op_div_scalar", "op_div_scalar", [randn(3, 4)], value=3.0)
case("op_radd_scalar", "op_radd_scalar", [randn(3, 4)], value=-4.0)
case("op_rsub_scalar", "op_rsub_scalar", [randn(3, 4)], value=1.0)
case("op_rmul_scalar", "op_rmul_scalar", [randn(3, 4)], value=0.5)
case("op_neg", "op_neg", [randn(3, 4)])
case("op_rsub_scalar_i64", "op_rsub_scalar", [ints(-9, 9, 5)], value=2.0)
case("op_mul_scalar_i64_fraction", "op_mul_scalar", [ints(-9, 9, 5)], value=1.5)

# Added with torch 2.13 (every case above is unchanged).
# elementwise functions
case("sigmoid", "sigmoid", [randn(4, 5, scale=3.0)])
case("sigmoid_wide_range", "sigmoid", [uniform(-30, 30, 64)])
case("sigmoid_i64", "sigmoid", [ints(-5, 5, 6)])
case("silu", "silu", [randn(4, 5, scale=3.0)])
case("silu_wide_range", "silu", [uniform(-20, 20, 64)])
case("sin", "sin", [randn(4, 5, scale=3.0)])
case("sin_wide_range", "sin", [uniform(-50, 50, 64)])
case("cos", "cos", [randn(4, 5, scale=3.0)])
case("cos_wide_range", "cos", [uniform(-50, 50, 64)])
case("clamp_both", "clamp", [randn(4, 5)], min=-0.5, max=0.75)
# Elements exactly on a bound get the gradient (torch: min <= x <= max).
case("clamp_on_bounds", "clamp", [steps(5, 6)], min=-1.0, max=0.5)
case("clamp_min_only", "clamp", [randn(3, 4)], min=0.25)
case("clamp_max_only", "clamp", [randn(3, 4)], max=-0.25)
case("clamp_min_above_max", "clamp", [randn(3, 4)], min=1.0, max=-1.0)
case("clamp_i64", "clamp", [ints(-9, 9, 8)], min=-3.0, max=4.0)
case("clamp_i64_float_bound", "clamp", [ints(-9, 9, 8)], min=-2.5)

# cumulative sums
case("cumsum_last", "cumsum", [randn(3, 9)], dim=-1)
case("cumsum_first", "cumsum", [randn(5, 3)], dim=0)
case("cumsum_middle", "cumsum", [randn(2, 17, 3)], dim=1)
case("cumsum_long", "cumsum", [randn(2, 300)], dim=1)
case("cumsum_i64", "cumsum", [ints(-9, 9, 4, 6)], dim=1)
case("cumsum_bool", "cumsum", [mask(3, 5)], dim=1)
case("cumsum_size_one", "cumsum", [randn(3, 1)], dim=1)

# triangles, stack, split, chunk, repeat_interleave
case("tril", "tril", [randn(4, 5)])
case("tril_positive_diagonal", "tril", [randn(5, 4)], diagonal=1)
case("tril_batched_negative_diagonal", "tril", [randn(2, 4, 4)], diagonal=-1)
case("tril_bool", "tril", [mask(3, 4, p=0.8)])
case("triu", "triu", [randn(4, 5)])
case("triu_negative_diagonal", "triu", [randn(2, 3, 5, 4)], diagonal=-2)
case("triu_positive_diagonal", "triu", [randn(4, 6)], diagonal=2)
case("stack_dim0", "stack", [randn(2, 3), randn(2, 3), randn(2, 3)], dim=0)
case("stack_middle", "stack", [randn(2, 3), randn(2, 3)], dim=1)
case("stack_last_negative", "stack", [randn(4), randn(4), randn(4, grad=False)], dim=-1)
case("split_uneven", "split", [randn(7, 3)], split_size=3, dim=0)
case("split_last_dim", "split", [randn(2, 8)], split_size=4, dim=-1)
case("split_larger_than_dim", "split", [randn(3, 2)], split_size=5, dim=0)
case("split_sections", "split_sections", [randn(3, 9)], sections=[2, 0, 4, 3], dim=1)
case("chunk_uneven", "chunk", [randn(5, 2)], chunks=3, dim=0)
case("chunk_fewer_pieces", "chunk", [randn(2, 6)], chunks=4, dim=1)
case("repeat_interleave_dim0", "repeat_interleave", [randn(3, 2)], repeats=2, dim=0)
case("repeat_interleave_dim1", "repeat_interleave", [randn(2, 3, 2)], repeats=3, dim=1)
case("repeat_interleave_flat", "repeat_interleave", [randn(2, 3)], repeats=2)
case("repeat_interleave_i64", "repeat_interleave", [ints(0, 9, 4)], repeats=3, dim=0)

# gather / scatter_add / topk
case("gather_dim0", "gather", [randn(4, 3), ints(0, 4, 5, 3)], dim=0)
case("gather_dim1_smaller_index", "gather", [randn(3, 6), ints(0, 6, 2, 4)], dim=1)
case("gather_3d_last", "gather", [randn(2, 3, 5), ints(0, 5, 2, 3, 7)], dim=-1)
case("gather_repeated", "gather", [randn(2, 4), const([[1, 1, 1], [3, 0, 3]], torch.int64)], dim=1)
case("scatter_add_dim0", "scatter_add", [randn(4, 3), ints(0, 4, 6, 3), randn(6, 3)], dim=0)
case("scatter_add_dim1", "scatter_add", [randn(3, 5), ints(0, 5, 3, 4), randn(3, 4)], dim=1)
# torch gives src no gradient of its shape when src is larger than index: forward and x only.
case("scatter_add_src_larger", "scatter_add", [randn(3, 4), ints(0, 4, 2, 3), randn(3, 5, grad=False)], dim=1)
case("scatter_add_repeated", "scatter_add", [randn(5, grad=False), const([0, 2, 2, 4, 2], torch.int64),
                                            randn(5)], dim=0)
case("topk_last", "topk", [randn(3, 10)], k=4)
case("topk_smallest", "topk", [randn(3, 10)], k=3, largest=False)
case("topk_dim0", "topk", [randn(8, 3)], k=2, dim=0)
case("topk_all", "topk", [randn(2, 5)], k=5)
case("topk_indices", "topk_indices", [randn(4, 12)], k=5)
case("topk_indices_smallest_middle", "topk_indices", [randn(2, 9, 3)], k=4, dim=1, largest=False)

# rms_norm
case("rms_norm", "rms_norm", [randn(3, 8, scale=2.0), randn(8)], normalized_shape=[8], eps=1e-6)
case("rms_norm_default_eps", "rms_norm", [randn(2, 3, 6), randn(6)], normalized_shape=[6])
case("rms_norm_two_dims", "rms_norm", [randn(2, 3, 4), randn(3, 4)], normalized_shape=[3, 4], eps=1e-5)
case("rms_norm_no_weight", "rms_norm", [randn(4, 5)], normalized_shape=[5], eps=1e-5)
case("rms_norm_small_values", "rms_norm", [randn(3, 16, scale=1e-3), randn(16)], normalized_shape=[16])

# scaled_dot_product_attention (dropout_p = 0: PyTorch's dropout stream differs)
case("sdpa", "sdpa", [randn(2, 3, 5, 4), randn(2, 3, 6, 4), randn(2, 3, 6, 3)])
case("sdpa_3d", "sdpa", [randn(2, 5, 8), randn(2, 5, 8), randn(2, 5, 8)])
case("sdpa_bool_mask", "sdpa", [randn(2, 2, 5, 4), randn(2, 2, 7, 4), randn(2, 2, 7, 4), attn_mask_bool(2, 1, 5, 7)])
case("sdpa_float_mask", "sdpa", [randn(2, 2, 5, 4), randn(2, 2, 7, 4), randn(2, 2, 7, 4), randn(5, 7, grad=False)])
case("sdpa_causal", "sdpa", [randn(2, 2, 6, 4), randn(2, 2, 6, 4), randn(2, 2, 6, 4)], is_causal=True)
case("sdpa_causal_l_lt_s", "sdpa", [randn(1, 2, 4, 4), randn(1, 2, 7, 4), randn(1, 2, 7, 5)], is_causal=True)
case("sdpa_causal_l_gt_s", "sdpa", [randn(1, 2, 7, 4), randn(1, 2, 4, 4), randn(1, 2, 4, 4)], is_causal=True)
case("sdpa_scale", "sdpa", [randn(1, 2, 5, 4), randn(1, 2, 6, 4), randn(1, 2, 6, 4)], scale=0.3)
case("sdpa_one_side_grad", "sdpa", [randn(1, 2, 5, 4, grad=False), randn(1, 2, 6, 4), randn(1, 2, 6, 4)])
# Several blocks of rows (32) and keys (64), large scores: the online softmax rescales.
case("sdpa_blocks", "sdpa", [randn(1, 2, 70, 16, scale=2.0), randn(1, 2, 130, 16, scale=2.0), randn(1, 2, 130, 8)])
case("sdpa_blocks_causal", "sdpa", [randn(1, 1, 100, 8, scale=2.0), randn(1, 1, 100, 8, scale=2.0), randn(1, 1, 100, 8)],
     is_causal=True)
case("sdpa_blocks_bool_mask", "sdpa", [randn(1, 1, 40, 8), randn(1, 1, 90, 8), randn(1, 1, 90, 8), attn_mask_bool(40, 90, p=0.3)])


# ---------------------------------------------------------------------------------------------
def run_case(c):
    seed = zlib.crc32(c["name"].encode("utf-8"))
    g = torch.Generator().manual_seed(seed)
    inputs, grads = [], []
    for spec in c["inputs"]:
        t = spec.make(g).contiguous()
        differentiable = t.is_floating_point() if spec.grad is None else spec.grad
        assert not differentiable or t.is_floating_point(), f"{c['name']}: only float inputs can be differentiable"
        inputs.append(t.detach().clone().requires_grad_(differentiable))
        grads.append(differentiable)
    # attrs["args"] maps the op's arguments to inputs (the same tensor may be passed twice).
    args = [inputs[k] for k in c["attrs"].get("args", range(len(inputs)))]
    out = OPS[c["op"]](args, c["attrs"])
    tensors = {f"{c['name']}.in{k}": t.detach() for k, t in enumerate(inputs)}
    tensors[f"{c['name']}.out"] = out.detach().contiguous().clone()
    backward = out.is_floating_point() and out.requires_grad and any(grads)
    if not backward:
        grads = [False] * len(grads)
    if backward:
        r = torch.randn(out.shape, generator=g)
        wrt = [t for t, d in zip(inputs, grads) if d]
        gs = torch.autograd.grad((out * r).sum(), wrt, allow_unused=True)
        tensors[f"{c['name']}.r"] = r
        it = iter(gs)
        for k, d in enumerate(grads):
            if d:
                gk = next(it)
                assert gk is not None, f"{c['name']}: input {k} gets no gradient"
                tensors[f"{c['name']}.grad{k}"] = gk.detach().contiguous()
    for name, t in tensors.items():
        assert t.dtype in (torch.float32, torch.int64, torch.int32, torch.bool), f"{name}: {t.dtype}"
    entry = {
        "name": c["name"],
        "op": c["op"],
        "attrs": c["attrs"],
        "inputs": [{"dtype": NAMES[t.dtype], "shape": list(t.shape), "grad": d} for t, d in zip(inputs, grads)],
        "out": {"dtype": NAMES[out.dtype], "shape": list(out.shape)},
        "backward": backward,
    }
    return entry, tensors


def main():
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    entries, tensors = [], {}
    for c in CASES:
        try:
            entry, ts = run_case(c)
        except Exception as e:
            raise RuntimeError(f"case {c['name']}: {e}") from e
        entries.append(entry)
        tensors.update(ts)
    os.makedirs(OUT_DIR, exist_ok=True)
    save_file(tensors, os.path.join(OUT_DIR, "ops.safetensors"),
              metadata={"generator": "tools/make_golden_ops.py", "torch": torch.__version__})
    with open(os.path.join(OUT_DIR, "ops.json"), "w") as f:
        json.dump({"generator": "tools/make_golden_ops.py", "torch": torch.__version__, "cases": entries},
                  f, indent=1, allow_nan=False)
        f.write("\n")
    n_back = sum(e["backward"] for e in entries)
    size = os.path.getsize(os.path.join(OUT_DIR, "ops.safetensors"))
    print(f"{len(entries)} cases ({n_back} with backward), {len(tensors)} tensors, {size} bytes "
          f"-> tests/golden/ops.safetensors, tests/golden/ops.json")


if __name__ == "__main__":
    main()
