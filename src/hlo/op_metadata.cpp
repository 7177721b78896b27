#include "hlo/op_metadata.h"

#include <exception>
#include <filesystem>

#include "core/error.h"

namespace lazytrain::hlo {

std::string metadata_attribute(const OpMetadata& metadata) {
  if (metadata.empty()) return "";
  std::string s = "metadata={";
  if (!metadata.op_type.empty()) s += "op_type=\"" + metadata.op_type + "\"";
  if (!metadata.source_file.empty()) {
    s += (metadata.op_type.empty() ? "" : " ") + std::string("source_file=\"") + metadata.source_file + "\" source_line=" +
         std::to_string(metadata.source_line);
  }
  return s + "}";
}

std::string origin_text(const OpMetadata& metadata) {
  std::string s = metadata.op_type;
  if (!metadata.source_file.empty()) {
    s += (s.empty() ? "" : " ") + std::string("called from ") + std::filesystem::path(metadata.source_file).filename().string() + ":" +
         std::to_string(metadata.source_line);
  }
  return s;
}

void rethrow_with_origin(const HloInstruction& instruction) {
  const std::string origin = origin_text(instruction.metadata);
  try {
    throw;
  } catch (const Error& e) {
    if (origin.empty()) throw;
    throw Error(std::string(e.what()) + " (from " + origin + ")");
  }
}

}  // namespace lazytrain::hlo
