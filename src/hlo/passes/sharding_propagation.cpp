#include "hlo/passes/sharding_propagation.h"

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "hlo/custom_call.h"
#include "hlo/op_metadata.h"
#include "hlo/sharding_util.h"

namespace lazytrain::hlo {

bool has_sharding(const HloModule& module) {
  return std::any_of(module.instructions.begin(), module.instructions.end(), [](const HloInstruction& in) { return in.sharding.has_value(); });
}

namespace {

using sharding_util::map_dimensions;
using sharding_util::tile_count;

// The dimension map of an op that keeps every dimension in place.
std::vector<int64_t> same_dimensions(size_t rank) {
  std::vector<int64_t> map(rank);
  for (size_t d = 0; d < rank; ++d) map[d] = static_cast<int64_t>(d);
  return map;
}

// The batch dimensions of an operand of rank `rank` map to themselves, the rest nowhere.
std::vector<int64_t> batch_only(size_t rank, size_t batch) {
  std::vector<int64_t> map(rank, -1);
  for (size_t d = 0; d < batch; ++d) map[d] = static_cast<int64_t>(d);
  return map;
}

bool is_tiled(const std::optional<HloSharding>& sharding) { return sharding && sharding->is_tiled(); }

class Propagator {
 public:
  explicit Propagator(HloModule& module) : m_(module), s_(module.instructions.size()), fixed_(module.instructions.size(), false) {
    for (const HloInstruction& in : m_.instructions) {
      if (in.id == m_.root) continue;
      if (in.sharding) {
        if (!in.sharding->is_replicated() && !in.sharding->is_tiled()) {
          fail(in, "its sharding " + in.sharding->to_string() + " is not supported: the SPMD partitioner takes replicated and tiled layouts");
        }
        s_[static_cast<size_t>(in.id)] = in.sharding;
        fixed_[static_cast<size_t>(in.id)] = true;
      } else if (in.opcode == HloOpcode::kParameter) {
        s_[static_cast<size_t>(in.id)] = HloSharding::replicate();
        fixed_[static_cast<size_t>(in.id)] = true;
      }
    }
  }

  void run() {
    for (bool changed = true; changed;) {
      changed = false;
      for (const HloInstruction& in : m_.instructions) {
        if (in.id != m_.root) changed |= improve(in.id, forward(in));
      }
      for (auto it = m_.instructions.rbegin(); it != m_.instructions.rend(); ++it) {
        if (it->id == m_.root || !is_tiled(of(it->id))) continue;
        for (size_t k = 0; k < it->operands.size(); ++k) changed |= improve(it->operands[k], backward(*it, k));
      }
    }
    std::vector<HloSharding> outputs;
    for (HloInstruction& in : m_.instructions) {
      if (in.id == m_.root) continue;
      in.sharding = s_[static_cast<size_t>(in.id)].value_or(HloSharding::replicate());
    }
    HloInstruction& root = m_.instructions[static_cast<size_t>(m_.root)];
    for (int o : root.operands) outputs.push_back(*m_.at(o).sharding);
    root.sharding = HloSharding::tuple(std::move(outputs));
  }

 private:
  const std::optional<HloSharding>& of(int id) const { return s_[static_cast<size_t>(id)]; }
  const HloInstruction& operand(const HloInstruction& in, size_t k) const { return m_.at(in.operands[k]); }

  [[noreturn]] void fail(const HloInstruction& in, const std::string& what) const {
    const std::string origin = origin_text(in.metadata);
    throw Error("[sharding-propagation] " + in.name() + (origin.empty() ? "" : " (" + origin + ")") + ": " + what);
  }

  // Operand k's sharding moved by `map` into a value of rank `out_rank`; nullopt when it is not tiled.
  std::optional<HloSharding> moved(const HloInstruction& in, size_t k, size_t out_rank, const std::vector<int64_t>& map) const {
    const std::optional<HloSharding>& s = of(in.operands[k]);
    if (!is_tiled(s)) return std::nullopt;
    return map_dimensions(*s, static_cast<int64_t>(out_rank), map);
  }
  // The instruction's own sharding moved by `map` (rank of `in`'s operand `k`).
  std::optional<HloSharding> moved_back(const HloInstruction& in, size_t k, const std::vector<int64_t>& map) const {
    return map_dimensions(*of(in.id), static_cast<int64_t>(operand(in, k).shape.size()), map);
  }

