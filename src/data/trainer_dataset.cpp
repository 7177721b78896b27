#include "data/trainer_dataset.h"

#include <algorithm>
#include <memory>
#include <string_view>

#include "core/crc32c.h"
#include "core/error.h"
#include "data/data_loader.h"

namespace lazytrain::data {

TrainerDataset TrainerDataset::from_examples(std::vector<Example> examples, DataCollatorForLanguageModeling collator) {
  auto shared = std::make_shared<const std::vector<Example>>(std::move(examples));
  auto shared_collator = std::make_shared<const DataCollatorForLanguageModeling>(std::move(collator));
  TrainerDataset d;
  d.size = static_cast<int64_t>(shared->size());
  d.pad_token_id = shared_collator->tokens().pad_token_id;
  d.collate = [shared, shared_collator](const std::vector<size_t>& indices, uint64_t number) {
    std::vector<Example> batch;
    batch.reserve(indices.size());
    for (size_t i : indices) batch.push_back((*shared)[i]);
    return to_named_batch((*shared_collator)(batch, number));
  };
  auto crc = std::make_shared<std::optional<uint32_t>>();
  d.fingerprint = [shared, crc] {
    if (!*crc) {  // the dataset does not change: hashed once
      uint32_t value = 0;
      for (const Example& e : *shared) {
        value = crc32c(std::string_view(reinterpret_cast<const char*>(e.input_ids.data()), e.input_ids.size() * sizeof(int64_t)), value);
      }
      *crc = value;
    }
    return **crc;
  };
  return d;
}

TrainerDataset TrainerDataset::from_stream(ExampleStreamFactory factory, int64_t size, DataCollatorForLanguageModeling collator) {
  auto shared_collator = std::make_shared<const DataCollatorForLanguageModeling>(std::move(collator));
  TrainerDataset d;
  d.size = size;
  d.pad_token_id = shared_collator->tokens().pad_token_id;
  d.stream = std::move(factory);
  d.collate_examples = [shared_collator](std::vector<Example>&& examples, uint64_t number) {
    return to_named_batch((*shared_collator)(examples, number));
  };
  return d;
}

int64_t replica_examples(const TrainerDataset& dataset, const FeedOptions& options) {
  const int64_t n = dataset.size;
  if (options.replicas == 1 || dataset.streamed()) return n;  // a stream's size is already this replica's
  if (!options.training) {  // the examples of batches replica, replica + W, ... of the one-replica evaluation
    const int64_t b = options.batch_size;
    int64_t mine = 0;
    for (int64_t k = options.replica; k * b < n; k += options.replicas) mine += std::min(b, n - k * b);
    return mine;
  }
  DataLoaderOptions loader;
  loader.num_replicas = options.replicas;
  loader.rank = options.replica;
  loader.drop_last = options.drop_last;
  return static_cast<int64_t>(replica_share_size(static_cast<size_t>(n), loader));
}

int64_t batches_per_epoch(const TrainerDataset& dataset, const FeedOptions& options) {
  const int64_t n = replica_examples(dataset, options);
  const int64_t b = options.batch_size;
  return options.training && options.drop_last ? n / b : (n + b - 1) / b;
}

namespace {

std::function<std::optional<NamedBatch>()> stream_feed(const TrainerDataset& dataset, const FeedOptions& options, uint64_t epoch,
                                                       int64_t start_batch) {
  struct Stream {
    ExampleStream next;
    uint64_t number;
  };
  const uint64_t per_epoch = static_cast<uint64_t>(batches_per_epoch(dataset, options));
  auto stream = std::make_shared<Stream>(Stream{dataset.stream(epoch), epoch * per_epoch + static_cast<uint64_t>(start_batch)});
  // Every replica trains as many batches an epoch (the shortest share's): the steps meet in their collectives.
  const uint64_t end = epoch * per_epoch + per_epoch;
  // A resumed epoch: the examples of the batches already trained on are read and dropped.
  for (int64_t i = 0; i < start_batch * options.batch_size; ++i) {
    if (!stream->next()) break;
  }
  const auto replicas = static_cast<uint64_t>(options.replicas), replica = static_cast<uint64_t>(options.replica);
  return [stream, options, end, replicas, replica, collate = dataset.collate_examples,
          pad_id = dataset.pad_token_id]() -> std::optional<NamedBatch> {
    if (options.training && stream->number >= end) return std::nullopt;
    std::vector<Example> examples;
    while (static_cast<int64_t>(examples.size()) < options.batch_size) {
      std::optional<Example> ex = stream->next();
      if (!ex) break;
      examples.push_back(std::move(*ex));
    }
    const auto count = static_cast<int64_t>(examples.size());
    if (count == 0 || (options.training && options.drop_last && count < options.batch_size)) return std::nullopt;
    // Each replica masks with its own draws: batch n of replica r is the collator's batch n*W + r.
    NamedBatch batch = collate(std::move(examples), stream->number++ * replicas + replica);
    pad_rows(batch, options.batch_size, pad_id);
    return batch;
  };
}

}  // namespace

std::function<std::optional<NamedBatch>()> epoch_feed(const TrainerDataset& dataset, const FeedOptions& options, uint64_t epoch,
                                                      int64_t start_batch) {
  if (dataset.streamed()) return stream_feed(dataset, options, epoch, start_batch);
  check(static_cast<bool>(dataset.collate), "TrainerDataset", "a dataset needs a collate function or a stream");
  const auto n = static_cast<size_t>(dataset.size);
  const auto b = static_cast<size_t>(options.batch_size);
  const int64_t pad_id = dataset.pad_token_id;
  auto collate = dataset.collate;
  if (!options.training && options.replicas > 1) {
    // Evaluation: batch k of the one-replica evaluation to replica k mod W,
    // collated as that batch (the same examples and masks).
    auto next = std::make_shared<size_t>(static_cast<size_t>(options.replica));
    const auto stride = static_cast<size_t>(options.replicas);
    return [collate, next, n, b, stride, pad_id]() -> std::optional<NamedBatch> {
      const size_t k = *next;
      if (k * b >= n) return std::nullopt;
      *next += stride;
      std::vector<size_t> indices;
      for (size_t i = k * b; i < std::min(n, (k + 1) * b); ++i) indices.push_back(i);
      NamedBatch batch = collate(indices, k);
      pad_rows(batch, static_cast<int64_t>(b), pad_id);
      return batch;
    };
  }
  DataLoaderOptions loader_options;
  loader_options.batch_size = options.batch_size;
  loader_options.shuffle = options.training;
  loader_options.seed = options.seed;
  loader_options.drop_last = options.training && options.drop_last;
  loader_options.num_workers = options.num_workers;
  loader_options.worker_init_fn = options.worker_init_fn;
  // Training: this replica's DistributedSampler share; each replica masks with
  // its own draws (its batch n is the collator's batch n*W + r).
  loader_options.num_replicas = options.training ? options.replicas : 1;
  loader_options.rank = options.training ? options.replica : 0;
  const auto replicas = static_cast<uint64_t>(loader_options.num_replicas), replica = static_cast<uint64_t>(loader_options.rank);
  const int64_t rows = options.batch_size;
  DataLoader<NamedBatch> loader(n, loader_options, [collate, rows, pad_id, replicas, replica](const std::vector<size_t>& indices, uint64_t number) {
    NamedBatch batch = collate(indices, number * replicas + replica);
    pad_rows(batch, rows, pad_id);  // static shapes: one compiled step
    return batch;
  });
  // The epoch owns the collate function, so the loader need not outlive it.
  std::shared_ptr<DataLoader<NamedBatch>::Epoch> e = loader.epoch(epoch, static_cast<size_t>(start_batch));
  return [e] { return e->next(); };
}

}  // namespace lazytrain::data
