#include "core/error.h"

#include <filesystem>

namespace lazytrain {

std::string format_error(const std::string& op, const std::string& message,
                         const std::source_location& where) {
  std::string file = std::filesystem::path(where.file_name()).filename().string();
  return "[" + op + "] " + message + " (called from " + file + ":" + std::to_string(where.line()) + ")";
}

void throw_error(const std::string& op, const std::string& message, const std::source_location& where) {
  throw Error(format_error(op, message, where));
}

}  // namespace lazytrain
