#include "runtime/device.h"

#include <cctype>
#include <cstdlib>

#include "core/error.h"

namespace lazytrain::runtime {

namespace {
thread_local Device current;
}

Device parse_device(const std::string& text) {
  if (text == "cpu") return Device{};
  if (text.rfind("cpu:", 0) == 0 && text.size() > 4 && text.size() <= 12) {
    bool digits = true;
    for (size_t i = 4; i < text.size(); ++i) digits = digits && std::isdigit(static_cast<unsigned char>(text[i]));
    if (digits) return Device{"cpu", std::atoi(text.c_str() + 4)};
  }
  throw Error("[Device] unknown device '" + text + "'; expected 'cpu' or 'cpu:N' (N = 0, 1, ...)");
}

Device current_device() { return current; }

DeviceGuard::DeviceGuard(Device device) : previous_(current) { current = std::move(device); }
DeviceGuard::~DeviceGuard() { current = previous_; }

}  // namespace lazytrain::runtime
