#include "hlo/passes/algebraic_simplifier.h"

#include <optional>

#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {

namespace {

// True when `id` is a constant with every element equal to `value`, directly or
// through broadcasts and reshapes of one.
bool is_splat_of(const HloBuilder& b, int id, double value) {
  while (b.at(id).opcode == HloOpcode::kBroadcast || b.at(id).opcode == HloOpcode::kReshape) id = b.at(id).operands[0];
  return b.at(id).opcode == HloOpcode::kConstant && all_elements_equal(b.at(id).literal, value);
}

bool is_identity(const std::vector<int64_t>& dims) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// True for a permutation that keeps the leading dims and swaps the last two.
bool swaps_last_two(const std::vector<int64_t>& dims) {
  const size_t r = dims.size();
  if (r < 2) return false;
  for (size_t i = 0; i + 2 < r; ++i) {
    if (dims[i] != static_cast<int64_t>(i)) return false;
  }
  return dims[r - 2] == static_cast<int64_t>(r - 1) && dims[r - 1] == static_cast<int64_t>(r - 2);
}

// dot(transpose(x), y) = dot(x, y) with the contracting dim moved (XLA's
// TransposeFolding): when the transpose swaps an operand's last two dims and the
// batch dims lead, the other of the two becomes the contracting dim, and the
// dot's output is unchanged (one free dim each way). Also through a convert
// (autocast's bf16 cast of a transposed weight): convert(transpose(x)) is
// transpose(convert(x)). The matmul reads the operand in either layout, so the
// transposed copy (a whole weight matrix, or GPT-2's [768, 50257] lm_head) goes.
// Returns whether it folded; `operand` and `contracting` are updated.
bool fold_transpose_operand(HloBuilder& b, int& operand, const std::vector<int64_t>& batch, std::vector<int64_t>& contracting) {
  const size_t rank = b.shape(operand).size();
  if (contracting.size() != 1 || batch.size() + 2 != rank) return false;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i] != static_cast<int64_t>(i)) return false;
  }
  int source = operand;
  std::optional<DType> convert_to;
  if (b.at(source).opcode == HloOpcode::kConvert) {
    convert_to = b.at(source).dtype;
    source = b.at(source).operands[0];
  }
  if (b.at(source).opcode != HloOpcode::kTranspose || !swaps_last_two(b.at(source).dimensions)) return false;
  const int x = b.at(source).operands[0];
  operand = convert_to ? b.convert(x, *convert_to) : x;
  contracting[0] = contracting[0] == static_cast<int64_t>(rank) - 1 ? static_cast<int64_t>(rank) - 2 : static_cast<int64_t>(rank) - 1;
  return true;
}

// A dot of `lhs` and `rhs` with both operands' transposes folded; -1 when neither folds.
int dot_folding_transposes(HloBuilder& b, int lhs, int rhs, DotDimensionNumbers d, bool force) {
  const bool folded_lhs = fold_transpose_operand(b, lhs, d.lhs_batch_dimensions, d.lhs_contracting_dimensions);
  const bool folded_rhs = fold_transpose_operand(b, rhs, d.rhs_batch_dimensions, d.rhs_contracting_dimensions);
  if (!folded_lhs && !folded_rhs && !force) return -1;
  return b.dot(lhs, rhs, std::move(d));
}

// transpose(dot(a, b)) = dot(b, a) with the operands' roles swapped: (a b)^T = b^T a^T,
// and both transposes are free in the dot's contracting dimensions. The weight
// gradients of nn.Linear ([out, in] = (x^T g)^T) need no transpose kernel.
int swap_dot_operands(HloBuilder& b, const HloInstruction& dot) {
  DotDimensionNumbers d;
  d.lhs_batch_dimensions = dot.dot.rhs_batch_dimensions;
  d.rhs_batch_dimensions = dot.dot.lhs_batch_dimensions;
  d.lhs_contracting_dimensions = dot.dot.rhs_contracting_dimensions;
  d.rhs_contracting_dimensions = dot.dot.lhs_contracting_dimensions;
  return dot_folding_transposes(b, dot.operands[1], dot.operands[0], std::move(d), /*force=*/true);
}