  // The most tiled of `candidates`, merged with each other one that fits it.
  static std::optional<HloSharding> merged(std::vector<std::optional<HloSharding>> candidates) {
    std::vector<HloSharding> tiled;
    for (auto& c : candidates) {
      if (is_tiled(c)) tiled.push_back(std::move(*c));
    }
    if (tiled.empty()) return std::nullopt;
    std::stable_sort(tiled.begin(), tiled.end(), [](const HloSharding& a, const HloSharding& b) { return tile_count(a) > tile_count(b); });
    HloSharding result = tiled[0];
    for (size_t i = 1; i < tiled.size(); ++i) {
      if (auto both = sharding_util::merge(result, tiled[i])) result = std::move(*both);
    }
    return result;
  }

  bool improve(int id, std::optional<HloSharding> candidate) {
    auto& current = s_[static_cast<size_t>(id)];
    if (fixed_[static_cast<size_t>(id)] || !is_tiled(candidate)) return false;
    HloSharding fitted = sharding_util::fit_to_shape(*candidate, m_.at(id).shape);
    if (tile_count(fitted) == 1) return false;
    if (!current) {
      current = std::move(fitted);
      return true;
    }
    std::optional<HloSharding> both = sharding_util::merge(*current, fitted);
    if (!both || tile_count(*both) <= tile_count(*current)) return false;
    current = std::move(both);
    return true;
  }

  struct DotDims {
    size_t batch;
    int64_t lhs_contracting, rhs_contracting, lhs_free, rhs_free;
  };
  static DotDims dot_dims(const HloInstruction& in) {
    const auto nb = static_cast<int64_t>(in.dot.lhs_batch_dimensions.size());
    const int64_t lc = in.dot.lhs_contracting_dimensions[0], rc = in.dot.rhs_contracting_dimensions[0];
    return {static_cast<size_t>(nb), lc, rc, lc == nb ? nb + 1 : nb, rc == nb ? nb + 1 : nb};
  }

  // The sdpa custom-calls' operands that carry the batch dimensions: q, k, v
  // (and the forward's result and dout in the backward), and the mask's
  // dimensions that are not broadcast.
  std::vector<int64_t> sdpa_operand_map(const HloInstruction& in, size_t k, bool backward) const {
    const CustomCallConfig config(in.backend_config);
    const size_t rank = operand(in, 0).shape.size(), batch = rank - 2;
    const size_t mask = config.number("has_mask") != 0 ? (backward ? 6 : 4) : in.operands.size();
    const bool carries_batch = k < 3 || (backward && (k == 4 || k == 5));
    if (carries_batch) return batch_only(rank, batch);
    std::vector<int64_t> map(operand(in, k).shape.size(), -1);
    if (k == mask) {
      for (size_t d = 0; d < batch; ++d) map[d] = operand(in, k).shape[d] == operand(in, 0).shape[d] ? static_cast<int64_t>(d) : -1;
    }
    return map;
  }

