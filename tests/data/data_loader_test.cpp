// DataLoader (batching, seeded shuffling, drop_last, ordered delivery from
// worker threads, errors, early stop) and DeviceLoader (queues, mark_step per
// batch, a throwing source or transfer, early stop, an empty dataset).
#include "data/data_loader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>

#include "data/device_batch.h"
#include "data/device_loader.h"
#include "runtime/metrics.h"
#include "tensor/ops.h"

namespace lazytrain::data {
namespace {

// A batch that records its indices and batch number.
struct Numbered {
  std::vector<size_t> indices;
  uint64_t number = 0;
};

DataLoader<Numbered> numbered_loader(size_t n, DataLoaderOptions options) {
  return DataLoader<Numbered>(n, options, [](const std::vector<size_t>& indices, uint64_t number) {
    std::this_thread::sleep_for(std::chrono::microseconds(200 * (number % 3)));  // finish out of order
    return Numbered{indices, number};
  });
}

std::vector<Numbered> drain(DataLoader<Numbered>& loader, uint64_t epoch) {
  std::vector<Numbered> out;
  auto e = loader.epoch(epoch);
  while (auto b = e->next()) out.push_back(std::move(*b));
  return out;
}

TEST(DataLoader, BatchesInOrderWithTheLastPartialOneKeptOrDropped) {
  DataLoaderOptions o;
  o.batch_size = 4;
  auto loader = numbered_loader(10, o);
  EXPECT_EQ(loader.size(), 3u);
  std::vector<Numbered> batches = drain(loader, 0);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].indices, (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(batches[2].indices, (std::vector<size_t>{8, 9}));
  o.drop_last = true;
  auto dropping = numbered_loader(10, o);
  EXPECT_EQ(dropping.size(), 2u);
  EXPECT_EQ(drain(dropping, 0).size(), 2u);
}

TEST(DataLoader, ShuffleIsSeededPerEpochAndWorkersChangeNothing) {
  DataLoaderOptions o;
  o.batch_size = 3;
  o.shuffle = true;
  o.seed = 7;
  auto serial = numbered_loader(20, o);
  o.num_workers = 3;
  o.prefetch_factor = 1;
  auto parallel = numbered_loader(20, o);
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<Numbered> a = drain(serial, epoch), b = drain(parallel, epoch);
    ASSERT_EQ(a.size(), 7u);
    ASSERT_EQ(b.size(), a.size());
    std::set<size_t> seen;
    for (size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(a[k].indices, b[k].indices) << "epoch " << epoch << " batch " << k;
      EXPECT_EQ(a[k].number, epoch * 7 + k);
      EXPECT_EQ(b[k].number, a[k].number);
      seen.insert(a[k].indices.begin(), a[k].indices.end());
    }
    EXPECT_EQ(seen.size(), 20u);  // a permutation
  }
  EXPECT_NE(drain(serial, 0)[0].indices, drain(serial, 1)[0].indices);  // epochs differ
}

TEST(DataLoader, AWorkerErrorIsRethrownAtThatBatch) {
  DataLoaderOptions o;
  o.batch_size = 2;
  o.num_workers = 2;
  DataLoader<Numbered> loader(10, o, [](const std::vector<size_t>& indices, uint64_t number) {
    if (number == 2) throw Error("[collate] bad example " + std::to_string(indices[0]));
    return Numbered{indices, number};
  });
  auto e = loader.epoch(0);
  EXPECT_TRUE(e->next());
  EXPECT_TRUE(e->next());
  try {
    e->next();
    FAIL() << "expected the collate error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("bad example 4"), std::string::npos) << err.what();
  }
  EXPECT_TRUE(e->next());  // later batches still come
}

TEST(DataLoader, StoppingEarlyJoinsTheWorkersAndMakesLittleAhead) {
  std::atomic<int> made{0};
  DataLoaderOptions o;
  o.batch_size = 1;
  o.num_workers = 2;
  o.prefetch_factor = 2;
  DataLoader<Numbered> loader(1000, o, [&](const std::vector<size_t>& indices, uint64_t number) {
    ++made;
    return Numbered{indices, number};
  });
  {
    auto e = loader.epoch(0);
    ASSERT_TRUE(e->next());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }  // destroyed after one batch
  EXPECT_LE(made.load(), 1 + 4 + 2);  // the one taken, the bounded prefetch, calls already begun
}

TEST(DataLoader, RejectsBadOptions) {
  DataLoaderOptions o;
  o.batch_size = 0;
  EXPECT_THROW(numbered_loader(4, o), Error);
  o.batch_size = 1;
  o.num_workers = -1;
  EXPECT_THROW(numbered_loader(4, o), Error);
}

// ---- DeviceLoader ----

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
    EXPECT_EQ(batch->input_ids.to_vector<int64_t>(), (std::vector<int64_t>{10 * n, 10 * n + 1}));
    EXPECT_TRUE(batch->has_labels);
    acc = acc + reshape(batch->input_ids, {2});
    ++n;
  }
  EXPECT_EQ(n, 5);
  EXPECT_EQ(runtime::counter_value("MarkStep"), marks + 5);  // every next() but the first, and the final one
  EXPECT_EQ(acc.to_vector<int64_t>(), (std::vector<int64_t>{100, 105}));
  EXPECT_FALSE(loader.next());  // stays exhausted
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
}  // namespace lazytrain::data
