#include "data/data_loader.h"

#include <algorithm>

#include "data/distributed_sampler.h"

namespace lazytrain::data {

std::vector<std::vector<size_t>> epoch_batches(size_t dataset_size, const DataLoaderOptions& options, uint64_t epoch) {
  check(options.batch_size >= 1, "DataLoader", "batch_size must be at least 1, got " + std::to_string(options.batch_size));
  const bool replicated = options.num_replicas != 1 || options.rank != 0;
  const std::vector<size_t> order =
      replicated ? DistributedSampler(dataset_size, {options.num_replicas, options.rank, options.shuffle, options.seed, options.drop_last}).indices(epoch)
                 : epoch_order(dataset_size, options.shuffle, options.seed, epoch);
  const size_t n = order.size();
  std::vector<std::vector<size_t>> batches;
  const size_t b = static_cast<size_t>(options.batch_size);
  for (size_t start = 0; start < n; start += b) {
    const size_t end = std::min(start + b, n);
    if (end - start < b && options.drop_last) break;
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start), order.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return batches;
}

size_t replica_share_size(size_t dataset_size, const DataLoaderOptions& options) {
  return DistributedSampler(dataset_size, {options.num_replicas, options.rank, options.shuffle, options.seed, options.drop_last}).num_samples();
}

}  // namespace lazytrain::data
