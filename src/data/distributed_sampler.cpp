#include "data/distributed_sampler.h"

#include <random>
#include <string>
#include <utility>

#include "core/error.h"

namespace lazytrain::data {

std::vector<size_t> epoch_order(size_t dataset_size, bool shuffle, uint64_t seed, uint64_t epoch) {
  std::vector<size_t> order(dataset_size);
  for (size_t i = 0; i < dataset_size; ++i) order[i] = i;
  if (shuffle) {
    std::mt19937_64 rng(seed * 1000003ull + epoch);
    for (size_t i = dataset_size; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  }
  return order;
}

DistributedSampler::DistributedSampler(size_t dataset_size, DistributedSamplerOptions options)
    : dataset_size_(dataset_size), options_(options) {
  const std::string op = "DistributedSampler";
  check(options_.num_replicas >= 1, op, "num_replicas must be at least 1, got " + std::to_string(options_.num_replicas));
  check(options_.rank >= 0 && options_.rank < options_.num_replicas, op,
        "Invalid rank " + std::to_string(options_.rank) + ", rank should be in the interval [0, " + std::to_string(options_.num_replicas - 1) + "]");
  const auto replicas = static_cast<size_t>(options_.num_replicas);
  check(!options_.drop_last || dataset_size >= replicas, op,
        "drop_last with " + std::to_string(dataset_size) + " examples and " + std::to_string(replicas) + " replicas leaves none");
  num_samples_ = options_.drop_last ? dataset_size / replicas : (dataset_size + replicas - 1) / replicas;
}

std::vector<size_t> DistributedSampler::indices(uint64_t epoch) const {
  std::vector<size_t> order = epoch_order(dataset_size_, options_.shuffle, options_.seed, epoch);
  const size_t total = total_size();
  if (order.size() > total) order.resize(total);  // drop_last: the tail is left out
  for (size_t i = 0; order.size() < total; ++i) order.push_back(order[i]);  // padding repeats from the start
  std::vector<size_t> mine;
  mine.reserve(num_samples_);
  for (size_t i = static_cast<size_t>(options_.rank); i < total; i += static_cast<size_t>(options_.num_replicas)) mine.push_back(order[i]);
  return mine;
}

}  // namespace lazytrain::data
