// Must NOT compile: CTest's HloOpcodeCountCheckFailsToCompile compiles this file
// and passes only when the compiler reports the opcode count check (hlo_opcode.h).
// The list here is HLO_OPCODE_LIST with one more entry, as if an opcode had been
// added without raising kHloOpcodeCount (a missing entry fails the same way).
#include "hlo/hlo_opcode.h"

namespace lazytrain::hlo {

#define LONGER_OPCODE_LIST(V) HLO_OPCODE_LIST(V) V(kExtra, "extra", 1, kPropertyElementwise)
HLO_OPCODE_COUNT_CHECK(LONGER_OPCODE_LIST);

}  // namespace lazytrain::hlo
