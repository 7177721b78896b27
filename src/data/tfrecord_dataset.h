// Streaming datasets of tf.train.Example records in TFRecord shards (what
// `lazytrain make_tfrecords` writes): tf.data's list_files -> shard ->
// interleave -> shuffle(buffer) pipeline, one pass. Records become Examples
// from their int64 features `input_ids` and `attention_mask`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "data/example.h"
#include "data/tfrecord.h"

namespace lazytrain::data {

// The files matching a glob pattern ("out/train-*.tfrecord"), sorted. Throws
// Error naming the pattern when nothing matches.
std::vector<std::string> glob_files(const std::string& pattern);

struct TFRecordDatasetOptions {
  int cycle_length = 2;         // shards read at once, records taken round-robin (tf.data interleave)
  int64_t shuffle_buffer = 0;   // 0: records in file order; else tf.data's shuffle(buffer_size)
  uint64_t seed = 0;            // shuffle generator: std::mt19937_64(seed)
  int num_replicas = 1;         // replica r reads the files with index % num_replicas == r
  int replica_index = 0;
  bool skip_corrupt = false;    // skip damaged records and records that are not Examples (counted, warned)
};

class TFRecordDataset {
 public:
  // Throws Error for no files, no file for this replica, or bad options.
  TFRecordDataset(std::vector<std::string> files, TFRecordDatasetOptions options);

  // The next example, or nullopt after the last. Throws Error naming the file,
  // record index and byte offset for a damaged record or one whose features are not int64
  // input_ids/attention_mask of equal length (unless skip_corrupt).
  std::optional<Example> next();
  int64_t skipped() const;

 private:
  std::optional<Example> next_in_order();
  std::vector<std::string> files_;
  TFRecordDatasetOptions options_;
  size_t next_file_ = 0;
  std::vector<std::unique_ptr<TFRecordReader>> open_;
  size_t turn_ = 0;
  int64_t skipped_closed_ = 0, skipped_examples_ = 0;
  std::vector<Example> buffer_;
  std::mt19937_64 rng_;
};

}  // namespace lazytrain::data
