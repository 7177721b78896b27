#include "hlo/passes/hlo_pass.h"

#include "core/error.h"
#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {

bool rewrite_module(HloModule& module, const ReplaceFn& replace) {
  HloBuilder b(module.name);
  std::vector<int> map(module.instructions.size(), -1);
  bool replaced = false;
  std::vector<int> outputs;
  for (const HloInstruction& in : module.instructions) {
    std::vector<int> ops;
    for (int o : in.operands) ops.push_back(map[static_cast<size_t>(o)]);
    if (in.id == module.root) {
      outputs = std::move(ops);
      break;
    }
    b.set_metadata(in.metadata);  // what replaces `in` comes from its op
    Rewritten r = replace(b, in, ops);
    replaced = replaced || r.replaced;
    map[static_cast<size_t>(in.id)] = r.id >= 0 ? r.id : b.copy(in, std::move(ops));
  }
  const size_t before = module.instructions.size();
  const int64_t num_partitions = module.num_partitions;
  std::optional<HloSharding> output_layout = module.at(module.root).sharding;
  module = b.build(outputs);
  module.num_partitions = num_partitions;  // a partitioned module stays one, its outputs in their layouts
  module.instructions[static_cast<size_t>(module.root)].sharding = std::move(output_layout);
  return replaced || module.instructions.size() != before;
}

bool reorder_module(HloModule& module, const std::vector<int>& order) {
  bool changed = false;
  for (size_t i = 0; i < order.size(); ++i) changed = changed || order[i] != module.instructions[i].id;
  if (!changed) return false;
  HloBuilder b(module.name);
  std::vector<int> map(module.instructions.size(), -1);
  for (int id : order) {
    const HloInstruction& in = module.at(id);
    std::vector<int> ops;
    for (int o : in.operands) ops.push_back(map[static_cast<size_t>(o)]);
    map[static_cast<size_t>(id)] = b.copy(in, std::move(ops));
  }
  std::vector<int> outputs;
  for (int o : module.at(module.root).operands) outputs.push_back(map[static_cast<size_t>(o)]);
  module = b.build(outputs);
  return true;
}

bool run_passes(HloModule& module, const std::vector<std::unique_ptr<HloPass>>& passes, const PassDumpFn& dump) {
  bool changed = false;
  for (const auto& pass : passes) {
    // A partitioned module's entry layout: passes that rebuild the module keep
    // its outputs in order but make a new ROOT.
    const int64_t num_partitions = module.num_partitions;
    const std::optional<HloSharding> output_layout = module.at(module.root).sharding;
    bool c = pass->run(module);
    if (num_partitions > 1) {
      module.num_partitions = num_partitions;
      module.instructions[static_cast<size_t>(module.root)].sharding = output_layout;
    }
    try {
      verify(module);
    } catch (const Error& e) {
      throw Error("[hlo pass " + pass->name() + "] produced an invalid module: " + e.what());
    }
    if (c && dump) dump(pass->name(), module);
    changed = changed || c;
  }
  return changed;
}

}  // namespace lazytrain::hlo
