#include "data/data_loader.h"

#include <algorithm>

#include "data/distributed_sampler.h"

namespace lazytrain::data {

std::vector<std::vector<size_t>> epoch_batches(size_t dataset_size, const DataLoaderOptions& options, uint64_t epoch) {
  check(options.batch_size >= 1, "DataLoader", "batch_size must be at least 1, got " + std::to_string(options.batch_size));
  const std::vector<size_t> order = epoch_order(dataset_size, options.shuffle, options.seed, epoch);
  std::vector<std::vector<size_t>> batches;
  const size_t b = static_cast<size_t>(options.batch_size);
  for (size_t start = 0; start < dataset_size; start += b) {
    const size_t end = std::min(start + b, dataset_size);
    if (end - start < b && options.drop_last) break;
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start), order.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return batches;
}

}  // namespace lazytrain::data
