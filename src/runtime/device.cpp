#include "runtime/device.h"

#include "core/error.h"

namespace lazytrain::runtime {

Device parse_device(const std::string& text) {
  if (text == "cpu" || text == "cpu:0") return Device{};
  throw Error("[Device] unknown device '" + text + "'; expected 'cpu' or 'cpu:0'");
}

}  // namespace lazytrain::runtime
