#include "apps/tfrecord_split.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "core/error.h"
#include "data/tfrecord_dataset.h"
#include "distributed/xla_model.h"
#include "runtime/collectives.h"

namespace lazytrain::apps {

namespace {

// The examples of TFRecord shards matching `pattern`: how many there are (for
// `replicas` > 1: in the smallest replica's share of the files, file f going
// to replica f % replicas, as TFRecordDataset splits them), and their length
// (every example must have the same). Reads the shards once.
std::pair<int64_t, int64_t> scan_tfrecords(const std::string& command, const std::string& pattern, const std::string& flag, int replicas) {
  const std::vector<std::string> files = data::glob_files(pattern);
  if (replicas > 1 && static_cast<int>(files.size()) < replicas) {
    throw Error("[" + command + "] " + flag + " '" + pattern + "' matches " + std::to_string(files.size()) + " shards, fewer than the " +
                std::to_string(replicas) + " replicas (each reads its own shards): write at least one shard per replica");
  }
  std::vector<int64_t> per_replica(static_cast<size_t>(replicas), 0);
  int64_t count = 0, length = -1;
  for (size_t f = 0; f < files.size(); ++f) {
    data::TFRecordDataset shard({files[f]}, {});
    while (std::optional<data::Example> ex = shard.next()) {
      const auto n = static_cast<int64_t>(ex->input_ids.size());
      if (length >= 0 && n != length) {
        throw Error("[" + command + "] " + flag + " '" + pattern + "' holds examples of " + std::to_string(length) + " and " + std::to_string(n) +
                    " tokens; write the shards with one --max_seq_length");
      }
      length = n;
      ++count;
      ++per_replica[f % static_cast<size_t>(replicas)];
    }
  }
  if (replicas > 1) count = *std::min_element(per_replica.begin(), per_replica.end());
  if (count == 0) throw Error("[" + command + "] " + flag + " '" + pattern + "' holds no example");
  return {count, length};
}

// Streams the shards: interleaved, shuffled for training (tf.data's recipe),
// a new shuffle order every epoch.
// With replicas, each opens the shards of its ordinal (made on the replica's thread).
train::ExampleStreamFactory tfrecord_stream(const std::string& pattern, bool training, uint64_t seed) {
  std::vector<std::string> files = data::glob_files(pattern);
  return [files, training, seed](uint64_t epoch) -> train::ExampleStream {
    data::TFRecordDatasetOptions options;
    options.num_replicas = distributed::world_size();
    options.replica_index = distributed::ordinal();
    if (options.replica_index >= static_cast<int>(files.size())) return [] { return std::optional<data::Example>(); };  // no shard of its own
    options.cycle_length = training ? 4 : 1;
    options.shuffle_buffer = training ? 10000 : 0;
    options.seed = seed * 1000003ull + epoch;
    auto dataset = std::make_shared<data::TFRecordDataset>(files, options);
    return [dataset] { return dataset->next(); };
  };
}

}  // namespace

StreamedSplit stream_tfrecords(const std::string& command, const std::string& flag, const std::string& glob, bool training,
                               const train::TrainingArguments& args, const std::optional<int64_t>& limit) {
  if (limit && *limit < 1) {
    throw Error("[" + command + "] " + (training ? "--max_train_samples" : "--max_eval_samples") + " must be positive, got " +
                std::to_string(*limit));
  }
  const int replicas = static_cast<int>(args.num_cores) * runtime::replica_world().num_processes;
  const auto [count, length] = scan_tfrecords(command, glob, flag, training ? replicas : 1);
  StreamedSplit split;
  split.size = limit ? std::min(count, *limit) : count;
  split.length = length;
  split.stream = tfrecord_stream(glob, training, args.seed);
  if (limit) {
    split.stream = [inner = std::move(split.stream), n = split.size](uint64_t epoch) -> train::ExampleStream {
      return [next = inner(epoch), left = n]() mutable -> std::optional<data::Example> {
        if (left == 0) return std::nullopt;
        --left;
        return next();
      };
    };
  }
  return split;
}

}  // namespace lazytrain::apps
