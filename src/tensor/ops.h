// Tensor ops with PyTorch's names, argument order and semantics (broadcasting,
// type promotion). Each records a lazy IR node named like "aten::mul" and, when
// an input requires grad, an autograd GradFn. Errors: lazytrain::Error opening
// with the op in brackets and ending with the caller's file:line.
//
// Adding an op (the recipe; see README "Adding an op"):
//   1. a function here that validates arguments and computes the result shape;
//   2. its IR node and lowering to HLO (tensor/ops_*.cpp, with lowering helpers
//      from tensor/lowering.h);
//   3. its gradient rule (record_grad in the same function);
//   4. a golden case in tools/make_golden_ops.py and tests/tensor/ops_golden_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "core/op_location.h"
#include "core/shape.h"
#include "tensor/type_promotion.h"
// Tensor complete for the default arguments `= Tensor()` (tensor.h includes this
// header at its end, after the class; #pragma once ends the cycle either way).
#include "tensor/tensor.h"

namespace lazytrain {

class Tensor;
using Loc = OpLocation;

// ---- creation (float32 unless a dtype is given) ----
Tensor zeros(const Shape& shape, DType dtype = DType::kFloat32);
Tensor ones(const Shape& shape, DType dtype = DType::kFloat32);
Tensor full(const Shape& shape, double value, DType dtype = DType::kFloat32);
// [start, end) stepping by step; int64 (PyTorch infers int64 for integer arguments).
Tensor arange(int64_t start, int64_t end, int64_t step = 1, DType dtype = DType::kInt64);
Tensor arange(int64_t end, DType dtype = DType::kInt64);
// A scalar (0-d) tensor that is device data, not a constant: changing its value
// between steps does not change the graph hash (learning rate, step count).
Tensor scalar_tensor(double value, DType dtype = DType::kFloat32);
// Host data copied to the device (counts TransferToDeviceTime). data.size() must equal numel(shape).
Tensor from_vector(const std::vector<float>& data, const Shape& shape);
Tensor from_vector(const std::vector<int64_t>& data, const Shape& shape);
Tensor from_buffer(const void* data, const Shape& shape, DType dtype);
// Uniform [0, 1) / standard normal, from the current device's generator (see manual_seed).
Tensor rand(const Shape& shape, DType dtype = DType::kFloat32);
Tensor randn(const Shape& shape, DType dtype = DType::kFloat32);
// torch.manual_seed: resets the current device's generator, and is the seed of
// every device's generator made later. Each device has its own (PyTorch/XLA's
// per-device RNG state), so replica threads seed and draw independently: each
// replica calls manual_seed(seed) and, seeded alike, draws alike on the host
// (parameter initialisation); rand/randn/dropout on replicas of a job with
// several mix the replica's ordinal into their device seeds, so replicas drop
// out differently, as the rows of one large batch would. Random ops take their
// seed as device data, so reseeding never recompiles.
void manual_seed(uint64_t seed);
// The current device's generator's whole state, as torch.get_rng_state() /
// torch.set_rng_state() save and restore it (checkpoints resume exactly): the
// device seed and how many per-op seeds were drawn from it, and the host
// generator (std::mt19937_64, in its standard text form).
struct RngState {
  uint64_t seed = 0;
  uint64_t offset = 0;
  std::string host;
};
RngState get_rng_state();
// Throws Error when `state.host` is not a std::mt19937_64 state.
void set_rng_state(const RngState& state);
// Standard-normal float32 values drawn on the host from the generator that
// manual_seed also resets (parameter initialisation: no graph, no compile).
std::vector<float> host_randn(int64_t count);

// ---- elementwise (broadcasting; result dtype by torch.result_type, tensor/type_promotion.h) ----
// A number operand (Scalar: a C++ bool, integer or floating value, as a Python
// number) takes part in promotion by its kind only: int32 [n] * 2.0 is float32,
// bf16 [n] * f32 0-d is bf16. Bool operands: add is logical or, mul logical
// and; sub and neg refuse them (Error with torch's message: use ~ / logical_not).
// div is true division: integer operands give float32.
Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0, Loc loc = std::source_location::current());
Tensor sub(const Tensor& a, const Tensor& b, double alpha = 1.0, Loc loc = std::source_location::current());
Tensor mul(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor div(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor maximum(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor minimum(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor add(const Tensor& a, Scalar b, Loc loc = std::source_location::current());
Tensor sub(const Tensor& a, Scalar b, Loc loc = std::source_location::current());
Tensor mul(const Tensor& a, Scalar b, Loc loc = std::source_location::current());
Tensor div(const Tensor& a, Scalar b, Loc loc = std::source_location::current());
// The 0-d operand number `s` becomes beside tensor `other` (torch's wrapped
// number): dtype result_type(other, s), on other's device (a constant for 0
// and +-1, else device data, as tensor/lowering.h scalar_operand). `s op x`
// is op(wrap_scalar(s, x), x).
Tensor wrap_scalar(Scalar s, const Tensor& other);
// torch.pow: the result_type of base and exponent; integers stay integers
// (int [n] ** 2 is int64), and an integer base with a negative integer
// exponent number raises Error ("Integers to negative integer powers are not
// allowed."). Gradients for a floating base (and a floating tensor exponent).
Tensor pow(const Tensor& a, Scalar exponent, Loc loc = std::source_location::current());
Tensor pow(const Tensor& a, const Tensor& exponent, Loc loc = std::source_location::current());
// torch.floor_divide / torch.remainder (Python's // and %): floor semantics,
// the remainder has the divisor's sign. Integer division by zero raises Error
// when the graph runs; a floating one gives inf/nan. Bool operands raise
// Error. remainder's gradient: g for a, -g * floor_divide(a, b) for b;
// floor_divide has none.
Tensor floor_divide(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor remainder(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
// torch.bitwise_and/or/xor/not: bitwise on integers, logical on bool; Error
// for a floating operand ("bitwise_and_cpu" not implemented for 'Float').
Tensor bitwise_and(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor bitwise_or(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor bitwise_xor(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor bitwise_not(const Tensor& x, Loc loc = std::source_location::current());
Tensor neg(const Tensor& x, Loc loc = std::source_location::current());
Tensor exp(const Tensor& x, Loc loc = std::source_location::current());
Tensor log(const Tensor& x, Loc loc = std::source_location::current());
Tensor sqrt(const Tensor& x, Loc loc = std::source_location::current());
Tensor rsqrt(const Tensor& x, Loc loc = std::source_location::current());
Tensor tanh(const Tensor& x, Loc loc = std::source_location::current());
Tensor erf(const Tensor& x, Loc loc = std::source_location::current());
Tensor abs(const Tensor& x, Loc loc = std::source_location::current());
Tensor relu(const Tensor& x, Loc loc = std::source_location::current());
// torch.nn.functional.gelu. approximate "none": the exact erf form,
// x * 0.5 * (1 + erf(x / sqrt(2))); "tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// (Hendrycks & Gimpel 2016; GPT-2's gelu_new). One op each way, forward and backward,
// so it fuses into one loop. Floating x; Error naming aten::gelu for another approximate.
Tensor gelu(const Tensor& x, const std::string& approximate = "none", Loc loc = std::source_location::current());
// torch.sigmoid: 1 / (1 + exp(-x)), computed as 0.5 tanh(x/2) + 0.5 (XLA's
// logistic: no overflow for any x). Gradient g y (1 - y). Integer x gives float32.
Tensor sigmoid(const Tensor& x, Loc loc = std::source_location::current());
// torch.nn.functional.silu: x sigmoid(x) (swish). Gradient g s (1 + x (1 - s)), s = sigmoid(x).
Tensor silu(const Tensor& x, Loc loc = std::source_location::current());
// torch.sin / torch.cos (HLO sine / cosine, SLEEF's 1-ULP kernels). Integer x gives float32.
Tensor sin(const Tensor& x, Loc loc = std::source_location::current());
Tensor cos(const Tensor& x, Loc loc = std::source_location::current());
// torch.clamp(x, min, max): min(max(x, min), max) with either bound optional
// (at least one given: Error naming aten::clamp otherwise); min > max gives max
// everywhere, NaN stays NaN. The result dtype follows the scalar rule of
// add(Tensor, double). Gradient, as torch's: g where min <= x <= max, 0 outside.
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max = std::nullopt, Loc loc = std::source_location::current());
// Comparisons return bool tensors; the operands are compared in their
// result_type (int [n] < 2.5 compares in float32, bf16 [n] == f32 0-d in bf16).
Tensor eq(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor ne(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor lt(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor le(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor gt(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor ge(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor eq(const Tensor& a, Scalar b, Loc loc = std::source_location::current());
Tensor ne(const Tensor& a, Scalar b, Loc loc = std::source_location::current());
Tensor lt(const Tensor& a, Scalar b, Loc loc = std::source_location::current());
Tensor le(const Tensor& a, Scalar b, Loc loc = std::source_location::current());
Tensor gt(const Tensor& a, Scalar b, Loc loc = std::source_location::current());
Tensor ge(const Tensor& a, Scalar b, Loc loc = std::source_location::current());
Tensor logical_and(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor logical_or(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor logical_not(const Tensor& x, Loc loc = std::source_location::current());
// condition ? a : b, broadcasting all three; condition must be bool. The
// result dtype is result_type(a, b) (numbers: where(c, x, 0.0) keeps x's
// floating dtype; where(c, 1.0, 0.0) is float32, where(c, 1, 0) int64).
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());
Tensor where(const Tensor& condition, const Tensor& a, Scalar b, Loc loc = std::source_location::current());
Tensor where(const Tensor& condition, Scalar a, const Tensor& b, Loc loc = std::source_location::current());
Tensor where(const Tensor& condition, Scalar a, Scalar b, Loc loc = std::source_location::current());
// x with `value` where mask (bool, broadcastable to x) is true.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value, Loc loc = std::source_location::current());
Tensor to_dtype(const Tensor& x, DType dtype, Loc loc = std::source_location::current());

// ---- matrix multiply ----
// torch.matmul: 1-D·1-D dot, 2-D mm, batched with broadcast batch dims.
Tensor matmul(const Tensor& a, const Tensor& b, Loc loc = std::source_location::current());

// ---- reductions (dims may be negative; empty dims = all) ----
Tensor sum(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false, Loc loc = std::source_location::current());
Tensor mean(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false, Loc loc = std::source_location::current());
// A dim named twice raises Error ("dim 0 appears multiple times"), as torch.
// Values of torch.max(x, dim) / torch.amax, and of torch.min(x, dim) / torch.amin
// (a reduce of its own: exact for bool and the int64 limits). NaN propagates.
// No identity: an empty reduced dim, or every dim of an empty x, raises Error
// ("Expected reduction dim 0 to have non-zero size"). Gradient shared evenly
// between tied extremes, as torch's.
Tensor amax(const Tensor& x, std::vector<int64_t> dims, bool keepdim = false, Loc loc = std::source_location::current());
Tensor amin(const Tensor& x, std::vector<int64_t> dims, bool keepdim = false, Loc loc = std::source_location::current());
// torch.prod over dims (empty: all): integer and bool x give int64; 1 over an
// empty dim. Gradient, as torch's, the product of the other elements (also at zeros).
Tensor prod(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false, Loc loc = std::source_location::current());
// torch.any / torch.all: whether any / every x != 0 over dims (empty: all), bool;
// False / True over an empty dim. No gradient.
Tensor any(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false, Loc loc = std::source_location::current());
Tensor all(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false, Loc loc = std::source_location::current());
// log(sum(exp(x))) over dims, computed stably (torch.logsumexp): a floating
// x; rows of -inf give -inf, a +inf gives +inf, a NaN gives NaN. Lowered to
// one reduce with to_apply=logaddexp, which the CPU backend computes in one
// pass over x (online softmax). Gradient: g * exp(x - result).
Tensor logsumexp(const Tensor& x, std::vector<int64_t> dims, bool keepdim = false, Loc loc = std::source_location::current());
// Index of the first maximum (minimum) along dim, int64; a NaN counts as the
// extreme (the first NaN's index), as torch. Error for bool x and for an empty dim.
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false, Loc loc = std::source_location::current());
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false, Loc loc = std::source_location::current());
// torch.cumsum: y[..., i, ...] = sum_{j <= i} x[..., j, ...] along dim; integer
// and bool x give int64 (torch's rule). Lowered to log2(n) shifted adds
// (Hillis-Steele scan: slice + concatenate + add, fusible, exact for integers).
// Gradient: the reversed cumulative sum of g.
Tensor cumsum(const Tensor& x, int64_t dim, Loc loc = std::source_location::current());
// torch.topk: the k largest (largest=false: smallest) values along dim and their
// int64 indices, in descending (ascending) order when sorted (always sorted
// here: torch leaves the order unspecified otherwise). NaN counts as larger
// than every number, as in torch; ties keep the lower index first. 0 <= k <=
// size(dim), else Error naming aten::topk. Indices come from the host kernel
// custom-call "__lazytrain$topk" (hlo/custom_call.h), values are gather(x, dim,
// indices); only the values carry a gradient (g scattered back to the picks).
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true,
                                Loc loc = std::source_location::current());

// ---- views and data movement (copies: lazytrain tensors never alias) ----
Tensor reshape(const Tensor& x, Shape shape, Loc loc = std::source_location::current());  // one dim may be -1
Tensor view(const Tensor& x, Shape shape, Loc loc = std::source_location::current());
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1, Loc loc = std::source_location::current());
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims, Loc loc = std::source_location::current());
Tensor unsqueeze(const Tensor& x, int64_t dim, Loc loc = std::source_location::current());
Tensor squeeze(const Tensor& x, int64_t dim, Loc loc = std::source_location::current());
// Broadcasts size-1 dims (and new leading dims) to `shape`; -1 keeps a size.
Tensor expand(const Tensor& x, const Shape& shape, Loc loc = std::source_location::current());
// x[start:end:step] along dim, Python-style clamping of start/end.
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1, Loc loc = std::source_location::current());
Tensor cat(const std::vector<Tensor>& xs, int64_t dim = 0, Loc loc = std::source_location::current());
// x's value, computed no earlier than `after` (any shape and dtype) and never
// merged with an equal computation by the compiler: XLA's opt-barrier (with one
// value passed through), as jax.lax.optimization_barrier and PyTorch/XLA's
// xm.optimization_barrier_ use it for rematerialization (nn/checkpoint.h). The
// gradient passes to x unchanged; `after` gets none.
Tensor optimization_barrier(const Tensor& x, const Tensor& after, Loc loc = std::source_location::current());
// Rows of x along dim selected by int32/int64 `index` (1-D).
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, Loc loc = std::source_location::current());
// torch.stack: the tensors (all one shape) joined along a new dim (0 .. rank).
Tensor stack(const std::vector<Tensor>& xs, int64_t dim = 0, Loc loc = std::source_location::current());
// torch.split(x, split_size, dim): pieces of split_size along dim, the last one
// smaller when the size does not divide (one empty piece for an empty dim);
// split_size must be positive (0 only for an empty dim).
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0, Loc loc = std::source_location::current());
// torch.split(x, sections, dim): pieces of the given sizes, which must sum to size(dim).
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sections, int64_t dim = 0, Loc loc = std::source_location::current());
// torch.chunk: split(x, ceil(size / chunks), dim), so fewer than `chunks`
// pieces when they run out (torch's rule); an empty dim gives `chunks` empty pieces.
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0, Loc loc = std::source_location::current());
// torch.tril / torch.triu over the last two dims: elements with col - row <=
// diagonal (tril) / >= diagonal (triu) kept, the others 0. Rank >= 2.
Tensor tril(const Tensor& x, int64_t diagonal = 0, Loc loc = std::source_location::current());
Tensor triu(const Tensor& x, int64_t diagonal = 0, Loc loc = std::source_location::current());
// torch.repeat_interleave(x, repeats, dim): each element repeated `repeats`
// (>= 0) times along dim; no dim: along the flattened x.
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim = std::nullopt, Loc loc = std::source_location::current());
// torch.gather(x, dim, index): out[i][j][k] = x[index[i][j][k]][j][k] (dim 0;
// likewise for the others). index int64 of x's rank, index.size(d) <= x.size(d)
// for d != dim; out has index's shape. An index out of range raises Error when
// the graph runs (as embedding does). Lowered to one HLO gather over the
// flattened x. Gradient: scatter_add of g into zeros of x's shape.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, Loc loc = std::source_location::current());
// torch.scatter_add(x, dim, index, src): x with src[i][j][k] added at
// [index[i][j][k]][j][k] (dim 0; likewise for the others); index int64 of x's
// rank, no larger than src in any dim nor than x off dim; src has x's dtype.
// Lowered to one HLO scatter (add) over the flattened x. Gradients: g for x,
// gather(g, dim, index) for src (zero where index does not reach).
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, Loc loc = std::source_location::current());

// ---- data-dependent shapes ----
// Their result's shape depends on the input's values: they read the input (a
// host transfer that, in lazy mode, runs the pending graph, as PyTorch/XLA
// does; counted in counter "aten::nonzero", a fallback counter) and build the
// result from it. A graph per distinct count: where/masked_fill keep shapes
// static (a masked sum is sum(where(mask, x, 0))).
// Indices of x's non-zero elements, int64 [n, x.dim()], in row-major order (torch.nonzero).
Tensor nonzero(const Tensor& x, Loc loc = std::source_location::current());
// The elements of x where mask (bool, broadcast with x) is true, 1-D in row-major
// order (torch.masked_select); gradients flow back to x.
Tensor masked_select(const Tensor& x, const Tensor& mask, Loc loc = std::source_location::current());

// ---- neural-network functions (torch.nn.functional) ----
// weight [num_embeddings, dim], indices int [...] → [..., dim]. An index out of
// range raises Error when the graph runs, naming this call's line. Lookups of padding_idx (>= 0) send no
// gradient to that row, as torch.nn.functional.embedding.
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1, Loc loc = std::source_location::current());
Tensor softmax(const Tensor& x, int64_t dim, Loc loc = std::source_location::current());
Tensor log_softmax(const Tensor& x, int64_t dim, Loc loc = std::source_location::current());
// Normalises over the trailing dims of normalized_shape; y = (x-mean)/sqrt(var+eps)*weight+bias
// with the biased variance (torch.nn.functional.layer_norm).
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps = 1e-5, Loc loc = std::source_location::current());
// torch.nn.functional.rms_norm: x / sqrt(mean(x^2 over the trailing
// normalized_shape dims) + eps) * weight (weight optional: undefined Tensor).
// eps nullopt is torch's None: torch.finfo(x.dtype).eps (f32 1.1920929e-07,
// bf16 0.0078125, f16 0.0009765625). bf16/f16 x is computed in float32 and the
// result cast back (torch's upcast). Composite of tensor ops (its gradient comes
// from theirs). Error naming aten::rms_norm for a shape mismatch.
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                std::optional<double> eps = std::nullopt, Loc loc = std::source_location::current());
// torch.nn.functional.scaled_dot_product_attention: softmax(q k^T * scale +
// bias) v for q [..., L, E], k [..., S, E], v [..., S, Ev] (the same batch dims
// and floating dtype) -> [..., L, Ev] in q's dtype. attn_mask (undefined: none)
// broadcasts to [..., L, S]: bool (true = attend) or floating (added to the
// scores). is_causal: the top-left causal mask tril(ones(L, S)) (not with an
// attn_mask: Error, as torch). scale nullopt: 1/sqrt(E). dropout_p in [0, 1):
// drops attention weights with that probability and scales the rest by
// 1/(1-p), drawn in the kernel from a per-op seed (device data, like dropout's;
// not PyTorch's stream). One op: custom-calls "__lazytrain$sdpa_forward" /
// "__lazytrain$sdpa_backward" (hlo/custom_call.h) run a FlashAttention-2 style
// host kernel (blocks of rows, online softmax, f32 accumulation, logsumexp per
// row kept for the backward) on every backend; bf16/f16 accumulate in f32. A
// row that masks every key gives 0 (torch's math path gives NaN).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask = Tensor(),
                                    double dropout_p = 0.0, bool is_causal = false, std::optional<double> scale = std::nullopt,
                                    Loc loc = std::source_location::current());
