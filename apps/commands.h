// The subcommands of the lazytrain command line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "train/training_arguments.h"

namespace lazytrain::apps {

// Flags of `lazytrain run_mlm`, named as Hugging Face's run_mlm.py.
struct RunMlmOptions {
  std::string train_file, validation_file;
  std::string train_tfrecords, validation_tfrecords;  // globs of TFRecord shards (make_tfrecords)
  std::string model_type = "bert";
  std::string model_name_or_path, config_name, config_overrides, tokenizer_name;
  std::string attn_implementation;  // empty: the config class's default
  std::optional<int64_t> max_seq_length;  // unset: min(512, max_position_embeddings)
  bool pad_to_max_length = false;
  bool line_by_line = false;
  // --line_by_line without --pad_to_max_length: batches padded to their longest
  // line rounded up to a multiple of this (0: every line padded to max_seq_length).
  int64_t pad_to_multiple_of = 0;
  double mlm_probability = 0.15;
  std::optional<int64_t> max_train_samples, max_eval_samples;  // unset: every example
  std::string backend;  // empty: $LAZYTRAIN_BACKEND, else the default
  std::string compile_cache_dir, dump_hlo;
  std::string profile_dir;  // a Chrome trace of the run goes here (runtime/profiler.h); empty: none
  train::TrainingArguments training;
};

void add_run_mlm_command(CLI::App& app, RunMlmOptions& options);
// Runs masked-language-model training/evaluation; returns the exit code. Throws
// Error (one line, nothing half-written in --output_dir) for bad input.
int run_mlm(const RunMlmOptions& options);

// Flags of `lazytrain run_clm`, named as Hugging Face's run_clm.py.
struct RunClmOptions {
  std::string train_file, validation_file;
  std::string train_tfrecords, validation_tfrecords;  // globs of TFRecord shards (make_tfrecords with a GPT-2 tokenizer)
  std::string model_type = "gpt2";
  std::string model_name_or_path, config_name, config_overrides, tokenizer_name;
  std::string attn_implementation;  // empty: the config class's default
  std::optional<int64_t> block_size;  // unset: min(1024, n_positions)
  bool no_keep_linebreaks = false;
  std::optional<int64_t> max_train_samples, max_eval_samples;
  std::string backend;
  std::string compile_cache_dir, dump_hlo;
  std::string profile_dir;  // a Chrome trace of the run goes here (runtime/profiler.h); empty: none
  train::TrainingArguments training;
};

void add_run_clm_command(CLI::App& app, RunClmOptions& options);
// Causal-language-model training/evaluation (GPT-2, Llama); returns the exit code.
// Throws Error (one line, nothing half-written in --output_dir) for bad input.
int run_clm(const RunClmOptions& options);

// Flags of `lazytrain train_tokenizer`.
struct TrainTokenizerOptions {
  std::string model_type = "unigram";
  int64_t vocab_size = 8000;
  double character_coverage = 0.9995;
  std::optional<int64_t> max_sentence_length;  // unset: the longest input line
  std::vector<std::string> input;
  std::string output_dir;
};

void add_train_tokenizer_command(CLI::App& app, TrainTokenizerOptions& options);
int train_tokenizer(const TrainTokenizerOptions& options);

// Flags of `lazytrain make_tfrecords`.
struct MakeTfrecordsOptions {
  std::string tokenizer;
  int64_t max_seq_length = 128;
  int64_t shard_size = 1000;
  std::vector<std::string> input;
  std::string output_dir;
  std::string prefix = "data";
};

void add_make_tfrecords_command(CLI::App& app, MakeTfrecordsOptions& options);
int make_tfrecords(const MakeTfrecordsOptions& options);

// Flags of `lazytrain fill_mask`.
struct FillMaskOptions {
  std::string model;       // a model directory (config.json, model.safetensors, tokenizer)
  std::optional<std::string> text;  // one text (given, possibly empty)
  std::string file;                 // or a file of lines
  int64_t top_k = 5;
  int64_t batch_size = 8;
  bool json = false;
  std::string backend;
  std::string execution_mode = "lazy";  // lazy/execution_mode.h
};

void add_fill_mask_command(CLI::App& app, FillMaskOptions& options);
// Prints the ranked predictions (or --json); returns the exit code. Throws Error
// naming the flag or file for bad input, before any output.
int fill_mask(const FillMaskOptions& options);

// Flags of `lazytrain generate` (HF GenerationConfig names; src/models/generation.h).
struct GenerateOptions {
  std::string model;                 // a GPT-2 or Llama directory: config.json, model.safetensors, the tokenizer's files
  std::vector<std::string> prompts;  // --prompt, repeatable: one batch, left-padded
  int64_t max_new_tokens = 20;
  bool do_sample = false;
  double temperature = 1.0;
  int64_t top_k = 50;
  double top_p = 1.0;
  int64_t num_return_sequences = 1;
  uint64_t seed = 42;
  bool json = false;
  bool return_tensors = false;  // --json prints {"generated_token_ids": [...]} (prompt and new ids) instead of the text
  std::string backend;
};

void add_generate_command(CLI::App& app, GenerateOptions& options);
// Prints each generated text (the prompt and its continuation), or --json;
// returns the exit code. Throws Error naming the flag or file for bad input.
int generate(const GenerateOptions& options);

// Flags of `lazytrain tokenize`.
struct TokenizeOptions {
  std::string tokenizer;   // a tokenizer's files (AutoTokenizer::from_files)
  std::optional<std::string> text;  // one text,
  std::string input;                // or a file, read whole
  bool json = false;
  bool add_special_tokens = false;
};

void add_tokenize_command(CLI::App& app, TokenizeOptions& options);
// Prints the tokens and ids of the text (a line each, or one JSON object);
// returns the exit code. Throws Error naming the file or flag for bad input.
int tokenize(const TokenizeOptions& options);

}  // namespace lazytrain::apps
