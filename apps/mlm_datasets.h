// run_mlm's datasets, as Hugging Face's run_mlm.py makes them: text files
// (every line tokenized and grouped into blocks, or --line_by_line), or
// TFRecord shards streamed (the TF/TPU recipe). Every example has the same
// length (static shapes: the training step compiles once).
#pragma once

#include <cstdint>
#include <vector>

#include "apps/commands.h"
#include "data/example.h"
#include "data/tokenizer.h"
#include "models/bert_config.h"
#include "train/trainer.h"

namespace lazytrain::apps {

struct MlmDatasets {
  std::vector<data::Example> train, eval;             // from text files
  train::ExampleStreamFactory train_stream, eval_stream;  // from TFRecord shards (set when given)
  int64_t train_stream_size = 0, eval_stream_size = 0;    // examples per epoch of each stream
};

// The sequence length of the run: --max_seq_length, else min(512, the model's
// positions). RoBERTa's positions start after pad_token_id. Error when it is
// below 2 or more than the model's positions.
int64_t mlm_max_seq_length(const RunMlmOptions& options, const models::BertConfig& config);

// The datasets --do_train / --do_eval need. Errors name the file or glob: no
// example of max_seq_length tokens, shards of mixed lengths or of another length than --max_seq_length.
MlmDatasets load_mlm_datasets(const RunMlmOptions& options, const data::Tokenizer& tokenizer, const models::BertConfig& config);

}  // namespace lazytrain::apps
