// TrainerDataset: a dataset as the Trainer reads it, and the batches one
// replica reads in one epoch (Hugging Face's Trainer.get_train_dataloader /
// get_eval_dataloader with PyTorch/XLA's per-replica DistributedSampler).
//
// A dataset is random access (`size` examples, batched by index lists in the
// DataLoader's order: data/data_loader.h) or a stream (examples in stream
// order, as a TFRecordDataset shuffles them itself). Either way a batch is
// made by a collate function that gets the batch's number in this replica's
// run, so that randomness seeded from it (the masked-LM collator's draws) is
// the same whatever the number of workers and after a resume: batch n of
// replica r is numbered n * W + r.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "data/data_collator.h"
#include "data/example.h"
#include "data/named_batch.h"

namespace lazytrain::data {

// A one-pass stream of examples (nullopt at the end), e.g. a TFRecordDataset.
using ExampleStream = std::function<std::optional<Example>()>;
// Opens the stream of one epoch.
using ExampleStreamFactory = std::function<ExampleStream(uint64_t epoch)>;

struct TrainerDataset {
  // Examples per epoch (for a stream: this replica's).
  int64_t size = 0;
  // Random access: the batch of the examples at `indices` (in batch order).
  std::function<NamedBatch(const std::vector<size_t>& indices, uint64_t batch_number)> collate;
  // A stream instead: its examples, and the batch of consecutive examples.
  ExampleStreamFactory stream;
  std::function<NamedBatch(std::vector<Example>&& examples, uint64_t batch_number)> collate_examples;
  // A CRC32C of the content (unset: not known, e.g. a stream), computed once on
  // first use: replicas compare it, and a checkpoint is resumed only on the
  // same data (data_state.json's train_data_crc32c).
  std::function<uint32_t()> fingerprint;
  // input_ids of padding rows (pad_rows).
  int64_t pad_token_id = 0;

  bool empty() const { return size == 0; }
  bool streamed() const { return static_cast<bool>(stream); }

  // In-memory examples collated by `collator` (its per-batch-number draws);
  // fingerprint: the CRC32C of every example's input_ids (int64 bytes, in order).
  static TrainerDataset from_examples(std::vector<Example> examples, DataCollatorForLanguageModeling collator);
  // A stream of `size` examples per epoch collated by `collator`.
  static TrainerDataset from_stream(ExampleStreamFactory factory, int64_t size, DataCollatorForLanguageModeling collator);
};

// How one replica batches a dataset.
struct FeedOptions {
  bool training = true;  // training: this replica's DistributedSampler share, shuffled; else evaluation (below)
  int64_t batch_size = 1;
  bool drop_last = false;  // training only: a last partial batch is dropped instead of padded
  uint64_t seed = 42;      // of the shuffle
  int num_workers = 0;     // DataLoader workers that collate (random access only)
  std::function<void(int)> worker_init_fn;
  int64_t replicas = 1, replica = 0;
};

// The examples this replica batches in one epoch (all of them with one
// replica). Evaluation gives batch k of the one-replica evaluation to replica
// k % replicas (the same examples and draws, so the replicas' evaluation
// equals one replica's; each example counted once).
int64_t replica_examples(const TrainerDataset& dataset, const FeedOptions& options);
int64_t batches_per_epoch(const TrainerDataset& dataset, const FeedOptions& options);

// The host batches of epoch `epoch` from batch `start_batch` on (the batches
// before it are skipped unmade; a stream reads and drops their examples), each
// padded to batch_size rows (pad_rows). A training stream gives as many
// batches as batches_per_epoch (every replica the same count, so their steps
// meet in the collectives). The returned function owns what it needs.
std::function<std::optional<NamedBatch>()> epoch_feed(const TrainerDataset& dataset, const FeedOptions& options, uint64_t epoch,
                                                      int64_t start_batch);

}  // namespace lazytrain::data
