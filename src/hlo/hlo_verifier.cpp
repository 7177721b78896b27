#include <vector>

#include "core/error.h"
#include "hlo/hlo_instruction.h"
#include "hlo/shape_inference.h"

namespace lazytrain::hlo {

namespace {

// Every start is read by exactly one done and by nothing else (XLA's
// asynchronous pairs): a backend hands the start's in-flight exchange to it.
void verify_async_pairs(const HloModule& module) {
  const size_t n = module.instructions.size();
  std::vector<int> done_users(n, 0), other_users(n, 0);
  for (const HloInstruction& in : module.instructions) {
    for (int o : in.operands) {
      if (o < 0 || static_cast<size_t>(o) >= n) continue;  // shape inference names the bad operand
      ++(is_async_collective_done(in.opcode) ? done_users : other_users)[static_cast<size_t>(o)];
      check(!is_async_collective_done(in.opcode) || o < in.id, "hlo verifier", in.name() + ": a done must come after its start");
    }
  }
  for (const HloInstruction& in : module.instructions) {
    if (!is_async_collective_start(in.opcode)) continue;
    const auto k = static_cast<size_t>(in.id);
    check(done_users[k] == 1 && other_users[k] == 0, "hlo verifier",
          in.name() + ": a start must be read by exactly one done, and by nothing else");
  }
}

}  // namespace

void verify(const HloModule& module) {
  verify_async_pairs(module);
  int parameters = 0;
  for (size_t i = 0; i < module.instructions.size(); ++i) {
    const HloInstruction& in = module.instructions[i];
    check(in.id == static_cast<int>(i), "hlo verifier", in.name() + ": id does not match its position " + std::to_string(i));
    ShapeAndType expected = infer_shape(module, in);
    if (!is_tuple_shaped(in)) {
      check(expected.shape == in.shape && expected.dtype == in.dtype, "hlo verifier",
            in.name() + ": has " + xla_name(in.dtype) + shape_str(in.shape) + ", expected " + xla_name(expected.dtype) +
                shape_str(expected.shape));
    }
    if (in.opcode == HloOpcode::kFusion) verify(*in.fused_computation);
    for (int o : in.operands) {
      check(!is_multi_output_fusion(module.at(o)) || in.opcode == HloOpcode::kGetTupleElement, "hlo verifier",
            in.name() + ": reads multi-output " + module.at(o).name() + " other than through get-tuple-element");
    }
    if (in.sharding && in.sharding->is_tiled()) {
      check(!is_tuple_shaped(in) && in.sharding->tiled_rank() == static_cast<int64_t>(in.shape.size()), "hlo verifier",
            in.name() + ": sharding " + in.sharding->to_string() + " tiles " + std::to_string(in.sharding->tiled_rank()) +
                " dimensions, expected one tile count per dimension of " + shape_str(in.shape));
    }
    if (in.sharding && in.sharding->kind() == HloSharding::Kind::kTuple) {  // the ROOT tuple's (the outputs') or a multi-output fusion's
      const size_t elements = in.opcode == HloOpcode::kTuple     ? in.operands.size()
                              : is_multi_output_fusion(in) ? in.fused_computation->at(in.fused_computation->root).operands.size()
                                                           : 0;
      check(elements > 0 && in.sharding->tuple_elements().size() == elements, "hlo verifier",
            in.name() + ": a tuple sharding " + in.sharding->to_string() + " needs a tuple-shaped value with one element each");
    }
    if (in.opcode == HloOpcode::kParameter) {
      check(in.parameter_number == parameters++, "hlo verifier", in.name() + ": parameters must be numbered in order");
    }
  }
  check(parameters == module.num_parameters, "hlo verifier", "module declares " + std::to_string(module.num_parameters) +
                                                                 " parameters but has " + std::to_string(parameters));
  check(module.root == static_cast<int>(module.instructions.size()) - 1 && module.at(module.root).opcode == HloOpcode::kTuple,
        "hlo verifier", "the root must be the last instruction and a tuple");
}

}  // namespace lazytrain::hlo
