// torch.nn.functional.scaled_dot_product_attention as one op: the custom-calls
// "__lazytrain$sdpa_forward" / "__lazytrain$sdpa_backward" (hlo/custom_call.h),
// whose cpu kernel is kernels/attention.h (the interpreter computes it by its formula).
#include <cmath>

#include "core/error.h"
#include "core/op_location.h"
#include "hlo/custom_call.h"
#include "tensor/lowering.h"

namespace lazytrain {

using namespace detail;
using autograd::record;

namespace {

// The custom-call of `target` over every operand of n, its backend_config from n's attributes.
int lower_sdpa(LoweringContext& c, const Node& n, const std::string& target) {
  std::vector<XlaOp> operands;
  for (size_t i = 0; i < n.operands().size(); ++i) operands.push_back(operand(c, n, i));
  const std::string config = hlo::CustomCallConfig::format({{"is_causal", static_cast<double>(n.int_attr("is_causal"))},
                                                            {"has_mask", static_cast<double>(n.int_attr("has_mask"))},
                                                            {"has_dropout", static_cast<double>(n.int_attr("has_dropout"))}});
  return custom_call(operands, target, config).id();
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask, double dropout_p,
                                    bool is_causal, std::optional<double> scale, Loc loc) {
  OpLocationScope at(loc);
  const char* op = "aten::scaled_dot_product_attention";
  const int64_t rank = q.dim();
  if (rank < 2 || k.dim() != rank || v.dim() != rank) {
    throw_error(op, "expects q [..., L, E], k [..., S, E], v [..., S, Ev] of one rank >= 2, got " + shape_str(q.shape()) + ", " +
                        shape_str(k.shape()) + ", " + shape_str(v.shape()), loc);
  }
  if (!is_floating_point(q.dtype()) || k.dtype() != q.dtype() || v.dtype() != q.dtype()) {
    throw_error(op, "expects q, k, v of one floating dtype, got " + torch_name(q.dtype()) + ", " + torch_name(k.dtype()) + ", " +
                        torch_name(v.dtype()), loc);
  }
  const Shape batch(q.shape().begin(), q.shape().end() - 2);
  const int64_t L = q.shape()[rank - 2], E = q.shape()[rank - 1], S = k.shape()[rank - 2], Ev = v.shape()[rank - 1];
  if (Shape(k.shape().begin(), k.shape().end() - 2) != batch || Shape(v.shape().begin(), v.shape().end() - 2) != batch ||
      k.shape()[rank - 1] != E || v.shape()[rank - 2] != S) {
    throw_error(op, "expects q [..., L, E], k [..., S, E], v [..., S, Ev] with the same batch dims, got " + shape_str(q.shape()) + ", " +
                        shape_str(k.shape()) + ", " + shape_str(v.shape()), loc);
  }
  if (!(dropout_p >= 0.0 && dropout_p < 1.0)) throw_error(op, "dropout_p must be in [0, 1), got " + std::to_string(dropout_p), loc);
  if (is_causal && attn_mask.defined()) throw_error(op, "Explicit attn_mask should not be set when is_causal=True", loc);
  Shape scores = batch;
  scores.insert(scores.end(), {L, S});
  // The numbers are operands (scalar_operand: device data unless 0 or ±1), so
  // a scale or dropout_p that changes between steps never recompiles.
  const double sc = scale.value_or(1.0 / std::sqrt(static_cast<double>(E)));
  const Tensor scale_operand = scalar_operand(sc, DType::kFloat32, q.device());
  std::vector<Tensor> extra;  // mask, dropout_p and seed operands
  if (attn_mask.defined()) {
    if (attn_mask.dim() > rank) throw_error(op, "attn_mask " + shape_str(attn_mask.shape()) + " does not broadcast to " + shape_str(scores), loc);
    Shape ms(static_cast<size_t>(rank - attn_mask.dim()), 1);
    ms.insert(ms.end(), attn_mask.shape().begin(), attn_mask.shape().end());
    for (int64_t d = 0; d < rank; ++d) {
      if (ms[d] != 1 && ms[d] != scores[d]) {
        throw_error(op, "attn_mask " + shape_str(attn_mask.shape()) + " does not broadcast to " + shape_str(scores), loc);
      }
    }
    if (attn_mask.dtype() != DType::kBool && !is_floating_point(attn_mask.dtype())) {
      throw_error(op, "attn_mask must be bool or floating, got " + torch_name(attn_mask.dtype()), loc);
    }
    Tensor m = reshape(attn_mask.detach(), ms);
    extra.push_back(m.dtype() == DType::kBool ? m : to_dtype(m, DType::kFloat32));
  }
  if (dropout_p > 0.0) {
    runtime::DeviceGuard on_q(q.device());
    extra.push_back(scalar_operand(dropout_p, DType::kFloat32, q.device()));
    extra.push_back(next_seed());
  }
  const std::vector<Attr> attrs = {{"is_causal", int64_t{is_causal}}, {"has_mask", int64_t{attn_mask.defined()}},
                                   {"has_dropout", int64_t{dropout_p > 0.0}}};

  std::vector<Tensor> inputs = {q.detach(), k.detach(), v.detach(), scale_operand};
  inputs.insert(inputs.end(), extra.begin(), extra.end());
  Shape packed = batch;
  packed.insert(packed.end(), {L, Ev + 1});
  // out in columns 0..Ev-1, the row's logsumexp in column Ev (hlo/custom_call.h).
  Tensor fwd = make_op("aten::_scaled_dot_product_flash_attention", inputs, packed, DType::kFloat32, attrs,
                       +[](LoweringContext& c, const Node& n) { return lower_sdpa(c, n, hlo::kSdpaForwardTarget); });
  Tensor out = to_dtype(slice(fwd, -1, 0, Ev), q.dtype());
  return record(out, "ScaledDotProductFlashAttentionBackward0", {q, k, v},
                [q = q.detach(), k = k.detach(), v = v.detach(), scale_operand, fwd, extra, attrs, L, E, S, Ev](const Tensor& g) {
                  std::vector<Tensor> operands = {q, k, v, scale_operand, fwd, to_dtype(g, q.dtype())};
                  operands.insert(operands.end(), extra.begin(), extra.end());
                  Shape s(q.shape().begin(), q.shape().end() - 2);
                  s.push_back(L * E + S * E + S * Ev);
                  Tensor grads = make_op("aten::_scaled_dot_product_flash_attention_backward", operands, s, DType::kFloat32, attrs,
                                         +[](LoweringContext& c, const Node& n) { return lower_sdpa(c, n, hlo::kSdpaBackwardTarget); });
                  auto part = [&](int64_t start, int64_t end, const Tensor& like) {
                    return to_dtype(reshape(slice(grads, -1, start, end), like.shape()), like.dtype());
                  };
                  return std::vector<Tensor>{part(0, L * E, q), part(L * E, L * E + S * E, k), part(L * E + S * E, L * E + S * E + S * Ev, v)};
                });
}

}  // namespace lazytrain
