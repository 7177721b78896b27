// Text forms of an instruction's OpMetadata (hlo_instruction.h): the HLO
// printer's attribute, and the origin an execution error names.
#pragma once

#include <string>

#include "hlo/hlo_instruction.h"

namespace lazytrain::hlo {

// XLA's printed form: `metadata={op_type="aten::embedding" source_file="train.py"
// source_line=12}`; "" for empty metadata.
std::string metadata_attribute(const OpMetadata& metadata);

// "aten::embedding called from train.py:12" (file name without directories),
// "aten::embedding" without a line, "" for empty metadata.
std::string origin_text(const OpMetadata& metadata);

// Call inside a catch block while executing `instruction`: rethrows the
// exception being handled, an Error with " (from <origin>)" appended when the
// instruction has metadata, so that a failure at run time (an index out of
// range) names the op and the user's line that recorded it. Anything else
// (std::bad_alloc, ...) is rethrown unchanged.
[[noreturn]] void rethrow_with_origin(const HloInstruction& instruction);

}  // namespace lazytrain::hlo
