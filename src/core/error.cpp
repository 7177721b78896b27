#include "core/error.h"

#include "core/op_location.h"

namespace lazytrain {

std::string format_error(const std::string& op, const std::string& message,
                         const OpLocation& where) {
  // Inside a composite op, the user's call of the outermost op (core/op_location.h).
  const OpLocation* user = current_op_location();
  return "[" + op + "] " + message + " (called from " + location_text(user ? *user : where) + ")";
}

std::string with_op_location(const std::string& message) {
  const OpLocation* user = current_op_location();
  return user && user->known() ? message + " (called from " + location_text(*user) + ")" : message;
}

void throw_error(const std::string& op, const std::string& message, const OpLocation& where) {
  throw Error(format_error(op, message, where));
}

}  // namespace lazytrain
