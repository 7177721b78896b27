// Device: where tensors live and executables run. Only "cpu:0" exists today; the
// type keeps a kind and an ordinal so a GPU backend can slot in (DESIGN.md §1).
#pragma once

#include <string>

namespace lazytrain::runtime {

struct Device {
  std::string kind = "cpu";
  int ordinal = 0;
  // "cpu:0"
  std::string to_string() const { return kind + ":" + std::to_string(ordinal); }
  bool operator==(const Device&) const = default;
};

// Parses "cpu", "cpu:0"; throws Error for anything else.
Device parse_device(const std::string& text);

}  // namespace lazytrain::runtime
