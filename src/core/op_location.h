// Where the user called a tensor op: a file, function and line, and the
// outermost op on this thread's stack.
//
// An OpLocation is plain data so that both callers can fill it: C++ code from
// std::source_location (implicitly: `Loc loc = std::source_location::current()`
// as a default argument names the caller), and the Python bindings from the
// calling Python frame (python/src/python_location.h), whose strings they keep
// alive for the process. `file` and `function` must point to storage that
// outlives every IR node made under the location (string literals from
// std::source_location, or interned strings).
//
// Each public tensor op (tensor/ops.h) opens an OpLocationScope with its
// caller's location. Scopes nest (cross_entropy calls log_softmax, a backward
// formula calls mul, a Python binding calls a C++ op), and only the outermost
// one counts, so the IR nodes of a composite op, its shape errors
// (format_error) and the failures of its executions name the line in the
// user's code (C++ or Python) rather than a line inside lazytrain.
#pragma once

#include <cstdint>
#include <source_location>
#include <string>

namespace lazytrain {

struct OpLocation {
  const char* file = "";      // "" when unknown
  const char* function = "";  // "" when unknown
  uint32_t line = 0;

  constexpr OpLocation() = default;
  constexpr OpLocation(const char* file, const char* function, uint32_t line)
      : file(file ? file : ""), function(function ? function : ""), line(line) {}
  // Implicit, so that a std::source_location default argument (the caller's
  // line) initialises an OpLocation parameter.
  constexpr OpLocation(const std::source_location& where)  // NOLINT(google-explicit-constructor)
      : OpLocation(where.file_name(), where.function_name(), where.line()) {}

  const char* file_name() const { return file; }
  const char* function_name() const { return function; }
  bool known() const { return file[0] != '\0'; }
};

class OpLocationScope {
 public:
  explicit OpLocationScope(const OpLocation& where);
  ~OpLocationScope();
  OpLocationScope(const OpLocationScope&) = delete;
  OpLocationScope& operator=(const OpLocationScope&) = delete;

 private:
  bool outermost_ = false;
};

// The outermost scope's location on this thread, or nullptr outside every op.
const OpLocation* current_op_location();

// "train.cpp:42" / "train.py:42" (file name without directories); "" for a
// location without a file (OpLocation{}).
std::string location_text(const OpLocation& where);

}  // namespace lazytrain
