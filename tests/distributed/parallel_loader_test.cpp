// DeviceLoader (PyTorch/XLA's MpDeviceLoader): queues, mark_step per batch, a
// throwing source or transfer, early stop, an empty dataset.
#include "distributed/parallel_loader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "distributed/device_batch.h"
#include "runtime/metrics.h"
#include "tensor/ops.h"

namespace lazytrain::distributed {
namespace {

using data::Batch;

using Loader = DeviceLoader<Batch, DeviceBatch>;

Batch host_batch(int64_t value) {
  Batch b;
  b.batch_size = 1;
  b.seq_len = 2;
  b.input_ids = {value, value + 1};
  b.attention_mask = {1, 1};
  b.labels = {-100, value};
  return b;
}

// A source of `n` batches, counting calls.
std::function<std::optional<Batch>()> counting_source(int n, std::atomic<int>& calls) {
  return [n, &calls]() -> std::optional<Batch> {
    const int k = calls++;
    if (k >= n) return std::nullopt;
    return host_batch(10 * k);
  };
}

TEST(DeviceLoader, DeliversEveryBatchInOrderAndMarksAStepPerBatch) {
  std::atomic<int> calls{0};
  Loader loader(counting_source(5, calls), [](Batch&& b) { return to_device(b); });
  const int64_t marks = runtime::counter_value("MarkStep");
  Tensor acc = zeros({2}, DType::kInt64);
  int n = 0;
  while (auto batch = loader.next()) {
    EXPECT_EQ((*batch)["input_ids"].to_vector<int64_t>(), (std::vector<int64_t>{10 * n, 10 * n + 1}));
    EXPECT_TRUE(batch->has_labels);
    acc = acc + reshape((*batch)["input_ids"], {2});
    ++n;
  }
  EXPECT_EQ(n, 5);
  EXPECT_EQ(runtime::counter_value("MarkStep"), marks + 5);  // every next() but the first, and the final one
  EXPECT_EQ(acc.to_vector<int64_t>(), (std::vector<int64_t>{100, 105}));
  EXPECT_FALSE(loader.next());  // stays exhausted
}

TEST(DeviceLoader, FeedsTheDeviceCurrentWhereItWasMade) {
  // A replica's loader (made on its thread, cpu:1 current) delivers cpu:1 tensors,
  // though its threads were not started with a device of their own.
  runtime::DeviceGuard guard(runtime::Device{"cpu", 1});
  std::atomic<int> calls{0};
  Loader loader(counting_source(2, calls), [](Batch&& b) { return to_device(b); });
  while (auto batch = loader.next()) {
    EXPECT_EQ((*batch)["input_ids"].device(), (runtime::Device{"cpu", 1}));
    EXPECT_EQ((*batch)["labels"].device(), (runtime::Device{"cpu", 1}));
  }
  EXPECT_EQ(calls.load(), 3);
}

TEST(DeviceLoader, AnEmptyDatasetEndsAtOnce) {
  Loader loader([]() -> std::optional<Batch> { return std::nullopt; }, [](Batch&& b) { return to_device(b); });
  EXPECT_FALSE(loader.next());
}

TEST(DeviceLoader, ASourceThatThrowsIsReraisedAfterTheBatchesBeforeIt) {
  int k = 0;
  Loader loader(
      [&]() -> std::optional<Batch> {
        if (k == 2) throw Error("[tokenize] line 3 is not UTF-8");
        return host_batch(k++);
      },
      [](Batch&& b) { return to_device(b); });
  EXPECT_TRUE(loader.next());
  EXPECT_TRUE(loader.next());
  try {
    loader.next();
    FAIL() << "expected the source's error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 3 is not UTF-8"), std::string::npos);
  }
}

TEST(DeviceLoader, ATransferThatThrowsIsReraised) {
  std::atomic<int> calls{0};
  Loader loader(counting_source(3, calls), [](Batch&& b) -> DeviceBatch {
    if (b.input_ids[0] == 10) throw std::runtime_error("transfer failed");
    return to_device(b);
  });
  EXPECT_TRUE(loader.next());
  EXPECT_THROW(loader.next(), std::runtime_error);
}

TEST(DeviceLoader, StoppingEarlyShutsDownWithBoundedWork) {
  std::atomic<int> calls{0};
  {
    DeviceLoaderOptions o;
    o.loader_prefetch_size = 2;
    o.device_prefetch_size = 1;
    Loader loader(counting_source(100000, calls), [](Batch&& b) { return to_device(b); }, o);
    EXPECT_TRUE(loader.next());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }  // the loop stopped after one batch: both threads join
  EXPECT_LE(calls.load(), 1 + 1 + 1 + 2 + 1);  // taken, in transfer, device queue, host queue, one being loaded
}

}  // namespace
}  // namespace lazytrain::distributed
