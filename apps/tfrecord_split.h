// A dataset split streamed from TFRecord shards (`lazytrain make_tfrecords`), as
// run_mlm and run_clm read --train_tfrecords / --validation_tfrecords: the
// shards are scanned once for their example count and length, then streamed
// (interleaved and shuffled for training, tf.data's recipe), each replica
// reading its own shards.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "train/trainer.h"
#include "train/training_arguments.h"

namespace lazytrain::apps {

struct StreamedSplit {
  train::ExampleStreamFactory stream;
  int64_t size = 0;    // examples an epoch (at most `limit`)
  int64_t length = 0;  // tokens of every example
};

// The split of `glob` for `command` ("run_mlm"), named `flag` in errors.
// Training: every replica gets as many examples as the smallest share (file f
// goes to replica f % replicas); evaluation: each replica its own shards, the
// counts summed. `limit` (--max_*_samples) keeps the first n of the stream's
// order. Throws Error "[command] flag 'glob' ..." for no match, fewer shards
// than replicas, examples of mixed lengths, no example, a limit below 1.
StreamedSplit stream_tfrecords(const std::string& command, const std::string& flag, const std::string& glob, bool training,
                               const train::TrainingArguments& args, const std::optional<int64_t>& limit);

}  // namespace lazytrain::apps