// Zeroes each element with probability p and scales the rest by 1/(1-p) when
// training; identity otherwise.
Tensor dropout(const Tensor& x, double p, bool training, Loc loc = std::source_location::current());
// logits [N, C] (or [C]), target int [N] (or []): mean over targets != ignore_index
// of -log_softmax(logits)[target] (torch.nn.functional.cross_entropy, reduction='mean').
// Computed as logsumexp(logits - logits[target]) without materialising the
// log-probabilities: the forward reads the logits once (online softmax) and is
// exact to the loss's own precision whatever the logits' magnitude; the
// backward, softmax - one_hot(target), is one elementwise pass (the fused loss).
// A target outside [0, C) other than ignore_index raises Error when the graph
// runs, naming this call's line (as torch's "Target ... is out of bounds").
Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index = -100, Loc loc = std::source_location::current());
// Linear layer: x [..., in] @ weight[out, in]^T + bias[out].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Loc loc = std::source_location::current());

// ---- operators ----
// A Tensor operand of an operator. C++ operators take no OpLocation
// argument, so this conversion captures where the user wrote the expression
// (its errors and IR nodes name that line). Holds a reference: a temporary
// lives until the expression ends.
struct TensorOperand {
  TensorOperand(const Tensor& tensor, Loc loc = std::source_location::current()) : tensor(tensor), loc(loc) {}  // NOLINT: implicit by design
  const Tensor& tensor;
  Loc loc;
};
Tensor operator+(TensorOperand a, const Tensor& b);
Tensor operator-(TensorOperand a, const Tensor& b);
Tensor operator*(TensorOperand a, const Tensor& b);
Tensor operator/(TensorOperand a, const Tensor& b);
Tensor operator+(TensorOperand a, Scalar b);
Tensor operator-(TensorOperand a, Scalar b);
Tensor operator*(TensorOperand a, Scalar b);
Tensor operator/(TensorOperand a, Scalar b);
Tensor operator+(Scalar a, TensorOperand b);
Tensor operator-(Scalar a, TensorOperand b);
Tensor operator*(Scalar a, TensorOperand b);
Tensor operator-(TensorOperand x);

}  // namespace lazytrain
