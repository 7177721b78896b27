#include "hlo/passes/dce.h"

#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {

bool Dce::run(HloModule& module) {
  const size_t n = module.instructions.size();
  std::vector<bool> live(n, false);
  live[static_cast<size_t>(module.root)] = true;
  // Operands come before users, so one backward walk marks everything reachable.
  for (int i = module.root; i >= 0; --i) {
    const HloInstruction& in = module.at(i);
    if (in.opcode == HloOpcode::kParameter) live[static_cast<size_t>(i)] = true;
    if (!live[static_cast<size_t>(i)]) continue;
    for (int o : in.operands) live[static_cast<size_t>(o)] = true;
  }
  size_t dead = 0;
  for (bool l : live) dead += l ? 0 : 1;
  if (dead == 0) return false;

  HloBuilder b(module.name);
  std::vector<int> map(n, -1);
  std::vector<int> outputs;
  for (const HloInstruction& in : module.instructions) {
    if (!live[static_cast<size_t>(in.id)]) continue;
    std::vector<int> ops;
    for (int o : in.operands) ops.push_back(map[static_cast<size_t>(o)]);
    if (in.id == module.root) {
      outputs = std::move(ops);
      break;
    }
    map[static_cast<size_t>(in.id)] = b.copy(in, std::move(ops));
  }
  module = b.build(outputs);
  return true;
}

}  // namespace lazytrain::hlo
