#include "core/op_location.h"

#include <filesystem>

namespace lazytrain {

namespace {
thread_local const OpLocation* outermost = nullptr;
thread_local OpLocation outermost_value;
}  // namespace

OpLocationScope::OpLocationScope(const OpLocation& where) {
  if (outermost != nullptr) return;
  outermost_value = where;
  outermost = &outermost_value;
  outermost_ = true;
}

OpLocationScope::~OpLocationScope() {
  if (outermost_) outermost = nullptr;
}

const OpLocation* current_op_location() { return outermost; }

std::string location_text(const OpLocation& where) {
  if (!where.known()) return "";
  return std::filesystem::path(where.file).filename().string() + ":" + std::to_string(where.line);
}

}  // namespace lazytrain
