// After the last test, executions still queued on the devices finish before
// the process tears down its statics (as the lazytrain command's main() does):
// a test that ends with a mark_step() and no read leaves work in flight.
#include <gtest/gtest.h>

#include "runtime/execution_queue.h"

namespace {

class DrainDevices : public ::testing::Environment {
 public:
  void TearDown() override { lazytrain::runtime::wait_all_idle(); }
};

[[maybe_unused]] ::testing::Environment* const kDrainDevices = ::testing::AddGlobalTestEnvironment(new DrainDevices);

}  // namespace
