// The reference backend: runs an HloModule instruction by instruction, freeing
// each intermediate after its last use.
#include <cstdio>
#include <cstdlib>
#include <map>

#include "backend/interpreter/interpreter_compiler.h"
#include "backend/interpreter/kernels.h"
#include "backend/literal_buffer.h"
#include "core/error.h"
#include "hlo/collective_cases.h"
#include "hlo/evaluator/hlo_evaluator.h"
#include "hlo/op_metadata.h"
#include "runtime/collectives.h"
#include "runtime/metrics.h"
#include "runtime/profiler.h"

namespace lazytrain::backend {

namespace {

using hlo::HloOpcode;
using interpreter::Buffer;

// Runs `module` on `arguments`, freeing each intermediate after its last use.
// Fusions run their fused computation the same way. `profile`: instructions
// over 5 ms on stderr; `trace`: an "interpreter" event per instruction.
std::vector<Buffer> evaluate_module(const hlo::HloModule& module, const std::vector<Buffer>& arguments, bool profile, bool trace);

}  // namespace

runtime::ReduceOp interpreter::reduce_op(hlo::ReduceKind kind) {
  switch (kind) {
    case hlo::ReduceKind::kAdd: return runtime::ReduceOp::kSum;
    case hlo::ReduceKind::kMax: return runtime::ReduceOp::kMax;
    case hlo::ReduceKind::kMin: return runtime::ReduceOp::kMin;
    case hlo::ReduceKind::kMul: return runtime::ReduceOp::kProduct;
    case hlo::ReduceKind::kLogAddExp: break;  // refused by shape inference
  }
  return runtime::ReduceOp::kSum;
}

Buffer interpreter::evaluate_instruction(const hlo::HloInstruction& in, const Operands& args, const std::vector<Buffer>& arguments) {
  switch (in.opcode) {
    case HloOpcode::kParameter: {
      const Buffer& a = arguments[static_cast<size_t>(in.parameter_number)];
      check(a.shape() == in.shape && a.dtype() == in.dtype, "interpreter",
            "argument " + std::to_string(in.parameter_number) + " is " + xla_name(a.dtype()) + shape_str(a.shape()) +
                ", expected " + xla_name(in.dtype) + shape_str(in.shape));
      return a;
    }
    case HloOpcode::kConstant: return buffer_from_literal(in.literal);
    case HloOpcode::kReshape: return args[0]->reshaped(in.shape);
    case HloOpcode::kPartitionId: {
      Buffer id(Shape{}, DType::kInt32);
      *id.data<int32_t>() = runtime::global_ordinal(runtime::current_device());
      return id;
    }
    // The interpreter runs a start's collective at once; its done hands on the value.
    HLO_COLLECTIVE_CASES:
      switch (hlo::synchronous_collective(in.opcode)) {
        case HloOpcode::kAllReduce: return runtime::all_reduce(*args[0], reduce_op(in.reduce_kind), in.replica_groups);
        case HloOpcode::kAllGather: return runtime::all_gather(*args[0], in.dimensions[0], in.replica_groups);
        default: return runtime::reduce_scatter(*args[0], reduce_op(in.reduce_kind), in.dimensions[0], in.replica_groups);
      }
    HLO_COLLECTIVE_DONE_CASES: return *args[0];
    case HloOpcode::kFusion:
      check(!hlo::is_multi_output_fusion(in), "interpreter", in.name() + " is a multi-output fusion (evaluate_fusion gives its elements)");
      return evaluate_fusion(in, args)[0];
    case HloOpcode::kGetTupleElement: throw Error("[interpreter] " + in.name() + " reads a multi-output fusion's element: evaluate_fusion gives them");
    case HloOpcode::kDot:
      // As the compiled backends (oneDNN multiplies floating types only): the
      // reference runs what they run. (The HLO evaluator folds integer dots.)
      check(is_floating_point(in.dtype), "interpreter", in.name() + ": dot supports f32, bf16 and f16, got " + xla_name(in.dtype));
      [[fallthrough]];
    default: {
      std::vector<hlo::ArrayRef> refs;
      for (const Buffer* a : args) refs.emplace_back(a->raw(), a->shape(), a->dtype());
      Buffer out(in.shape, in.dtype);
      hlo::evaluate_into(in, refs, hlo::MutableArrayRef(out.raw(), out.shape(), out.dtype()));
      return out;
    }
  }
}

std::vector<Buffer> interpreter::evaluate_fusion(const hlo::HloInstruction& fusion, const Operands& args) {
  std::vector<Buffer> fused_args;
  for (const Buffer* a : args) fused_args.push_back(*a);
  return evaluate_module(*fusion.fused_computation, fused_args, false, false);
}

namespace {

// One instruction's value into `values`, a multi-output fusion's into `tuples`.
void evaluate_into_values(const hlo::HloInstruction& in, const interpreter::Operands& args, const std::vector<Buffer>& arguments,
                          std::vector<Buffer>& values, std::vector<std::vector<Buffer>>& tuples) {
  try {
    if (hlo::is_multi_output_fusion(in)) {
      tuples[static_cast<size_t>(in.id)] = interpreter::evaluate_fusion(in, args);
    } else if (in.opcode == HloOpcode::kGetTupleElement) {
      values[static_cast<size_t>(in.id)] = tuples[static_cast<size_t>(in.operands[0])].at(static_cast<size_t>(in.tuple_index));
    } else {
      values[static_cast<size_t>(in.id)] = interpreter::evaluate_instruction(in, args, arguments);
    }
  } catch (...) {
    hlo::rethrow_with_origin(in);  // names the op and the user's line
  }
}

std::vector<Buffer> evaluate_module(const hlo::HloModule& module, const std::vector<Buffer>& arguments, bool profile, bool trace) {
  check(static_cast<int>(arguments.size()) == module.num_parameters, "interpreter",
        module.name + " expects " + std::to_string(module.num_parameters) + " arguments, got " + std::to_string(arguments.size()));
  std::vector<int> last_use(module.instructions.size(), -1);
  for (const auto& in : module.instructions) {
    for (int o : in.operands) last_use[o] = in.id;
  }
  std::vector<Buffer> values(module.instructions.size());
  std::vector<std::vector<Buffer>> tuples(module.instructions.size());
  std::vector<Buffer> outputs;
  for (const auto& in : module.instructions) {
    interpreter::Operands args;
    for (int o : in.operands) args.push_back(&values[o]);
    if (in.opcode == HloOpcode::kTuple) {
      for (const Buffer* a : args) outputs.push_back(*a);
      break;
    }
    if (profile || trace) {
      const int64_t t0 = runtime::now_ns();
      evaluate_into_values(in, args, arguments, values, tuples);
      const int64_t t1 = runtime::now_ns();
      const double ms = static_cast<double>(t1 - t0) * 1e-6;
      if (profile && ms > 5) std::fprintf(stderr, "[profile] %8.1f ms  %s %s\n", ms, in.name().c_str(), shape_text(module, in).c_str());
      const bool work = in.opcode != HloOpcode::kParameter && in.opcode != HloOpcode::kConstant && in.opcode != HloOpcode::kReshape;
      if (trace && work) runtime::record_span("interpreter", in.name(), t0, t1, {{"shape", shape_text(module, in)}});
    } else {
      evaluate_into_values(in, args, arguments, values, tuples);
    }
    for (int o : in.operands) {
      if (last_use[o] != in.id) continue;
      values[o] = Buffer();
      tuples[static_cast<size_t>(o)].clear();
    }
  }
  return outputs;
}

class InterpreterExecutable : public Executable {
 public:
  InterpreterExecutable(hlo::HloModule module, bool profile) : module_(std::move(module)), profile_(profile) {}
  const hlo::HloModule& module() const override { return module_; }
  std::vector<Buffer> execute(const std::vector<Buffer>& arguments) override {
    return evaluate_module(module_, arguments, profile_, runtime::is_tracing());
  }

 private:
  hlo::HloModule module_;
  // CompilerOptions::profile (LAZYTRAIN_PROFILE_STDERR) prints every instruction that takes over 5 ms.
  bool profile_ = false;
};

class InterpreterCompiler : public Compiler {
 public:
  explicit InterpreterCompiler(const CompilerOptions& options) : profile_(options.profile) {}
  std::string name() const override { return "interpreter"; }
  std::unique_ptr<Executable> compile(hlo::HloModule module) override {
    hlo::verify(module);
    return std::make_unique<InterpreterExecutable>(std::move(module), profile_);
  }

 private:
  bool profile_;
};

}  // namespace

namespace interpreter {
std::unique_ptr<Compiler> make_interpreter_compiler(const CompilerOptions& options) {
  return std::make_unique<InterpreterCompiler>(options);
}
}  // namespace interpreter

}  // namespace lazytrain::backend
