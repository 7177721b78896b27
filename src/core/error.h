// Error: the one exception type lazytrain raises for bad input and misuse.
//
// Messages open with the operation in brackets, then say what was expected and
// what came, then where the user called from, e.g.
//   [aten::matmul] size mismatch: a is [2, 3], b is [4, 5]; expected a.size(-1) == b.size(-2)
//   (called from train.cpp:42)
#pragma once

#include <stdexcept>
#include <string>

#include "core/op_location.h"

namespace lazytrain {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A dimension (or index) out of range: torch raises IndexError for it, and the
// Python bindings translate this kind to IndexError.
class IndexError : public Error {
 public:
  using Error::Error;
};

// `message` + " (called from file:line)" naming the outermost op's caller on
// this thread (core/op_location.h); `message` alone outside every op.
std::string with_op_location(const std::string& message);

// Builds "[op] message (called from file:line)". `where` is the call site; inside
// a tensor op the outermost op's caller wins (core/op_location.h).
std::string format_error(const std::string& op, const std::string& message,
                         const OpLocation& where);

// Throws Error("[op] message (called from file:line)").
[[noreturn]] void throw_error(const std::string& op, const std::string& message,
                              const OpLocation& where = std::source_location::current());

// Throws Error("[op] message") when `condition` is false; no call site is added.
inline void check(bool condition, const std::string& op, const std::string& message) {
  if (!condition) throw Error("[" + op + "] " + message);
}

}  // namespace lazytrain
