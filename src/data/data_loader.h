// DataLoader: the batches of one epoch of a random-access dataset, as
// torch.utils.data.DataLoader gives them: indices in order or shuffled by a
// generator seeded from (seed, epoch), cut into batches of batch_size (the last
// partial batch kept or dropped), each batch made by `collate(indices, number)`
// on `num_workers` threads (0: in the caller's thread) with at most
// num_workers * prefetch_factor batches made ahead, delivered in order.
//
// `collate` does the per-batch host work (reading, tokenizing, padding,
// masking). It receives the batch's number in the whole run
// (epoch * batches_per_epoch + index), so randomness seeded from it gives the
// same batches whatever the number of workers. An exception thrown by
// `collate` is rethrown by next() at that batch's turn. Destroying an epoch
// early stops its workers (those inside `collate` finish that call first).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/thread_name.h"

namespace lazytrain::data {

struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  uint64_t seed = 0;      // shuffling generator: std::mt19937_64(seed * 1000003 + epoch)
  bool drop_last = false;
  int num_workers = 0;
  int prefetch_factor = 2;  // batches made ahead per worker
  // Called first on each worker thread with its id (torch's worker_init_fn);
  // the Trainer lowers the workers' priority below the compute threads'.
  std::function<void(int worker_id)> worker_init_fn;
  // Data parallelism: this replica batches only its DistributedSampler share of
  // each epoch (data/distributed_sampler.h; drop_last applies to both).
  int64_t num_replicas = 1;
  int64_t rank = 0;
};

// The batch index lists of one epoch (Fisher-Yates with raw 64-bit draws, so
// every standard library gives the same order; with num_replicas > 1, of this
// replica's share). Throws Error for batch_size < 1 or a bad replica/rank.
std::vector<std::vector<size_t>> epoch_batches(size_t dataset_size, const DataLoaderOptions& options, uint64_t epoch);

// Examples in one replica's share of an epoch (DistributedSampler::num_samples).
size_t replica_share_size(size_t dataset_size, const DataLoaderOptions& options);

template <typename Batch>
class DataLoader {
 public:
  using CollateFn = std::function<Batch(const std::vector<size_t>& indices, uint64_t batch_number)>;

  // Throws Error for batch_size < 1, num_workers < 0 or prefetch_factor < 1.
  DataLoader(size_t dataset_size, DataLoaderOptions options, CollateFn collate)
      : dataset_size_(dataset_size), options_(options), collate_(std::move(collate)) {
    check(options_.batch_size >= 1, "DataLoader", "batch_size must be at least 1, got " + std::to_string(options_.batch_size));
    check(options_.num_workers >= 0, "DataLoader", "num_workers must be >= 0, got " + std::to_string(options_.num_workers));
    check(options_.prefetch_factor >= 1, "DataLoader", "prefetch_factor must be >= 1, got " + std::to_string(options_.prefetch_factor));
  }

  // Batches per epoch (len(dataloader)), of this replica's share.
  size_t size() const {
    const size_t b = static_cast<size_t>(options_.batch_size);
    const size_t n = options_.num_replicas != 1 || options_.rank != 0 ? replica_share_size(dataset_size_, options_) : dataset_size_;
    return options_.drop_last ? n / b : (n + b - 1) / b;
  }

  // One pass over the data. An epoch owns a copy of the collate function (and
  // what it holds), so it may outlive its DataLoader.
  class Epoch {
   public:
    // Starts at batch `start` of the epoch (the batches before it are skipped
    // without being made: a resumed run continues where its checkpoint was).
    Epoch(const DataLoader& loader, uint64_t epoch, size_t start = 0)
        : collate_(loader.collate_), batches_(epoch_batches(loader.dataset_size_, loader.options_, epoch)),
          first_number_(epoch * loader.size() + start), ahead_(static_cast<size_t>(loader.options_.num_workers * loader.options_.prefetch_factor)) {
      batches_.erase(batches_.begin(), batches_.begin() + static_cast<std::ptrdiff_t>(std::min(start, batches_.size())));
      for (int w = 0; w < loader.options_.num_workers; ++w) {
        workers_.emplace_back([this, w, init = loader.options_.worker_init_fn] {
          set_thread_name("loader worker " + std::to_string(w));
          if (init) init(w);
          work();
        });
      }
    }
    ~Epoch() {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
      }
      cv_.notify_all();
      for (auto& t : workers_) t.join();
    }
    Epoch(const Epoch&) = delete;
    Epoch& operator=(const Epoch&) = delete;

    // The next batch, or nullopt after the last; rethrows a failed collate.
    std::optional<Batch> next() {
      if (consumed_ >= batches_.size()) return std::nullopt;
      const size_t k = consumed_++;
      if (workers_.empty()) return collate_(batches_[k], first_number_ + k);
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.notify_all();  // a slot opened up
      cv_.wait(lock, [&] { return ready_.count(k) > 0; });
      Result r = std::move(ready_.at(k));
      ready_.erase(k);
      cv_.notify_all();
      lock.unlock();
      if (r.error) std::rethrow_exception(r.error);
      return std::move(r.batch);
    }

   private:
    struct Result {
      std::optional<Batch> batch;
      std::exception_ptr error;
    };

    void work() {
      std::unique_lock<std::mutex> lock(mutex_);
      while (true) {
        cv_.wait(lock, [&] { return stop_ || (next_to_make_ < batches_.size() && next_to_make_ < consumed_ + ahead_); });
        if (stop_) return;
        const size_t k = next_to_make_++;
        lock.unlock();
        Result r;
        try {
          r.batch.emplace(collate_(batches_[k], first_number_ + k));
        } catch (...) {
          r.error = std::current_exception();
        }
        lock.lock();
        ready_.emplace(k, std::move(r));
        cv_.notify_all();
      }
    }

    const CollateFn collate_;
    std::vector<std::vector<size_t>> batches_;
    uint64_t first_number_;
    size_t ahead_;
    std::mutex mutex_;
    std::condition_variable cv_;
    size_t next_to_make_ = 0;
    std::atomic<size_t> consumed_{0};
    std::map<size_t, Result> ready_;
    bool stop_ = false;
    std::vector<std::thread> workers_;
  };

  // Starts epoch `epoch` at its batch `start` (its workers begin at once).
  std::unique_ptr<Epoch> epoch(uint64_t epoch, size_t start = 0) const { return std::make_unique<Epoch>(*this, epoch, start); }

  const DataLoaderOptions& options() const { return options_; }

 private:
  size_t dataset_size_;
  DataLoaderOptions options_;
  CollateFn collate_;
};

}  // namespace lazytrain::data
