#include "hlo/custom_call.h"

#include <cstdio>
#include <cstdlib>

#include "core/error.h"

namespace lazytrain::hlo {

CustomCallConfig::CustomCallConfig(const std::string& text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string entry = text.substr(pos, end - pos);
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("[hlo custom-call] malformed backend_config entry '" + entry + "' in '" + text + "'");
    const std::string value = entry.substr(eq + 1);
    char* stop = nullptr;
    const double v = std::strtod(value.c_str(), &stop);
    if (value.empty() || *stop != '\0') throw Error("[hlo custom-call] backend_config value '" + value + "' is not a number in '" + text + "'");
    values_[entry.substr(0, eq)] = v;
    pos = end + 1;
  }
}

double CustomCallConfig::number(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) throw Error("[hlo custom-call] backend_config has no '" + key + "'");
  return it->second;
}

std::string CustomCallConfig::format(const std::vector<std::pair<std::string, double>>& entries) {
  std::string out;
  for (const auto& [key, value] : entries) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.17g", value);
    out += (out.empty() ? "" : ",") + key + "=" + buf;
  }
  return out;
}

namespace {

struct Rule {
  const HloModule& m;
  const HloInstruction& in;
  void require(bool ok, const std::string& what) const {
    if (!ok) throw Error("[hlo " + in.name() + "] custom-call " + in.custom_call_target + ": " + what);
  }
  const HloInstruction& operand(size_t i) const {
    require(i < in.operands.size(), "missing operand " + std::to_string(i));
    return m.at(in.operands[i]);
  }
};

ShapeAndType infer_topk(const Rule& r, const CustomCallConfig& config) {
  r.require(r.in.operands.size() == 1, "expects 1 operand");
  const HloInstruction& x = r.operand(0);
  const int64_t dim = static_cast<int64_t>(config.number("dim")), k = static_cast<int64_t>(config.number("k"));
  r.require(dim >= 0 && dim < static_cast<int64_t>(x.shape.size()), "dim out of range");
  r.require(k >= 0 && k <= x.shape[dim], "k out of range");
  Shape out = x.shape;
  out[dim] = k;
  return {out, DType::kInt64};
}

// The batch dims of q and L, S, E, Ev; checks q, k, v and the optional mask and seed.
ShapeAndType infer_sdpa(const Rule& r, const CustomCallConfig& config, bool backward) {
  const bool has_mask = config.number("has_mask") != 0;
  const size_t has_dropout = config.number("has_dropout") != 0 ? 2 : 0;
  config.number("is_causal");
  const size_t fixed = backward ? 6 : 4;
  r.require(r.in.operands.size() == fixed + has_mask + has_dropout,
            "expects " + std::to_string(fixed + has_mask + has_dropout) + " operands");
  const HloInstruction &q = r.operand(0), &k = r.operand(1), &v = r.operand(2);
  const size_t rank = q.shape.size();
  r.require(rank >= 2 && k.shape.size() == rank && v.shape.size() == rank, "q, k, v must be [B..., L|S, E|Ev] of one rank >= 2");
  r.require(is_floating_point(q.dtype) && k.dtype == q.dtype && v.dtype == q.dtype, "q, k, v must share one floating dtype");
  for (size_t d = 0; d + 2 < rank; ++d) r.require(k.shape[d] == q.shape[d] && v.shape[d] == q.shape[d], "q, k, v batch dims differ");
  const int64_t L = q.shape[rank - 2], E = q.shape[rank - 1], S = k.shape[rank - 2], Ev = v.shape[rank - 1];
  r.require(k.shape[rank - 1] == E && v.shape[rank - 2] == S, "k must be [B..., S, E] and v [B..., S, Ev]");
  Shape batch(q.shape.begin(), q.shape.end() - 2);
  r.require(r.operand(3).shape.empty() && r.operand(3).dtype == DType::kFloat32, "scale must be f32[]");
  size_t next = fixed;
  if (backward) {
    Shape fwd = batch, dout = batch;
    fwd.insert(fwd.end(), {L, Ev + 1});
    dout.insert(dout.end(), {L, Ev});
    r.require(r.operand(4).shape == fwd && r.operand(4).dtype == DType::kFloat32, "operand 4 must be the forward's f32" + shape_str(fwd));
    r.require(r.operand(5).shape == dout && r.operand(5).dtype == q.dtype, "dout must be " + shape_str(dout) + " of q's dtype");
  }
  if (has_mask) {
    const HloInstruction& mask = r.operand(next++);
    r.require(mask.dtype == DType::kBool || mask.dtype == DType::kFloat32, "mask must be pred or f32");
    r.require(mask.shape.size() == rank, "mask must have q's rank");
    Shape full = batch;
    full.insert(full.end(), {L, S});
    for (size_t d = 0; d < rank; ++d) r.require(mask.shape[d] == 1 || mask.shape[d] == full[d], "mask must broadcast to " + shape_str(full));
  }
  if (has_dropout) {
    const HloInstruction& p = r.operand(next++);
    r.require(p.dtype == DType::kFloat32 && p.shape.empty(), "dropout_p must be f32[]");
    const HloInstruction& seed = r.operand(next++);
    r.require(seed.dtype == DType::kInt64 && seed.shape.empty(), "the dropout seed must be s64[]");
  }
  Shape out = batch;
  if (backward) out.push_back(L * E + S * E + S * Ev);
  else out.insert(out.end(), {L, Ev + 1});
  return {out, DType::kFloat32};
}

}  // namespace

ShapeAndType infer_custom_call(const HloModule& module, const HloInstruction& in) {
  Rule r{module, in};
  const CustomCallConfig config(in.backend_config);
  if (in.custom_call_target == kTopKTarget) return infer_topk(r, config);
  if (in.custom_call_target == kSdpaForwardTarget) return infer_sdpa(r, config, false);
  if (in.custom_call_target == kSdpaBackwardTarget) return infer_sdpa(r, config, true);
  if (in.custom_call_target == kShardingTarget) {
    r.require(in.operands.size() == 1, "expects 1 operand");
    return {r.operand(0).shape, r.operand(0).dtype};
  }
  r.require(false, "unknown custom_call_target");
  return {};
}

}  // namespace lazytrain::hlo
