#include "apps/mlm_datasets.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "apps/tfrecord_split.h"
#include "core/error.h"
#include "data/text_dataset.h"

namespace lazytrain::apps {

namespace {

// run_mlm.py's text datasets, for BERT and RoBERTa alike: every line (blank
// ones too, as Hugging Face's `datasets` text loader keeps them) tokenized and
// grouped into blocks; or, with --line_by_line, one padded example per
// non-blank line.
std::vector<data::Example> load_dataset(const std::string& path, const data::Tokenizer& tokenizer, const RunMlmOptions& o,
                                        int64_t max_seq_length) {
  std::vector<data::Example> examples;
  if (o.line_by_line) {
    const std::vector<std::string> lines = data::read_text_lines(path, data::BlankLines::kSkip);
    // Bounded shapes: the lazy pipeline compiles one graph per shape, so lines are
    // padded to max_seq_length, or by the collator to a multiple of --pad_to_multiple_of.
    const bool bucketed = !o.pad_to_max_length && o.pad_to_multiple_of > 0;
    if (!o.pad_to_max_length && !bucketed) {
      static bool noted = false;
      if (!noted) {
        std::fprintf(stderr, "note: --line_by_line without --pad_to_max_length: padding to max_seq_length to keep shapes static "
                             "(--pad_to_multiple_of N pads each batch to its longest line rounded up to N instead)\n");
      }
      noted = true;
    }
    examples = data::tokenize_line_by_line(lines, tokenizer, max_seq_length, /*pad_to_max_length=*/!bucketed);
  } else {
    const std::vector<std::string> lines = data::read_text_lines(path, data::BlankLines::kKeep);
    examples = data::group_texts(data::tokenize_lines(lines, tokenizer), max_seq_length);
  }
  if (examples.empty()) throw Error("[run_mlm] '" + path + "' gives no example of " + std::to_string(max_seq_length) + " tokens");
  return examples;
}

int64_t max_positions_of(const models::BertConfig& config) {
  // RoBERTa's positions start after the padding index.
  return config.model_type == "roberta" ? config.max_position_embeddings - config.pad_token_id - 1 : config.max_position_embeddings;
}

}  // namespace

int64_t mlm_max_seq_length(const RunMlmOptions& o, const models::BertConfig& config) {
  if (o.max_seq_length && *o.max_seq_length < 2) {
    throw Error("[run_mlm] --max_seq_length must be at least 2 ([CLS] and [SEP]), got " + std::to_string(*o.max_seq_length));
  }
  const int64_t max_positions = max_positions_of(config);
  const int64_t max_seq_length = o.max_seq_length ? *o.max_seq_length : std::min<int64_t>(512, max_positions);
  if (max_seq_length > max_positions) {
    throw Error("[run_mlm] --max_seq_length " + std::to_string(max_seq_length) + " is larger than the model's max_position_embeddings " +
                std::to_string(config.max_position_embeddings) +
                (max_positions == config.max_position_embeddings
                     ? std::string()
                     : " allows (RoBERTa's positions start after pad_token_id: at most " + std::to_string(max_positions) + ")"));
  }
  if (o.pad_to_multiple_of > 0 && max_seq_length % o.pad_to_multiple_of != 0) {
    // Lines are cut at max_seq_length: rounded up to a multiple, none may pass it.
    throw Error("[run_mlm] --pad_to_multiple_of " + std::to_string(o.pad_to_multiple_of) + " does not divide --max_seq_length " +
                std::to_string(max_seq_length) + ": a batch's longest line rounded up would pass it; pick a divisor");
  }
  return max_seq_length;
}

MlmDatasets load_mlm_datasets(const RunMlmOptions& o, const data::Tokenizer& tokenizer, const models::BertConfig& config) {
  const train::TrainingArguments& t = o.training;
  const int64_t max_seq_length = mlm_max_seq_length(o, config);
  const int64_t max_positions = max_positions_of(config);
  MlmDatasets d;
  auto check_records = [&](const std::pair<int64_t, int64_t>& r, const std::string& flag, const std::string& glob) {
    if (o.max_seq_length && *o.max_seq_length != r.second) {
      throw Error("[run_mlm] --max_seq_length " + std::to_string(*o.max_seq_length) + " differs from the " + std::to_string(r.second) +
                  "-token examples of " + flag + " '" + glob + "' (shards fix the length; leave --max_seq_length out)");
    }
    if (r.second > max_positions) {
      throw Error("[run_mlm] " + flag + " '" + glob + "' holds examples of " + std::to_string(r.second) + " tokens, more than the model's " +
                  std::to_string(max_positions) + " positions");
    }
    // Fewer examples than a batch make one padded batch, as Hugging Face runs them.
    if (r.first < 1) throw Error("[run_mlm] " + flag + " '" + glob + "' holds no example");
  };
  // One split: streamed from shards when a glob is given, else read from the text file.
  auto load_split = [&](bool training, std::vector<data::Example>& examples, train::ExampleStreamFactory& stream, int64_t& stream_size) {
    const std::string& glob = training ? o.train_tfrecords : o.validation_tfrecords;
    const std::string& file = training ? o.train_file : o.validation_file;
    // --max_train_samples / --max_eval_samples: the first n examples (of the stream's order for shards).
    const std::optional<int64_t>& limit = training ? o.max_train_samples : o.max_eval_samples;
    if (limit && *limit < 1) {
      throw Error(std::string("[run_mlm] ") + (training ? "--max_train_samples" : "--max_eval_samples") + " must be positive, got " +
                  std::to_string(*limit));
    }
    if (!glob.empty()) {
      const std::string flag = training ? "--train_tfrecords" : "--validation_tfrecords";
      StreamedSplit split = stream_tfrecords("run_mlm", flag, glob, training, t, limit);
      check_records({split.size, split.length}, flag, glob);
      stream = std::move(split.stream);
      stream_size = split.size;
    } else {
      examples = load_dataset(file, tokenizer, o, max_seq_length);
      if (limit && static_cast<int64_t>(examples.size()) > *limit) examples.resize(static_cast<size_t>(*limit));
    }
  };
  if (t.do_train) load_split(true, d.train, d.train_stream, d.train_stream_size);
  if (t.do_eval) load_split(false, d.eval, d.eval_stream, d.eval_stream_size);

  return d;
}

}  // namespace lazytrain::apps
