// The collective thread of a device (runtime/collective_stream.h): a start
// returns while its exchange still runs, the exchange runs on a thread named
// for the device with that device current, in the order started, and its
// error reaches whoever waits for it.
#include <gtest/gtest.h>

#include <future>
#include <string>

#include "core/error.h"
#include "core/thread_name.h"
#include "runtime/collective_stream.h"

namespace lazytrain::runtime {
namespace {

Buffer scalar(float v) {
  Buffer b(Shape{}, DType::kFloat32);
  *b.data<float>() = v;
  return b;
}

TEST(CollectiveStream, AStartReturnsWhileItsExchangeRuns) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::string thread, device;
  std::future<Buffer> result = start_collective(Device{"cpu", 1}, [&] {
    thread = thread_name(current_thread_id());
    device = current_device().to_string();
    released.wait();  // blocks until the caller, who went on, lets it finish
    return scalar(3);
  });
  EXPECT_EQ(result.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  release.set_value();
  EXPECT_EQ(*result.get().data<float>(), 3.0f);
  EXPECT_EQ(thread, "device cpu:1 collectives");
  EXPECT_EQ(device, "cpu:1");
}

TEST(CollectiveStream, ExchangesRunInTheOrderStartedAndErrorsReachTheWaiter) {
  std::string order;
  std::future<Buffer> first = start_collective(Device{"cpu", 2}, [&] {
    order += "1";
    return scalar(1);
  });
  std::future<Buffer> failing = start_collective(Device{"cpu", 2}, []() -> Buffer { throw Error("[all-gather] replica 1 timed out"); });
  std::future<Buffer> third = start_collective(Device{"cpu", 2}, [&] {
    order += "3";
    return scalar(3);
  });
  EXPECT_EQ(*third.get().data<float>(), 3.0f);
  EXPECT_EQ(*first.get().data<float>(), 1.0f);
  EXPECT_EQ(order, "13");
  EXPECT_THROW(
      {
        try {
          failing.get();
        } catch (const Error& e) {
          EXPECT_STREQ(e.what(), "[all-gather] replica 1 timed out");
          throw;
        }
      },
      Error);
}

}  // namespace
}  // namespace lazytrain::runtime
