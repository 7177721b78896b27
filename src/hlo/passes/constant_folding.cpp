#include "hlo/passes/constant_folding.h"

#include <optional>

#include "core/error.h"
#include "hlo/evaluator/hlo_evaluator.h"
#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {

namespace {

bool is_constant(const HloBuilder& b, int id) { return b.at(id).opcode == HloOpcode::kConstant; }

bool is_scalar_constant(const HloBuilder& b, int id) { return is_constant(b, id) && b.shape(id).empty(); }

// A constant, or a broadcast of one: a value known at compile time.
bool is_known(const HloBuilder& b, int id) {
  return is_constant(b, id) || (b.at(id).opcode == HloOpcode::kBroadcast && is_constant(b, b.at(id).operands[0]));
}

// The rank-0 constant that `id` is or broadcasts (every element equal), or -1.
int splat_scalar(const HloBuilder& b, int id) {
  if (is_scalar_constant(b, id)) return id;
  const HloInstruction& in = b.at(id);
  if (in.opcode == HloOpcode::kBroadcast && is_scalar_constant(b, in.operands[0])) return in.operands[0];
  return -1;
}

// Evaluates `in` over operands `ops` of `b` (each known: a constant or a
// broadcast of one) with the HLO evaluator. nullopt when evaluation raises Error.
std::optional<Literal> evaluate(const HloBuilder& b, const HloInstruction& in, const std::vector<int>& ops) {
  try {
    const HloEvaluator evaluator;
    std::vector<Literal> operands;
    for (int o : ops) {
      const HloInstruction& op = b.at(o);
      if (op.opcode == HloOpcode::kConstant) {
        operands.push_back(op.literal);
      } else {
        operands.push_back(evaluator.evaluate_instruction(op, {b.at(op.operands[0]).literal}));
      }
    }
    return evaluator.evaluate_instruction(in, operands);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// The id that replaces `in` (operands mapped to `ops` in `b`), or -1.
int fold(HloBuilder& b, const HloInstruction& in, const std::vector<int>& ops) {
  if (never_folded(in.opcode) || ops.empty()) return -1;
  for (int o : ops) {
    if (!is_known(b, o)) return -1;
  }
  if (in.opcode == HloOpcode::kBroadcast && is_scalar_constant(b, ops[0])) return -1;  // already a splat

  bool all_splats = true;
  for (int o : ops) all_splats = all_splats && splat_scalar(b, o) >= 0;
  if (all_splats && (is_elementwise(in.opcode) || is_splat_preserving(in.opcode))) {
    int scalar = -1;
    if (is_splat_preserving(in.opcode)) {
      scalar = splat_scalar(b, ops[0]);
    } else {
      // Elementwise: the same op on the scalars gives every element of the result.
      std::vector<int> scalars;
      for (int o : ops) scalars.push_back(splat_scalar(b, o));
      HloInstruction on_scalars = in;
      on_scalars.shape = {};
      std::optional<Literal> value = evaluate(b, on_scalars, scalars);
      if (!value) return -1;
      scalar = b.constant(*value);
    }
    return in.shape.empty() ? scalar : b.broadcast(scalar, in.shape, {});
  }
  if (numel(in.shape) > ConstantFolding::kMaxFoldedElements) return -1;
  int64_t evaluated = 0;
  for (int o : ops) evaluated += numel(b.shape(o));
  if (evaluated > ConstantFolding::kMaxEvaluatedElements) return -1;
  std::optional<Literal> value = evaluate(b, in, ops);
  if (!value) return -1;
  return b.constant(*value);
}

}  // namespace

bool ConstantFolding::run(HloModule& module) {
  return rewrite_module(module, [&](HloBuilder& b, const HloInstruction& in, const std::vector<int>& ops) {
    int id = fold(b, in, ops);
    return Rewritten{id, id >= 0};
  });
}

}  // namespace lazytrain::hlo
