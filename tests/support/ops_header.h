// Reading src/tensor/ops.h in tests: the functions it declares, so that
// coverage tests fail when an op is added without its cases.
#pragma once

#include <set>
#include <string>

namespace lazytrain::testing {

// "name(type, type, ...)" for every function declared in the header at `path`:
// comments dropped, parameter names and default values removed, whitespace
// collapsed (e.g. "add(const Tensor&, double)"). Throws Error when it cannot be read.
std::set<std::string> declared_functions(const std::string& path);

// The path of src/tensor/ops.h in the source tree.
std::string ops_header_path();

}  // namespace lazytrain::testing
