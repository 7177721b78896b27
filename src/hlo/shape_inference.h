// Shape inference for every HLO opcode: the single rule that both the builder
// (to set an instruction's shape) and the verifier (to check it) use.
#pragma once

#include "hlo/hlo_instruction.h"

namespace lazytrain::hlo {

struct ShapeAndType {
  Shape shape;
  DType dtype;
};

// The shape and dtype `instruction` must have given its operands and attributes.
// Throws Error("[hlo <name>] ...") when operands or attributes are invalid.
ShapeAndType infer_shape(const HloModule& module, const HloInstruction& instruction);

}  // namespace lazytrain::hlo
