// Device: where tensors live and executables run, as PyTorch/XLA names them
// ("cpu:0", "cpu:1", ...). CPU devices are logical: each has its own execution
// queue, live tensors and execution state, over the host's memory and cores
// (XLA's CPU client with several devices). A later GPU backend adds kinds.
#pragma once

#include <string>

namespace lazytrain::runtime {

struct Device {
  std::string kind = "cpu";
  int ordinal = 0;
  // "cpu:0"
  std::string to_string() const { return kind + ":" + std::to_string(ordinal); }
  bool operator==(const Device&) const = default;
  auto operator<=>(const Device&) const = default;
};

// Parses "cpu" (= "cpu:0") and "cpu:N" (N >= 0); throws Error for anything else.
Device parse_device(const std::string& text);

// The device this thread creates tensors on when an op has no input to take
// one from (zeros(), from_vector(), ...), and whose live tensors mark_step()
// syncs: cpu:0 unless a DeviceGuard says otherwise (torch_xla's per-thread
// default device).
Device current_device();

// Makes `device` the current device of this thread for the guard's lifetime.
class DeviceGuard {
 public:
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  Device previous_;
};

}  // namespace lazytrain::runtime
