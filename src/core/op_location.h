// Where the user called a tensor op: the outermost op on this thread's stack.
//
// Each public tensor op (tensor/ops.h) opens an OpLocationScope with the
// std::source_location of its caller. Scopes nest (cross_entropy calls
// log_softmax, a backward formula calls mul), and only the outermost one counts,
// so the IR nodes of a composite op, its shape errors (format_error) and the
// failures of its executions name the line in the user's code rather than a
// line inside lazytrain.
#pragma once

#include <source_location>
#include <string>

namespace lazytrain {

class OpLocationScope {
 public:
  explicit OpLocationScope(const std::source_location& where);
  ~OpLocationScope();
  OpLocationScope(const OpLocationScope&) = delete;
  OpLocationScope& operator=(const OpLocationScope&) = delete;

 private:
  bool outermost_ = false;
};

// The outermost scope's location on this thread, or nullptr outside every op.
const std::source_location* current_op_location();

// "train.cpp:42" (file name without directories); "" for a location without a
// file (std::source_location{}).
std::string location_text(const std::source_location& where);

}  // namespace lazytrain
