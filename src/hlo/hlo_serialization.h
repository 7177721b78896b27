// A binary form of HloModule for the persistent compile cache: every field,
// fused computations inline, literals as raw bytes. Little-endian, versioned.
#pragma once

#include <string>
#include <string_view>

#include "hlo/hlo_instruction.h"

namespace lazytrain::hlo {

std::string serialize_module(const HloModule& module);
// Throws Error("[hlo deserialize] ...") for truncated or malformed input; the
// result is verified.
HloModule deserialize_module(std::string_view bytes);

}  // namespace lazytrain::hlo
