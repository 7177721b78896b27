// The HLO interpreter's instruction step: the HLO evaluator's kernels
// (hlo/evaluator) run on device buffers. The interpreter is the reference the
// other backends are compared with, so it calls none of their kernels: no
// oneDNN and nothing of kernels/ (tests/layering_test.cpp holds it).
#pragma once

#include <vector>

#include "hlo/hlo_instruction.h"
#include "runtime/buffer.h"
#include "runtime/collectives.h"

namespace lazytrain::backend::interpreter {

using runtime::Buffer;
using Operands = std::vector<const Buffer*>;

// Evaluates one instruction of a module on its operand buffers; `arguments` are
// the module's parameters (for kParameter). Fusions run their fused computation;
// a reshape shares its operand's storage; collectives go to the replicas
// (runtime/collectives.h, run on the replica's execution thread); everything else runs the HLO
// evaluator's kernels (hlo::evaluate_into) into a new buffer.
// A multi-output fusion or a get-tuple-element raises Error: they go through evaluate_fusion.
Buffer evaluate_instruction(const hlo::HloInstruction& in, const Operands& args, const std::vector<Buffer>& arguments);
// A collective's reduction (HLO's to_apply) as the runtime's transports name it.
runtime::ReduceOp reduce_op(hlo::ReduceKind kind);

// Every value a fusion returns (one per element of its fused computation's
// ROOT tuple), evaluated on its operand buffers.
std::vector<Buffer> evaluate_fusion(const hlo::HloInstruction& fusion, const Operands& args);

}  // namespace lazytrain::backend::interpreter
