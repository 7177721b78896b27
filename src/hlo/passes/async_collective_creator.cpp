#include "hlo/passes/async_collective_creator.h"

#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {

bool AsyncCollectiveCreator::run(HloModule& module) {
  return rewrite_module(module, [](HloBuilder& b, const HloInstruction& in, const std::vector<int>& operands) -> Rewritten {
    if (!is_collective(in.opcode) || is_async_collective_start(in.opcode)) return {};
    HloInstruction start = in;
    start.opcode = async_collective_start(in.opcode);
    const int start_id = b.copy(start, operands);
    HloInstruction done;
    done.opcode = async_collective_done(start.opcode);
    done.metadata = in.metadata;
    done.sharding = in.sharding;
    return {b.copy(done, {start_id}), true};
  });
}

}  // namespace lazytrain::hlo
