#include "hlo/op_metadata.h"

#include <exception>
#include <filesystem>

namespace lazytrain::hlo {

namespace {

std::string origin(const std::string& op_type, const std::string& file, int64_t line) {
  std::string s = op_type;
  if (!file.empty()) {
    s += (s.empty() ? "" : " ") + std::string("called from ") + std::filesystem::path(file).filename().string() + ":" + std::to_string(line);
  }
  return s;
}

std::string with_origin(const std::string& message, const std::string& origin) {
  return origin.empty() ? message : message + " (from " + origin + ")";
}

}  // namespace

std::string metadata_attribute(const OpMetadata& metadata) {
  if (metadata.op_type.empty() && metadata.source_file.empty()) return "";
  std::string s = "metadata={";
  if (!metadata.op_type.empty()) s += "op_type=\"" + metadata.op_type + "\"";
  if (!metadata.source_file.empty()) {
    s += (metadata.op_type.empty() ? "" : " ") + std::string("source_file=\"") + metadata.source_file + "\" source_line=" +
         std::to_string(metadata.source_line);
  }
  return s + "}";
}

std::string origin_text(const OpMetadata& metadata) { return origin(metadata.op_type, metadata.source_file, metadata.source_line); }

InstructionError::InstructionError(const std::string& message, OpMetadata metadata)
    : Error(with_origin(message, origin_text(metadata))), message_(message), metadata_(std::move(metadata)) {}

std::string InstructionError::with_location(const OpLocation& where) const {
  if (!where.known()) return what();
  return with_origin(message_, origin(metadata_.op_type, where.file_name(), where.line));
}

void rethrow_with_origin(const HloInstruction& instruction) {
  try {
    throw;
  } catch (const InstructionError&) {
    throw;
  } catch (const Error& e) {
    if (instruction.metadata.empty()) throw;
    throw InstructionError(e.what(), instruction.metadata);
  }
}

}  // namespace lazytrain::hlo
