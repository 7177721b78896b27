// DistributedSampler against torch.utils.data.distributed.DistributedSampler's
// rules (PyTorch 1.13, written out by hand for shuffle=False), and the
// properties data parallelism needs with shuffling: one permutation for all
// replicas, disjoint positions, equal counts, every example seen.
#include "data/distributed_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "data/data_loader.h"

namespace lazytrain::data {
namespace {

std::vector<std::vector<size_t>> shares(size_t n, int64_t replicas, bool shuffle, bool drop_last, uint64_t epoch = 0) {
  std::vector<std::vector<size_t>> out;
  for (int64_t r = 0; r < replicas; ++r) out.push_back(DistributedSampler(n, {replicas, r, shuffle, 7, drop_last}).indices(epoch));
  return out;
}

using Shares = std::vector<std::vector<size_t>>;

TEST(DistributedSampler, UnshuffledAsPyTorch) {
  // list(DistributedSampler(range(10), num_replicas=4, rank=r, shuffle=False)): padded with 0, 1.
  EXPECT_EQ(shares(10, 4, false, false), (Shares{{0, 4, 8}, {1, 5, 9}, {2, 6, 0}, {3, 7, 1}}));
  // drop_last=True: the tail 8, 9 is left out.
  EXPECT_EQ(shares(10, 4, false, true), (Shares{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // More replicas than examples: the padding repeats the list ((indices * 2)[:3]).
  EXPECT_EQ(shares(2, 5, false, false), (Shares{{0}, {1}, {0}, {1}, {0}}));
  EXPECT_EQ(shares(8, 2, false, false), (Shares{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  DistributedSampler s(10, {4, 0, false, 0, false});
  EXPECT_EQ(s.num_samples(), 3u);
  EXPECT_EQ(s.total_size(), 12u);
}

TEST(DistributedSampler, ShuffledReplicasShareOnePermutation) {
  for (uint64_t epoch : {0u, 1u, 5u}) {
    const Shares all = shares(103, 4, true, false, epoch);
    const std::vector<size_t> order = epoch_order(103, true, 7, epoch);
    std::multiset<size_t> seen;
    for (int64_t r = 0; r < 4; ++r) {
      ASSERT_EQ(all[static_cast<size_t>(r)].size(), 26u);
      for (size_t i = 0; i < 26; ++i) {
        const size_t position = static_cast<size_t>(r) + 4 * i;
        EXPECT_EQ(all[static_cast<size_t>(r)][i], order[position % 103]);  // the one permutation, padded from its start
      }
      seen.insert(all[static_cast<size_t>(r)].begin(), all[static_cast<size_t>(r)].end());
    }
    for (size_t k = 0; k < 103; ++k) EXPECT_GE(seen.count(k), 1u) << k;  // every example, 1 repeated (104 = 4 x 26)
    EXPECT_EQ(seen.size(), 104u);
  }
  EXPECT_NE(shares(103, 4, true, false, 0), shares(103, 4, true, false, 1));  // set_epoch reshuffles
}

TEST(DistributedSampler, OneReplicaIsTheDataLoadersOrder) {
  DataLoaderOptions options;
  options.batch_size = 1000;
  options.shuffle = true;
  options.seed = 7;
  EXPECT_EQ(DistributedSampler(50, {1, 0, true, 7, false}).indices(3), epoch_batches(50, options, 3).front());
}

TEST(DistributedSampler, EachReplicasDataLoaderBatchesItsShare) {
  // 11 examples, 2 replicas, batches of 2: shares of 6 (one example repeated), 3 batches each.
  std::vector<std::vector<size_t>> seen(2);
  for (int64_t rank : {0, 1}) {
    DataLoaderOptions options;
    options.batch_size = 2;
    options.shuffle = true;
    options.seed = 7;
    options.num_replicas = 2;
    options.rank = rank;
    DataLoader<std::vector<size_t>> loader(11, options, [](const std::vector<size_t>& indices, uint64_t) { return indices; });
    EXPECT_EQ(loader.size(), 3u);
    auto epoch = loader.epoch(1);
    while (auto batch = epoch->next()) seen[static_cast<size_t>(rank)].insert(seen[static_cast<size_t>(rank)].end(), batch->begin(), batch->end());
  }
  EXPECT_EQ(seen[0], DistributedSampler(11, {2, 0, true, 7, false}).indices(1));
  EXPECT_EQ(seen[1], DistributedSampler(11, {2, 1, true, 7, false}).indices(1));
  std::set<size_t> all(seen[0].begin(), seen[0].end());
  all.insert(seen[1].begin(), seen[1].end());
  EXPECT_EQ(all.size(), 11u);
}

TEST(DistributedSampler, BadReplicasAreErrors) {
  EXPECT_THROW(DistributedSampler(10, {0, 0, true, 0, false}), Error);
  try {
    DistributedSampler(10, {2, 2, true, 0, false});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Invalid rank 2, rank should be in the interval [0, 1]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DistributedSampler(3, {4, 0, true, 0, true}), Error);
}

}  // namespace
}  // namespace lazytrain::data