  // The instruction's sharding from its operands'.
  std::optional<HloSharding> forward(const HloInstruction& in) const {
    const size_t rank = in.shape.size();
    auto from_each = [&](auto map_of) {
      std::vector<std::optional<HloSharding>> candidates;
      for (size_t k = 0; k < in.operands.size(); ++k) {
        const std::vector<int64_t> map = map_of(k);
        if (!map.empty()) candidates.push_back(moved(in, k, rank, map));
      }
      return merged(std::move(candidates));
    };
    if (is_elementwise(in.opcode)) return from_each([&](size_t) { return same_dimensions(rank); });
    switch (in.opcode) {
      case HloOpcode::kParameter:
      case HloOpcode::kConstant:
      case HloOpcode::kIota:
      case HloOpcode::kRngBitGenerator:
      case HloOpcode::kPartitionId:
        return std::nullopt;
      case HloOpcode::kBroadcast:
        return moved(in, 0, rank, in.dimensions);
      case HloOpcode::kTranspose: {
        std::vector<int64_t> map(rank);
        for (size_t i = 0; i < rank; ++i) map[static_cast<size_t>(in.dimensions[i])] = static_cast<int64_t>(i);
        return moved(in, 0, rank, map);
      }
      case HloOpcode::kReshape: {
        const std::optional<HloSharding>& s = of(in.operands[0]);
        if (!is_tiled(s)) return std::nullopt;
        return sharding_util::reshape_sharding(*s, operand(in, 0).shape, in.shape);
      }
      case HloOpcode::kSlice:
        return moved(in, 0, rank, uncut_dimensions(operand(in, 0).shape, in.shape));
      case HloOpcode::kConcatenate:
        return from_each([&](size_t) { return all_but(rank, in.dimensions[0]); });
      case HloOpcode::kReduce:
        return moved(in, 0, rank, reduce_map(in));
      case HloOpcode::kDot: {
        const DotDims d = dot_dims(in);
        std::vector<int64_t> lhs = batch_only(rank, d.batch), rhs = batch_only(rank, d.batch);
        lhs[static_cast<size_t>(d.lhs_free)] = static_cast<int64_t>(d.batch);
        rhs[static_cast<size_t>(d.rhs_free)] = static_cast<int64_t>(d.batch + 1);
        return merged({moved(in, 0, rank, lhs), moved(in, 1, rank, rhs)});
      }
      case HloOpcode::kGather: {
        // operand [N, R...], indices [I...] -> [I..., R...]
        const size_t ni = operand(in, 1).shape.size();
        std::vector<int64_t> table(operand(in, 0).shape.size(), -1);
        for (size_t r = 1; r < table.size(); ++r) table[r] = static_cast<int64_t>(ni + r - 1);
        return merged({moved(in, 0, rank, table), moved(in, 1, rank, same_dimensions(ni))});
      }
      case HloOpcode::kScatter: {
        // operand [N, R...], indices [I...], updates [I..., R...] -> [N, R...]
        const size_t ni = operand(in, 1).shape.size();
        std::vector<int64_t> updates(operand(in, 2).shape.size(), -1);
        for (size_t r = ni; r < updates.size(); ++r) updates[r] = static_cast<int64_t>(r - ni + 1);
        return merged({moved(in, 0, rank, same_dimensions(rank)), moved(in, 2, rank, updates)});
      }
      case HloOpcode::kOptimizationBarrier:
        return moved(in, 0, rank, same_dimensions(rank));
      case HloOpcode::kCustomCall:
        if (in.custom_call_target == kShardingTarget) return std::nullopt;  // fixed: its own annotation
        if (in.custom_call_target == kTopKTarget) return moved(in, 0, rank, all_but(rank, topk_dim(in)));
        if (in.custom_call_target == kSdpaForwardTarget || in.custom_call_target == kSdpaBackwardTarget) {
          const bool backward = in.custom_call_target == kSdpaBackwardTarget;
          const size_t batch = operand(in, 0).shape.size() - 2;
          return from_each([&](size_t k) {
            std::vector<int64_t> map = sdpa_operand_map(in, k, backward);
            for (size_t d = batch; d < map.size(); ++d) map[d] = -1;
            return map;
          });
        }
        break;
      default:
        break;
    }
    for (size_t k = 0; k < in.operands.size(); ++k) {
      if (is_tiled(of(in.operands[k]))) {
        fail(in, "no sharding rule for " + opcode_name(in.opcode) + (in.opcode == HloOpcode::kCustomCall ? " " + in.custom_call_target : "") +
                     ", and its operand " + operand(in, k).name() + " is tiled " + of(in.operands[k])->to_string());
      }
    }
    return std::nullopt;
  }

