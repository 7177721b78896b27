#include "hlo/evaluator/hlo_evaluator.h"

#include <cstring>

#include "core/error.h"
#include "hlo/collective_cases.h"
#include "hlo/evaluator/kernels.h"

namespace lazytrain::hlo {

void evaluate_into(const HloInstruction& in, const std::vector<ArrayRef>& args, const MutableArrayRef& out) {
  switch (in.opcode) {
    case HloOpcode::kParameter:
    case HloOpcode::kFusion:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kTuple: throw Error("[hlo evaluator] " + in.name() + " has no value of its own to evaluate");
    HLO_COLLECTIVE_CASES:
      throw Error("[hlo evaluator] " + in.name() + " needs the other replicas' values: a backend runs it on a replica device");
    case HloOpcode::kPartitionId: throw Error("[hlo evaluator] " + in.name() + " needs the running device: a backend runs it on a replica device");
    case HloOpcode::kConstant: std::memcpy(out.raw(), in.literal.raw(), static_cast<size_t>(out.nbytes())); return;
    HLO_COLLECTIVE_DONE_CASES:  // the start's value (a backend ran the collective there)
    case HloOpcode::kOptimizationBarrier: std::memcpy(out.raw(), args.at(0).raw(), static_cast<size_t>(out.nbytes())); return;
    case HloOpcode::kIota:
    case HloOpcode::kRngBitGenerator: return evaluator::eval_generator(in, args, out);
    case HloOpcode::kBroadcast:
    case HloOpcode::kReshape:
    case HloOpcode::kTranspose:
    case HloOpcode::kSlice:
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kConcatenate: return evaluator::eval_data_movement(in, args, out);
    case HloOpcode::kGather: return evaluator::eval_gather(in, args, out);
    case HloOpcode::kScatter: return evaluator::eval_scatter(in, args, out);
    case HloOpcode::kDot: return evaluator::eval_dot(in, args, out);
    case HloOpcode::kReduce: return evaluator::eval_reduce(in, args, out);
    case HloOpcode::kCustomCall: return evaluator::eval_custom_call(in, args, out);
    default: return evaluator::eval_elementwise(in, args, out);
  }
}

Literal HloEvaluator::evaluate_instruction(const HloInstruction& in, const std::vector<Literal>& operands) const {
  switch (in.opcode) {
    case HloOpcode::kConstant: return in.literal;
    case HloOpcode::kReshape: return operands.at(0).reshaped(in.shape);
    case HloOpcode::kFusion:
      check(!is_multi_output_fusion(in), "hlo evaluator", in.name() + " is a multi-output fusion: evaluate its module to read its elements");
      return evaluate(*in.fused_computation, operands).at(0);
    default: break;
  }
  std::vector<ArrayRef> refs;
  for (const Literal& o : operands) refs.emplace_back(o.raw(), o.shape(), o.dtype());
  Literal out(in.shape, in.dtype);
  evaluate_into(in, refs, MutableArrayRef(out.mutable_raw(), out.shape(), out.dtype()));
  return out;
}

std::vector<Literal> HloEvaluator::evaluate(const HloModule& module, const std::vector<Literal>& arguments) const {
  check(static_cast<int>(arguments.size()) == module.num_parameters, "hlo evaluator",
        module.name + " expects " + std::to_string(module.num_parameters) + " arguments, got " + std::to_string(arguments.size()));
  std::vector<Literal> values(module.instructions.size());
  std::vector<std::vector<Literal>> tuples(module.instructions.size());  // multi-output fusions' elements
  for (const HloInstruction& in : module.instructions) {
    if (in.opcode == HloOpcode::kParameter) {
      const Literal& a = arguments[static_cast<size_t>(in.parameter_number)];
      check(a.shape() == in.shape && a.dtype() == in.dtype, "hlo evaluator",
            "argument " + std::to_string(in.parameter_number) + " is " + xla_name(a.dtype()) + shape_str(a.shape()) +
                ", expected " + xla_name(in.dtype) + shape_str(in.shape));
      values[static_cast<size_t>(in.id)] = a;
      continue;
    }
    std::vector<Literal> operands;
    for (int o : in.operands) operands.push_back(values[static_cast<size_t>(o)]);
    if (in.opcode == HloOpcode::kTuple) return operands;
    if (is_multi_output_fusion(in)) {
      tuples[static_cast<size_t>(in.id)] = evaluate(*in.fused_computation, operands);
      continue;
    }
    if (in.opcode == HloOpcode::kGetTupleElement) {
      values[static_cast<size_t>(in.id)] = tuples[static_cast<size_t>(in.operands[0])].at(static_cast<size_t>(in.tuple_index));
      continue;
    }
    values[static_cast<size_t>(in.id)] = evaluate_instruction(in, operands);
  }
  throw Error("[hlo evaluator] " + module.name + " has no ROOT tuple");
}

}  // namespace lazytrain::hlo
