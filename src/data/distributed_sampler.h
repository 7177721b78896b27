// DistributedSampler: each data-parallel replica's share of an epoch, as
// torch.utils.data.distributed.DistributedSampler gives it (PyTorch 1.13):
// every replica draws the same permutation (same seed and epoch), the list is
// padded by repeating its start until it divides evenly (or, with drop_last,
// cut to a multiple of the replicas), and replica `rank` takes every
// num_replicas-th index from position `rank`. Replicas get disjoint positions
// and equal counts; without drop_last the padding repeats up to
// num_replicas - 1 examples in an epoch, with drop_last up to that many are
// left out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lazytrain::data {

// The order of one epoch of [0, dataset_size): identity, or a Fisher-Yates
// shuffle with raw 64-bit draws of std::mt19937_64(seed * 1000003 + epoch)
// (the same on every standard library; DataLoader shuffles with it too).
std::vector<size_t> epoch_order(size_t dataset_size, bool shuffle, uint64_t seed, uint64_t epoch);

struct DistributedSamplerOptions {
  int64_t num_replicas = 1;
  int64_t rank = 0;
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;
};

class DistributedSampler {
 public:
  // Throws Error "[DistributedSampler] ..." for num_replicas < 1, a rank outside
  // [0, num_replicas), or drop_last with fewer examples than replicas.
  DistributedSampler(size_t dataset_size, DistributedSamplerOptions options);

  // Indices per replica: ceil(n / R), or with drop_last floor(n / R) (PyTorch's
  // num_samples); total_size() = num_samples() * R.
  size_t num_samples() const { return num_samples_; }
  size_t total_size() const { return num_samples_ * static_cast<size_t>(options_.num_replicas); }
  // This replica's indices of `epoch` (set_epoch(epoch) then iter(sampler)).
  std::vector<size_t> indices(uint64_t epoch) const;

 private:
  size_t dataset_size_;
  DistributedSamplerOptions options_;
  size_t num_samples_;
};

}  // namespace lazytrain::data