  // Operand k's sharding from the instruction's (which is tiled).
  std::optional<HloSharding> backward(const HloInstruction& in, size_t k) const {
    const size_t rank = in.shape.size();
    if (is_elementwise(in.opcode)) return moved_back(in, k, same_dimensions(rank));
    switch (in.opcode) {
      case HloOpcode::kRngBitGenerator:
        return std::nullopt;  // the seed is a scalar
      case HloOpcode::kBroadcast: {
        std::vector<int64_t> map(rank, -1);
        for (size_t i = 0; i < in.dimensions.size(); ++i) map[static_cast<size_t>(in.dimensions[i])] = static_cast<int64_t>(i);
        return moved_back(in, k, map);
      }
      case HloOpcode::kTranspose:
        return moved_back(in, k, in.dimensions);
      case HloOpcode::kReshape:
        return sharding_util::reshape_sharding(*of(in.id), in.shape, operand(in, 0).shape);
      case HloOpcode::kSlice:
        return moved_back(in, k, uncut_dimensions(in.shape, operand(in, 0).shape));
      case HloOpcode::kConcatenate:
        return moved_back(in, k, all_but(rank, in.dimensions[0]));
      case HloOpcode::kReduce: {
        if (k != 0) return std::nullopt;
        const std::vector<int64_t> forward_map = reduce_map(in);
        std::vector<int64_t> map(rank);
        for (size_t d = 0; d < forward_map.size(); ++d) {
          if (forward_map[d] >= 0) map[static_cast<size_t>(forward_map[d])] = static_cast<int64_t>(d);
        }
        return moved_back(in, k, map);
      }
      case HloOpcode::kDot: {
        const DotDims d = dot_dims(in);
        // From the result: batch and this side's free dimension; from the
        // other operand: batch and the contracting dimension.
        std::vector<int64_t> from_result = batch_only(rank, d.batch), from_other = batch_only(rank, d.batch);
        if (k == 0) {
          from_result[d.batch] = d.lhs_free;
          from_other[static_cast<size_t>(d.rhs_contracting)] = d.lhs_contracting;
        } else {
          from_result[d.batch + 1] = d.rhs_free;
          from_other[static_cast<size_t>(d.lhs_contracting)] = d.rhs_contracting;
        }
        return merged({moved_back(in, k, from_result), moved(in, 1 - k, rank, from_other)});
      }
      case HloOpcode::kGather: {
        const size_t ni = operand(in, 1).shape.size();
        std::vector<int64_t> map(rank, -1);
        for (size_t j = 0; j < rank; ++j) {
          if (k == 0 && j >= ni) map[j] = static_cast<int64_t>(j - ni + 1);
          if (k == 1 && j < ni) map[j] = static_cast<int64_t>(j);
        }
        return moved_back(in, k, map);
      }
      case HloOpcode::kScatter: {
        if (k == 0) return moved_back(in, k, same_dimensions(rank));
        if (k == 1) return std::nullopt;
        const size_t ni = operand(in, 1).shape.size();
        std::vector<int64_t> map(rank, -1);
        for (size_t r = 1; r < rank; ++r) map[r] = static_cast<int64_t>(ni + r - 1);
        return moved_back(in, k, map);
      }
      case HloOpcode::kOptimizationBarrier:
        return k == 0 ? moved_back(in, k, same_dimensions(rank)) : std::nullopt;
      case HloOpcode::kCustomCall:
        if (in.custom_call_target == kShardingTarget) return moved_back(in, k, same_dimensions(rank));
        if (in.custom_call_target == kTopKTarget) return moved_back(in, k, all_but(rank, topk_dim(in)));
        if (in.custom_call_target == kSdpaForwardTarget || in.custom_call_target == kSdpaBackwardTarget) {
          const std::vector<int64_t> operand_map = sdpa_operand_map(in, k, in.custom_call_target == kSdpaBackwardTarget);
          const size_t batch = operand(in, 0).shape.size() - 2;
          std::vector<int64_t> map(rank, -1);  // result dimension -> operand dimension
          for (size_t d = 0; d < operand_map.size(); ++d) {
            if (operand_map[d] >= 0 && d < batch) map[d] = static_cast<int64_t>(d);
          }
          return moved_back(in, k, map);
        }
        break;
      default:
        break;
    }
    fail(in, "no sharding rule for " + opcode_name(in.opcode) + (in.opcode == HloOpcode::kCustomCall ? " " + in.custom_call_target : "") +
                 ", and it is tiled " + of(in.id)->to_string());
  }

  // Slice: the dimensions it leaves whole keep their place; the cut ones map nowhere.
  static std::vector<int64_t> uncut_dimensions(const Shape& from, const Shape& to) {
    std::vector<int64_t> map(from.size(), -1);
    for (size_t d = 0; d < from.size(); ++d) {
      if (from[d] == to[d]) map[d] = static_cast<int64_t>(d);
    }
    return map;
  }
  static std::vector<int64_t> all_but(size_t rank, int64_t dimension) {
    std::vector<int64_t> map = same_dimensions(rank);
    map[static_cast<size_t>(dimension)] = -1;
    return map;
  }
  static int64_t topk_dim(const HloInstruction& in) { return static_cast<int64_t>(CustomCallConfig(in.backend_config).number("dim")); }
  // Reduce: operand dimension -> result dimension (-1: reduced).
  std::vector<int64_t> reduce_map(const HloInstruction& in) const {
    std::vector<int64_t> map(operand(in, 0).shape.size(), -1);
    int64_t next = 0;
    for (size_t d = 0; d < map.size(); ++d) {
      if (std::find(in.dimensions.begin(), in.dimensions.end(), static_cast<int64_t>(d)) == in.dimensions.end()) map[d] = next++;
    }
    return map;
  }

  HloModule& m_;
  std::vector<std::optional<HloSharding>> s_;
  std::vector<bool> fixed_;
};

}  // namespace

bool ShardingPropagation::run(HloModule& module) {
  if (module.num_partitions > 1 || !has_sharding(module)) return false;  // partitioned already, or nothing annotated
  Propagator(module).run();
  return true;
}

}  // namespace lazytrain::hlo