// The id that replaces `in` (whose operands are already mapped to `ops` in
// `b`), or -1 when no rewrite applies. `users` counts the users of each
// instruction of the module being rewritten (by its old id), `first_operand`
// the old id of each one's first operand (-1: none).
int simplify(HloBuilder& b, const HloInstruction& in, const std::vector<int>& ops, const std::vector<int>& users,
             const std::vector<int>& first_operand) {
  auto same_type = [&](int id) { return b.shape(id) == in.shape && b.dtype(id) == in.dtype; };
  switch (in.opcode) {
    case HloOpcode::kAdd:
      if (is_splat_of(b, ops[1], 0.0) && same_type(ops[0])) return ops[0];
      if (is_splat_of(b, ops[0], 0.0) && same_type(ops[1])) return ops[1];
      // add(scatter(0, i, u), y) = scatter(y, i, u) (scatter adds): a tied embedding's
      // gradient (the lookup's rows added to the lm_head's) needs no zeroed copy.
      for (int side = 0; side < 2; ++side) {
        const HloInstruction& x = b.at(ops[side]);
        if (x.opcode == HloOpcode::kScatter && users[in.operands[side]] == 1 && is_splat_of(b, x.operands[0], 0.0) &&
            same_type(ops[1 - side])) {
          const int indices = x.operands[1], updates = x.operands[2];
          return b.scatter_add(ops[1 - side], indices, updates);
        }
      }
      break;
    case HloOpcode::kSubtract:
      if (is_splat_of(b, ops[1], 0.0) && same_type(ops[0])) return ops[0];
      break;
    case HloOpcode::kMultiply:
      if (is_splat_of(b, ops[1], 1.0) && same_type(ops[0])) return ops[0];
      if (is_splat_of(b, ops[0], 1.0) && same_type(ops[1])) return ops[1];
      if (!is_floating_point(in.dtype)) {
        // Integer and pred products with 0 are 0; float ones are not (inf, NaN).
        if (is_splat_of(b, ops[1], 0.0) && same_type(ops[1])) return ops[1];
        if (is_splat_of(b, ops[0], 0.0) && same_type(ops[0])) return ops[0];
      }
      break;
    case HloOpcode::kDivide:
      if (is_splat_of(b, ops[1], 1.0) && same_type(ops[0])) return ops[0];
      break;
    case HloOpcode::kDot:
      return dot_folding_transposes(b, ops[0], ops[1], in.dot, /*force=*/false);
    case HloOpcode::kNegate: {
      const HloInstruction& x = b.at(ops[0]);
      if (x.opcode == HloOpcode::kNegate && same_type(x.operands[0])) return x.operands[0];
      break;
    }
    case HloOpcode::kConvert:
      if (same_type(ops[0])) return ops[0];
      break;
    case HloOpcode::kReshape: {
      if (same_type(ops[0])) return ops[0];
      const HloInstruction& x = b.at(ops[0]);
      if (x.opcode == HloOpcode::kReshape) return b.reshape(x.operands[0], in.shape);  // returns x's operand when shapes agree
      break;
    }
    case HloOpcode::kTranspose: {
      if (is_identity(in.dimensions) && same_type(ops[0])) return ops[0];
      const HloInstruction& x = b.at(ops[0]);
      if (x.opcode == HloOpcode::kDot && swaps_last_two(in.dimensions) && users[in.operands[0]] == 1) {
        return swap_dot_operands(b, x);
      }
      // transpose(convert(dot)) = convert(transpose(dot)): autocast's f32 copy of a
      // bf16 weight gradient is transposed back to the weight's layout.
      if (x.opcode == HloOpcode::kConvert && swaps_last_two(in.dimensions) && users[in.operands[0]] == 1 &&
          b.at(x.operands[0]).opcode == HloOpcode::kDot && users[first_operand[in.operands[0]]] == 1) {
        const DType to = x.dtype;
        const HloInstruction dot = b.at(x.operands[0]);  // a copy: swap_dot_operands adds instructions
        return b.convert(swap_dot_operands(b, dot), to);
      }
      if (x.opcode == HloOpcode::kTranspose) {
        // Output dim i is x's dim in.dimensions[i], which is x's operand's dim x.dimensions[in.dimensions[i]].
        std::vector<int64_t> permutation;
        for (int64_t d : in.dimensions) permutation.push_back(x.dimensions[static_cast<size_t>(d)]);
        return b.transpose(x.operands[0], std::move(permutation));  // returns the operand for the identity
      }
      break;
    }
    case HloOpcode::kBroadcast: {
      if (is_identity(in.dimensions) && in.dimensions.size() == in.shape.size() && same_type(ops[0])) return ops[0];
      const HloInstruction& x = b.at(ops[0]);
      if (x.opcode == HloOpcode::kBroadcast) {
        // x's operand dim i lands in x's dim x.dimensions[i], which lands in dim in.dimensions[that].
        std::vector<int64_t> dimensions;
        for (int64_t d : x.dimensions) dimensions.push_back(in.dimensions[static_cast<size_t>(d)]);
        return b.broadcast(x.operands[0], in.shape, std::move(dimensions));
      }
      break;
    }
    case HloOpcode::kGather: {
      // gather(reshape?(convert(y))) = convert(gather(reshape?(y))): a convert acts on
      // each element alone, so it can follow the gather. Cross-entropy picks the
      // target's logit from the f32 copy of bf16 logits: the gather then reads the
      // bf16 logits, and the f32 copy (a vocabulary-wide array) need not be
      // materialised for 224 picked values (the loss's other users compute it in
      // their own kernels, hlo/passes/fusion.cpp).
      const HloInstruction& x = b.at(ops[0]);
      const bool reshaped = x.opcode == HloOpcode::kReshape;
      const HloInstruction& c = reshaped ? b.at(x.operands[0]) : x;
      if (c.opcode != HloOpcode::kConvert || !is_floating_point(c.dtype) || !is_floating_point(b.dtype(c.operands[0]))) break;
      const Shape operand_shape = x.shape;
      const int y = reshaped ? b.reshape(c.operands[0], operand_shape) : c.operands[0];
      return b.convert(b.gather(y, ops[1]), in.dtype);
    }
    case HloOpcode::kSlice: {
      bool from_start = true;
      for (int64_t s : in.slice_starts) from_start = from_start && s == 0;
      // Starting at 0 with the operand's own shape, every element is kept in order.
      if (from_start && same_type(ops[0])) return ops[0];
      break;
    }
    default: break;
  }
  return -1;
}

}  // namespace

bool AlgebraicSimplifier::run(HloModule& module) {
  std::vector<int> users(module.instructions.size(), 0), first_operand;
  for (const HloInstruction& in : module.instructions) {
    for (int o : in.operands) ++users[o];
    first_operand.push_back(in.operands.empty() ? -1 : in.operands[0]);
  }
  return rewrite_module(module, [&](HloBuilder& b, const HloInstruction& in, const std::vector<int>& ops) {
    int id = simplify(b, in, ops, users, first_operand);
    return Rewritten{id, id >= 0};
  });
}

}  // namespace lazytrain::hlo
