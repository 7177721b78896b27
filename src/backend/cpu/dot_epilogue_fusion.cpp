#include "backend/cpu/dot_epilogue_fusion.h"

#include <map>

#include "hlo/hlo_builder.h"

namespace lazytrain::backend::cpu {

using hlo::FusionKind;
using hlo::HloBuilder;
using hlo::HloOpcode;

namespace {

struct Match {
  int dot = -1;
  int reshape = -1;   // between the dot and the bias add, or -1
  int bias_add = -1;
  int bias = -1;      // the broadcast's [n] operand
  int residual = -1;  // the residual operand of the root add, or -1
};

class Matcher {
 public:
  explicit Matcher(const HloModule& m) : m_(m), users_(m.instructions.size()) {
    for (const HloInstruction& in : m.instructions) {
      for (int o : in.operands) users_[o].push_back(in.id);
    }
  }

  // Matches rooted at their last add, keyed by that add's id.
  std::map<int, Match> find() const {
    std::map<int, Match> roots;
    for (const HloInstruction& in : m_.instructions) {
      Match match;
      if (!bias_add(in, match)) continue;
      int root = in.id;
      // A residual add as the bias add's only user.
      if (users_[in.id].size() == 1) {
        const HloInstruction& user = m_.at(users_[in.id][0]);
        const int other = user.operands[0] == in.id ? user.operands[1] : user.operands[0];
        if (user.opcode == HloOpcode::kAdd && other != in.id && m_.at(other).shape == in.shape && m_.at(other).dtype == in.dtype) {
          match.residual = other;
          root = user.id;
        }
      }
      roots[root] = match;
    }
    return roots;
  }

 private:
  bool bias_add(const HloInstruction& in, Match& match) const {
    if (in.opcode != HloOpcode::kAdd || in.dtype != DType::kFloat32 || in.shape.empty()) return false;
    for (int side = 0; side < 2; ++side) {
      int product = in.operands[static_cast<size_t>(side)];
      const HloInstruction& b = m_.at(in.operands[static_cast<size_t>(1 - side)]);
      const int64_t last = static_cast<int64_t>(in.shape.size()) - 1;
      if (b.opcode != HloOpcode::kBroadcast || b.dimensions != std::vector<int64_t>{last}) continue;
      match.reshape = -1;
      if (m_.at(product).opcode == HloOpcode::kReshape && users_[product].size() == 1) {
        match.reshape = product;
        product = m_.at(product).operands[0];
      }
      const HloInstruction& dot = m_.at(product);
      if (dot.opcode != HloOpcode::kDot || dot.dtype != DType::kFloat32 || users_[dot.id].size() != 1) continue;
      if (dot.shape.back() != in.shape.back()) continue;  // the reshape must keep the last dim
      match.dot = dot.id;
      match.bias_add = in.id;
      match.bias = b.operands[0];
      return true;
    }
    return false;
  }

  const HloModule& m_;
  std::vector<std::vector<int>> users_;  // instruction -> the instructions reading it
};

// The fused computation of `match`: parameters lhs, rhs, bias[, residual].
std::shared_ptr<const HloModule> make_computation(const HloModule& m, const Match& match) {
  HloBuilder b("fused_computation");
  const HloInstruction& dot = m.at(match.dot);
  int lhs = b.parameter(m.at(dot.operands[0]).shape, m.at(dot.operands[0]).dtype);
  int rhs = b.parameter(m.at(dot.operands[1]).shape, m.at(dot.operands[1]).dtype);
  int bias = b.parameter(m.at(match.bias).shape, m.at(match.bias).dtype);
  int residual = match.residual >= 0 ? b.parameter(m.at(match.residual).shape, m.at(match.residual).dtype) : -1;
  int value = b.copy(dot, {lhs, rhs});
  if (match.reshape >= 0) value = b.copy(m.at(match.reshape), {value});
  const HloInstruction& add = m.at(match.bias_add);
  b.set_metadata(add.metadata);  // the epilogue's bias add and broadcast come from the add
  value = b.binary(HloOpcode::kAdd, value, b.broadcast(bias, add.shape, {static_cast<int64_t>(add.shape.size()) - 1}));
  if (residual >= 0) value = b.binary(HloOpcode::kAdd, value, residual);
  return std::make_shared<HloModule>(b.build({value}));
}

}  // namespace

bool DotEpilogueFusion::run(HloModule& module) {
  const std::map<int, Match> matches = Matcher(module).find();
  if (matches.empty()) return false;
  HloBuilder b(module.name);
  std::vector<int> new_id(module.instructions.size(), -1);
  std::vector<int> outputs;
  for (const HloInstruction& in : module.instructions) {
    std::vector<int> ops;
    for (int o : in.operands) ops.push_back(new_id[static_cast<size_t>(o)]);
    if (in.id == module.root) {
      outputs = std::move(ops);
      break;
    }
    auto it = matches.find(in.id);
    if (it == matches.end()) {
      // The matched dot, reshape and bias add are copied too and left dead: build() drops them.
      new_id[static_cast<size_t>(in.id)] = b.copy(in, std::move(ops));
      continue;
    }
    const Match& match = it->second;
    const HloInstruction& dot = module.at(match.dot);
    std::vector<int> operands = {new_id[static_cast<size_t>(dot.operands[0])], new_id[static_cast<size_t>(dot.operands[1])],
                                 new_id[static_cast<size_t>(match.bias)]};
    if (match.residual >= 0) operands.push_back(new_id[static_cast<size_t>(match.residual)]);
    b.set_metadata(in.metadata);  // the fusion is named for the add it replaces
    new_id[static_cast<size_t>(in.id)] = b.fusion(make_computation(module, match), operands, FusionKind::kOutput);
    b.set_metadata({});
  }
  module = b.build(outputs);
  return true;
}

std::optional<DotEpilogueOperands> dot_epilogue_of(const HloInstruction& fusion) {
  if (fusion.opcode != HloOpcode::kFusion || fusion.fusion_kind != FusionKind::kOutput) return std::nullopt;
  if (fusion.operands.size() < 3 || fusion.operands.size() > 4) return std::nullopt;
  int dots = 0;
  for (const HloInstruction& in : fusion.fused_computation->instructions) dots += in.opcode == HloOpcode::kDot;
  if (dots != 1) return std::nullopt;
  return DotEpilogueOperands{true, fusion.operands.size() == 4};
}

}  // namespace lazytrain::backend::cpu
