#include "hlo/hlo_opcode.h"

#include <array>

namespace lazytrain::hlo {

namespace {
const std::array<std::string, static_cast<size_t>(HloOpcode::kCount)> kOpcodeNames = {
    "parameter", "constant", "iota", "rng-bit-generator",
    "negate", "exponential", "log", "sqrt", "rsqrt", "tanh", "erf", "abs", "cosine", "not", "convert",
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "and", "or", "shift-right-logical",
    "compare", "select",
    "broadcast", "reshape", "transpose", "slice", "concatenate", "gather", "scatter",
    "dot", "reduce",
    "tuple",
    "fusion"};
static_assert(kOpcodeNames.size() == static_cast<size_t>(HloOpcode::kCount));
}  // namespace

const std::string& opcode_name(HloOpcode opcode) { return kOpcodeNames[static_cast<size_t>(opcode)]; }

bool is_elementwise_unary(HloOpcode op) { return op >= HloOpcode::kNegate && op <= HloOpcode::kConvert; }

bool is_elementwise_binary(HloOpcode op) { return op >= HloOpcode::kAdd && op <= HloOpcode::kShiftRightLogical; }

std::string direction_name(ComparisonDirection d) {
  static const char* names[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  return names[static_cast<int>(d)];
}

std::string reduce_kind_name(ReduceKind kind) {
  static const char* names[] = {"add", "maximum", "minimum", "multiply"};
  return names[static_cast<int>(kind)];
}

std::string fusion_kind_name(FusionKind kind) {
  static const char* names[] = {"kLoop", "kInput", "kOutput"};
  return names[static_cast<int>(kind)];
}

}  // namespace lazytrain::hlo
