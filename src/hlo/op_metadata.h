// Text forms of an instruction's OpMetadata (hlo_instruction.h), and the error
// an instruction's failure at run time becomes, which names its op and line.
#pragma once

#include <string>

#include "core/error.h"
#include "core/op_location.h"
#include "hlo/hlo_instruction.h"

namespace lazytrain::hlo {

// XLA's printed form: `metadata={op_type="aten::embedding" source_file="train.py"
// source_line=12}`; "" without an op type or a file.
std::string metadata_attribute(const OpMetadata& metadata);

// "aten::embedding called from train.py:12" (file name without directories),
// "aten::embedding" without a line, "" for neither.
std::string origin_text(const OpMetadata& metadata);

// An instruction failed while a module ran (an index out of range): `message`
// is the kernel's ("[hlo evaluator gather.4] index 9 is out of range ..."),
// what() adds " (from <origin_text(metadata)>)". The lazy runtime names the
// line of the trace it runs instead (with_location): a cached module holds the
// lines of the trace that compiled it.
class InstructionError : public Error {
 public:
  InstructionError(const std::string& message, OpMetadata metadata);
  const std::string& message() const { return message_; }
  const OpMetadata& metadata() const { return metadata_; }
  // message() and the origin with `where` as its line (metadata's own when unknown).
  std::string with_location(const OpLocation& where) const;

 private:
  std::string message_;
  OpMetadata metadata_;
};

// Call inside a catch block while executing `instruction`: rethrows the
// exception being handled as an InstructionError with the instruction's
// metadata when it is a lazytrain Error without one (an InstructionError from
// an instruction inside a fusion keeps its own, more precise origin); anything
// else (std::bad_alloc, ...) and errors of instructions without metadata are
// rethrown unchanged.
[[noreturn]] void rethrow_with_origin(const HloInstruction& instruction);

}  // namespace lazytrain::hlo
