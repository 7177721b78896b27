#include "core/op_location.h"

#include <filesystem>

namespace lazytrain {

namespace {
thread_local const std::source_location* outermost = nullptr;
thread_local std::source_location outermost_value;
}  // namespace

OpLocationScope::OpLocationScope(const std::source_location& where) {
  if (outermost != nullptr) return;
  outermost_value = where;
  outermost = &outermost_value;
  outermost_ = true;
}

OpLocationScope::~OpLocationScope() {
  if (outermost_) outermost = nullptr;
}

const std::source_location* current_op_location() { return outermost; }

std::string location_text(const std::source_location& where) {
  const char* file = where.file_name();
  if (file == nullptr || *file == '\0') return "";
  return std::filesystem::path(file).filename().string() + ":" + std::to_string(where.line());
}

}  // namespace lazytrain
