#include "hlo/hlo_opcode.h"

#include <iterator>

namespace lazytrain::hlo {

namespace {

#define HLO_OPCODE_NAME_ENTRY(enum_name, text, arity, properties) text,
const std::string kOpcodeNames[] = {HLO_OPCODE_LIST(HLO_OPCODE_NAME_ENTRY)};
#undef HLO_OPCODE_NAME_ENTRY
static_assert(std::size(kOpcodeNames) == static_cast<size_t>(kHloOpcodeCount));
static_assert(std::size(kHloOpcodeArity) == static_cast<size_t>(kHloOpcodeCount));
static_assert(std::size(kHloOpcodeProperties) == static_cast<size_t>(kHloOpcodeCount));

}  // namespace

const std::string& opcode_name(HloOpcode opcode) { return kOpcodeNames[static_cast<size_t>(opcode)]; }

std::string direction_name(ComparisonDirection d) {
  static const char* names[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  return names[static_cast<int>(d)];
}

std::string reduce_kind_name(ReduceKind kind) {
  static const char* names[] = {"add", "maximum", "minimum", "multiply", "logaddexp"};
  return names[static_cast<int>(kind)];
}

std::string fusion_kind_name(FusionKind kind) {
  static const char* names[] = {"kLoop", "kInput", "kOutput"};
  return names[static_cast<int>(kind)];
}

}  // namespace lazytrain::hlo
