// DataLoader: batching, seeded shuffling, drop_last, ordered delivery from
// worker threads, errors, early stop.
#include "data/data_loader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>

#include "core/error.h"

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

TEST(DataLoader, AnEpochOutlivesItsLoader) {
  DataLoaderOptions o;
  o.batch_size = 2;
  o.num_workers = 2;
  std::unique_ptr<DataLoader<Numbered>::Epoch> epoch;
  {
    auto collate_state = std::make_shared<int>(7);  // owned through the collate function only
    DataLoader<Numbered> loader(5, o, [collate_state](const std::vector<size_t>& indices, uint64_t number) {
      return Numbered{indices, number + static_cast<uint64_t>(*collate_state)};
    });
    epoch = loader.epoch(1);
  }
  std::vector<uint64_t> numbers;
  while (auto b = epoch->next()) numbers.push_back(b->number);
  EXPECT_EQ(numbers, (std::vector<uint64_t>{3 + 7, 4 + 7, 5 + 7}));  // epoch 1 of 3 batches: 3, 4, 5
}

TEST(DataLoader, RejectsBadOptions) {
  DataLoaderOptions o;
  o.batch_size = 0;
  EXPECT_THROW(numbered_loader(4, o), Error);
  o.batch_size = 1;
  o.num_workers = -1;
  EXPECT_THROW(numbered_loader(4, o), Error);
}

}  // namespace
}  // namespace lazytrain::data
