// Writing a corpus as TFRecord shards of fixed-size token blocks (the TF/TPU
// pre-training recipe; `lazytrain make_tfrecords`): every line that is not
// blank is encoded as <s> ... </s>; blank lines (empty or whitespace only,
// data::is_blank_line, as run_mlm --line_by_line skips them) are paragraph or
// document breaks in this recipe and add nothing (run_mlm's grouped text path
// instead keeps them as <s> </s>, as Hugging Face's run_mlm.py does). The
// encodings are concatenated, and the stream is cut
// into blocks of exactly max_seq_length tokens, as Hugging Face's group_texts
// does, except that the last partial block is kept, padded with <pad> and
// attention_mask 0, so no text is lost. Each block is one tf.train.Example with
// int64 features input_ids and attention_mask; examples go in order into
// <prefix>-00000-of-0000N.tfrecord files of shard_size examples, described by
// <prefix>.json (num_examples, num_shards, files, max_seq_length, tokenizer).
// Any tokenizer of data/tokenizer.h: one that adds no special tokens (GPT-2's
// byte-level BPE) encodes each line with its line break, as run_clm.py's
// keep_linebreaks does, so that the blocks keep the text's lines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace lazytrain::data {

struct TFRecordShardOptions {
  int64_t max_seq_length = 128;
  int64_t shard_size = 1000;  // examples per shard
  std::string output_dir;
  std::string prefix = "data";
  std::string tokenizer_name;  // recorded in <prefix>.json (the tokenizer's path)
};

struct TFRecordShardSummary {
  int64_t num_examples = 0;
  int64_t num_tokens = 0;         // text tokens written, specials included, padding not
  std::vector<std::string> files;
};

// Throws Error for max_seq_length < 2, shard_size < 1, a missing, unreadable,
// non-UTF-8 or empty (no text at all) input file, naming it. Files appear
// atomically; on error none of this call's shards is left behind.
TFRecordShardSummary write_tfrecord_shards(const std::vector<std::string>& input_files, const Tokenizer& tokenizer,
                                           const TFRecordShardOptions& options);

}  // namespace lazytrain::data
