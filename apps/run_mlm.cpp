// `lazytrain run_mlm`: Hugging Face's run_mlm.py for BERT and RoBERTa on the lazy
// pipeline, from text files or from TFRecord shards (the TF/TPU recipe).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "apps/commands.h"
#include "backend/compiler.h"
#include "core/error.h"
#include "data/auto_tokenizer.h"
#include "data/data_collator.h"
#include "data/text_dataset.h"
#include "data/tfrecord_dataset.h"
#include "lazy/graph_executor.h"
#include "models/bert.h"
#include "models/roberta.h"
#include "runtime/metrics.h"
#include "core/atomic_file.h"
#include "train/model_io.h"
#include "train/results_files.h"
#include "train/trainer.h"

namespace lazytrain::apps {

namespace fs = std::filesystem;

void add_run_mlm_command(CLI::App& app, RunMlmOptions& o) {
  CLI::App* c = app.add_subcommand("run_mlm", "Train and/or evaluate a masked language model (BERT or RoBERTa) on text files or TFRecord shards");
  auto& t = o.training;
  // As argparse: a repeated flag takes its last value.
  c->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->always_capture_default();
  c->add_option("--train_file", o.train_file, "A text file to train on (one document or sentence per line)");
  c->add_option("--validation_file", o.validation_file, "A text file to evaluate on");
  c->add_option("--train_tfrecords", o.train_tfrecords, "TFRecord shards to train on, a glob (lazytrain make_tfrecords), streamed");
  c->add_option("--validation_tfrecords", o.validation_tfrecords, "TFRecord shards to evaluate on, a glob");
  c->add_option("--model_type", o.model_type, "Model type to train from scratch: bert (WordPiece vocab.txt) or roberta (SentencePiece)")
      ->check(CLI::IsMember({"bert", "roberta"}));
  c->add_option("--model_name_or_path", o.model_name_or_path,
                "A directory written by run_mlm (config.json, model.safetensors, vocab.txt) to start from");
  c->add_option("--config_name", o.config_name, "A config.json (or a directory holding one); default: BERT's defaults");
  c->add_option("--config_overrides", o.config_overrides, "Overrides of config fields: \"hidden_size=128,num_hidden_layers=2\"");
  c->add_option("--tokenizer_name", o.tokenizer_name,
                "bert: a vocab.txt or a directory holding one; roberta: a SentencePiece model directory (default: --model_name_or_path)");
  c->add_option("--max_seq_length", o.max_seq_length, "Sequence length after tokenization (default: min(512, max_position_embeddings))");
  c->add_flag("--pad_to_max_length", o.pad_to_max_length, "Pad every line to max_seq_length (with --line_by_line)");
  c->add_flag("--line_by_line", o.line_by_line, "One example per line instead of grouping text into blocks");
  c->add_option("--mlm_probability", o.mlm_probability, "Ratio of tokens to mask")->check(CLI::Range(0.0, 1.0));
  c->add_option("--output_dir", t.output_dir, "Where to write the model, metrics and logs")->required();
  c->add_flag("--overwrite_output_dir", t.overwrite_output_dir, "Overwrite the content of the output directory");
  c->add_flag("--do_train", t.do_train, "Run training");
  c->add_flag("--do_eval", t.do_eval, "Run evaluation on the validation file");
  c->add_option("--per_device_train_batch_size", t.per_device_train_batch_size, "Batch size for training");
  c->add_option("--per_device_eval_batch_size", t.per_device_eval_batch_size, "Batch size for evaluation");
  c->add_option("--learning_rate", t.learning_rate, "Initial learning rate for AdamW");
  c->add_option("--weight_decay", t.weight_decay, "Weight decay for AdamW (not on biases and LayerNorm weights)");
  c->add_option("--adam_beta1", t.adam_beta1, "AdamW beta1");
  c->add_option("--adam_beta2", t.adam_beta2, "AdamW beta2");
  c->add_option("--adam_epsilon", t.adam_epsilon, "AdamW epsilon");
  c->add_option("--max_grad_norm", t.max_grad_norm, "Max gradient norm (0 disables clipping)");
  c->add_option("--num_train_epochs", t.num_train_epochs, "Total number of training epochs");
  c->add_option("--max_steps", t.max_steps, "If > 0: total number of training steps (overrides num_train_epochs)");
  c->add_option("--warmup_steps", t.warmup_steps, "Linear warm-up over this many steps");
  c->add_option("--logging_steps", t.logging_steps, "Log every X update steps");
  c->add_option("--seed", t.seed, "Random seed (initialisation, shuffling, masking, dropout)");
  c->add_flag("--metrics_debug,--tpu_metrics_debug", t.metrics_debug, "Print the metrics report (compile and execute times) at the end");
  c->add_flag("--disable_tqdm", t.disable_tqdm, "Do not print the progress bar");
  c->add_option("--dataloader_num_workers", t.dataloader_num_workers, "Threads that collate batches (0: the loader thread)");
  c->add_option("--loader_prefetch_size", t.loader_prefetch_size, "Host batches the DeviceLoader prepares ahead");
  c->add_option("--device_prefetch_size", t.device_prefetch_size, "Device batches the DeviceLoader transfers ahead");
  c->add_flag("--bf16", t.bf16, "bf16 mixed precision (torch.autocast on CPU): matmuls in bf16, weights and optimizer state in f32");
  c->add_option("--backend", o.backend, "Compiler backend: cpu (generated kernels) or interpreter (reference)")
      ->check(CLI::IsMember({"cpu", "interpreter"}));
  c->add_option("--compile_cache_dir", o.compile_cache_dir,
                "Persistent compile cache directory (default: $LAZYTRAIN_CACHE_DIR); a second run compiles nothing");
  c->add_option("--dump_hlo", o.dump_hlo, "Write each graph's HLO before and after the passes and its generated kernels here");
}

namespace {

void require_file(const std::string& path, const std::string& flag) {
  if (path.empty()) throw Error("[run_mlm] " + flag + " is required");
  if (fs::is_directory(path)) throw Error("[run_mlm] " + flag + " '" + path + "' is a directory; expected a text file");
  if (!fs::is_regular_file(path)) throw Error("[run_mlm] " + flag + " '" + path + "' does not exist or is not a file");
}

// As Hugging Face's run_mlm.py, a non-empty --output_dir is refused only when
// training (it would overwrite a model); evaluating writes its results beside
// the model it evaluates.
void check_output_dir(const train::TrainingArguments& t) {
  fs::path dir(t.output_dir);
  if (!fs::exists(dir)) return;
  if (!fs::is_directory(dir)) throw Error("[run_mlm] --output_dir '" + t.output_dir + "' exists and is not a directory");
  if (!t.do_train || fs::is_empty(dir) || t.overwrite_output_dir) return;
  throw Error("[run_mlm] Output directory (" + t.output_dir + ") already exists and is not empty. Use --overwrite_output_dir to overcome.");
}

models::BertConfig load_config(const RunMlmOptions& o) {
  models::BertConfig config = o.model_type == "roberta" ? models::roberta_config() : models::BertConfig();
  std::string source = o.config_name.empty() ? o.model_name_or_path : o.config_name;
  if (!source.empty()) {
    std::string path = fs::is_directory(source) ? source + "/config.json" : source;
    config = models::BertConfig::from_json_file(path);
  }
  if (!o.config_overrides.empty()) config.update_from_string(o.config_overrides);
  config.validate(o.config_overrides.empty() ? "'" + source + "'" : "the config after --config_overrides");
  if (config.model_type != "bert" && config.model_type != "roberta") {
    throw Error("[run_mlm] model_type '" + config.model_type + "' is not supported; expected 'bert' or 'roberta'");
  }
  return config;
}

// The model being trained, BERT or RoBERTa, behind one forward.
struct MaskedLM {
  std::shared_ptr<nn::Module> module;
  std::function<models::MaskedLMOutput(const Tensor&, const Tensor&, const Tensor&)> forward;
};

MaskedLM make_model(const models::BertConfig& config) {
  if (config.model_type == "roberta") {
    auto m = std::make_shared<models::RobertaForMaskedLM>(config);
    return {m, [m](const Tensor& i, const Tensor& a, const Tensor& l) { return m->forward(i, a, l); }};
  }
  auto m = std::make_shared<models::BertForMaskedLM>(config);
  return {m, [m](const Tensor& i, const Tensor& a, const Tensor& l) { return m->forward(i, a, l); }};
}

// The examples of TFRecord shards matching `pattern`: how many there are, and
// their length (every example must have the same). Reads the shards once.
std::pair<int64_t, int64_t> scan_tfrecords(const std::string& pattern, const std::string& flag) {
  data::TFRecordDataset all(data::glob_files(pattern), {});
  int64_t count = 0, length = -1;
  while (std::optional<data::Example> ex = all.next()) {
    const auto n = static_cast<int64_t>(ex->input_ids.size());
    if (length >= 0 && n != length) {
      throw Error("[run_mlm] " + flag + " '" + pattern + "' holds examples of " + std::to_string(length) + " and " + std::to_string(n) +
                  " tokens; write the shards with one --max_seq_length");
    }
    length = n;
    ++count;
  }
  if (count == 0) throw Error("[run_mlm] " + flag + " '" + pattern + "' holds no example");
  return {count, length};
}

// Streams the shards: interleaved, shuffled for training (tf.data's recipe),
// a new shuffle order every epoch.
train::ExampleStreamFactory tfrecord_stream(const std::string& pattern, bool training, uint64_t seed) {
  std::vector<std::string> files = data::glob_files(pattern);
  return [files, training, seed](uint64_t epoch) -> train::ExampleStream {
    data::TFRecordDatasetOptions options;
    options.cycle_length = training ? 4 : 1;
    options.shuffle_buffer = training ? 10000 : 0;
    options.seed = seed * 1000003ull + epoch;
    auto dataset = std::make_shared<data::TFRecordDataset>(files, options);
    return [dataset] { return dataset->next(); };
  };
}

// Fails before any work when --output_dir could not be created or written.
void check_output_dir_writable(const std::string& dir) {
  fs::path p = fs::absolute(dir);
  while (!p.empty() && !fs::exists(p)) p = p.parent_path();
  if (p.empty() || !fs::is_directory(p) || access(p.c_str(), W_OK) != 0) {
    throw Error("[run_mlm] --output_dir '" + dir + "' cannot be created: '" + p.string() + "' is not a writable directory");
  }
}

// run_mlm.py's text datasets, for BERT and RoBERTa alike: every line (blank
// ones too, as Hugging Face's `datasets` text loader keeps them) tokenized and
// grouped into blocks; or, with --line_by_line, one padded example per
// non-blank line.
std::vector<data::Example> load_dataset(const std::string& path, const data::Tokenizer& tokenizer, const RunMlmOptions& o,
                                        int64_t max_seq_length) {
  std::vector<data::Example> examples;
  if (o.line_by_line) {
    const std::vector<std::string> lines = data::read_text_lines(path, data::BlankLines::kSkip);
    if (!o.pad_to_max_length) {
      // Static shapes: the lazy pipeline compiles one graph per shape, so pad anyway.
      static bool noted = false;
      if (!noted) std::fprintf(stderr, "note: --line_by_line without --pad_to_max_length: padding to max_seq_length to keep shapes static\n");
      noted = true;
    }
    examples = data::tokenize_line_by_line(lines, tokenizer, max_seq_length, /*pad_to_max_length=*/true);
  } else {
    const std::vector<std::string> lines = data::read_text_lines(path, data::BlankLines::kKeep);
    examples = data::group_texts(data::tokenize_lines(lines, tokenizer), max_seq_length);
  }
  if (examples.empty()) throw Error("[run_mlm] '" + path + "' gives no example of " + std::to_string(max_seq_length) + " tokens");
  return examples;
}

void require_one_batch(const std::vector<data::Example>& set, int64_t batch_size, const std::string& file, const std::string& flag) {
  if (static_cast<int64_t>(set.size()) < batch_size) {
    throw Error("[run_mlm] '" + file + "' gives " + std::to_string(set.size()) + " examples, fewer than one batch of " +
                std::to_string(batch_size) + " (" + flag + ")");
  }
}

}  // namespace

int run_mlm(const RunMlmOptions& o) {
  const train::TrainingArguments& t = o.training;
  // Validate everything before touching --output_dir.
  t.validate();
  if (!t.do_train && !t.do_eval) throw Error("[run_mlm] nothing to do: pass --do_train and/or --do_eval");
  if (t.do_train && o.train_tfrecords.empty()) require_file(o.train_file, "--train_file");
  if (t.do_eval && o.validation_tfrecords.empty()) require_file(o.validation_file, "--validation_file");
  if (!o.train_tfrecords.empty() && !o.train_file.empty()) throw Error("[run_mlm] give --train_file or --train_tfrecords, not both");
  if (!o.validation_tfrecords.empty() && !o.validation_file.empty()) {
    throw Error("[run_mlm] give --validation_file or --validation_tfrecords, not both");
  }
  if (!(o.mlm_probability > 0.0)) throw Error("[run_mlm] --mlm_probability must be in (0, 1]; with 0 no token is masked and the loss is undefined");
  if (!o.model_name_or_path.empty() && !fs::is_regular_file(o.model_name_or_path + "/model.safetensors")) {
    throw Error("[run_mlm] --model_name_or_path '" + o.model_name_or_path + "' holds no model.safetensors");
  }
  check_output_dir(t);
  check_output_dir_writable(t.output_dir);
  models::BertConfig config = load_config(o);
  std::string tokenizer_name = o.tokenizer_name.empty() ? o.model_name_or_path : o.tokenizer_name;
  if (tokenizer_name.empty()) throw Error("[run_mlm] --tokenizer_name is required (bert: a vocab.txt; roberta: a SentencePiece model directory)");
  const std::unique_ptr<data::Tokenizer> tokenizer = data::AutoTokenizer::from_pretrained(tokenizer_name, config.model_type);
  if (tokenizer->vocab_size() > config.vocab_size) {
    throw Error("[run_mlm] the tokenizer has " + std::to_string(tokenizer->vocab_size()) + " tokens but the config's vocab_size is " +
                std::to_string(config.vocab_size));
  }
  if (o.max_seq_length && *o.max_seq_length < 2) {
    throw Error("[run_mlm] --max_seq_length must be at least 2 ([CLS] and [SEP]), got " + std::to_string(*o.max_seq_length));
  }
  // RoBERTa's positions start after the padding index.
  const int64_t max_positions = config.model_type == "roberta" ? config.max_position_embeddings - config.pad_token_id - 1
                                                                : config.max_position_embeddings;
  const int64_t max_seq_length = o.max_seq_length ? *o.max_seq_length : std::min<int64_t>(512, max_positions);
  if (max_seq_length > max_positions) {
    throw Error("[run_mlm] --max_seq_length " + std::to_string(max_seq_length) + " is larger than the model's max_position_embeddings " +
                std::to_string(config.max_position_embeddings) +
                (max_positions == config.max_position_embeddings
                     ? std::string()
                     : " allows (RoBERTa's positions start after pad_token_id: at most " + std::to_string(max_positions) + ")"));
  }
  std::vector<data::Example> train_set, eval_set;
  std::pair<int64_t, int64_t> train_records{0, 0}, eval_records{0, 0};
  auto check_records = [&](const std::pair<int64_t, int64_t>& r, int64_t batch, const std::string& flag, const std::string& glob) {
    if (o.max_seq_length && *o.max_seq_length != r.second) {
      throw Error("[run_mlm] --max_seq_length " + std::to_string(*o.max_seq_length) + " differs from the " + std::to_string(r.second) +
                  "-token examples of " + flag + " '" + glob + "' (shards fix the length; leave --max_seq_length out)");
    }
    if (r.second > max_positions) {
      throw Error("[run_mlm] " + flag + " '" + glob + "' holds examples of " + std::to_string(r.second) + " tokens, more than the model's " +
                  std::to_string(max_positions) + " positions");
    }
    if (r.first < batch) {
      throw Error("[run_mlm] " + flag + " '" + glob + "' holds " + std::to_string(r.first) + " examples, fewer than one batch of " +
                  std::to_string(batch));
    }
  };
  if (t.do_train && !o.train_tfrecords.empty()) {
    train_records = scan_tfrecords(o.train_tfrecords, "--train_tfrecords");
    check_records(train_records, t.per_device_train_batch_size, "--train_tfrecords", o.train_tfrecords);
  } else if (t.do_train) {
    train_set = load_dataset(o.train_file, *tokenizer, o, max_seq_length);
    require_one_batch(train_set, t.per_device_train_batch_size, o.train_file, "--per_device_train_batch_size");
  }
  if (t.do_eval && !o.validation_tfrecords.empty()) {
    eval_records = scan_tfrecords(o.validation_tfrecords, "--validation_tfrecords");
    check_records(eval_records, t.per_device_eval_batch_size, "--validation_tfrecords", o.validation_tfrecords);
  } else if (t.do_eval) {
    eval_set = load_dataset(o.validation_file, *tokenizer, o, max_seq_length);
    require_one_batch(eval_set, t.per_device_eval_batch_size, o.validation_file, "--per_device_eval_batch_size");
  }

  if (!o.compile_cache_dir.empty()) setenv("LAZYTRAIN_CACHE_DIR", o.compile_cache_dir.c_str(), 1);
  if (!o.dump_hlo.empty()) setenv("LAZYTRAIN_DUMP_HLO", o.dump_hlo.c_str(), 1);
  if (!o.backend.empty()) {
    lazy::GraphExecutor::get().set_compiler(o.backend == "cpu" ? backend::make_cpu_compiler() : backend::make_interpreter_compiler());
  }

  manual_seed(t.seed);
  MaskedLM model = make_model(config);
  if (!o.model_name_or_path.empty()) {
    train::load_safetensors_into(*model.module, o.model_name_or_path + "/model.safetensors");
  } else if (!t.do_train) {
    std::fprintf(stderr, "warning: evaluating a randomly initialised model; pass --model_name_or_path to evaluate a trained one\n");
  }
  auto loss_fn = [&](const data::DeviceBatch& b) { return model.forward(b.input_ids, b.attention_mask, b.labels).loss; };
  data::DataCollatorOptions collator_options;
  collator_options.mlm_probability = o.mlm_probability;
  collator_options.seed = t.seed;
  const data::CollatorTokens collator_tokens = tokenizer->collator_tokens();
  train::Trainer trainer(*model.module, t, loss_fn, std::move(train_set), std::move(eval_set),
                         [&] { return data::DataCollatorForLanguageModeling(collator_tokens, collator_options); });
  if (train_records.first > 0) trainer.stream_train_dataset(tfrecord_stream(o.train_tfrecords, true, t.seed), train_records.first);
  if (eval_records.first > 0) trainer.stream_eval_dataset(tfrecord_stream(o.validation_tfrecords, false, t.seed), eval_records.first);

  std::map<std::string, double> train_metrics, eval_metrics;
  if (t.do_train) train_metrics = trainer.train();
  if (t.do_eval) eval_metrics = trainer.evaluate();

  // As Hugging Face's run_mlm.py: the model, the tokenizer and trainer_state.json
  // only when training; the metrics merged into all_results.json, so an
  // evaluation of a trained model in its own directory keeps the train_* entries.
  fs::create_directories(t.output_dir);
  if (t.do_train) {
    train::save_pretrained(*model.module, config.to_json(), t.output_dir);
    tokenizer->save_pretrained(t.output_dir);
    train::log_metrics("train", train_metrics);
    train::save_metrics(t.output_dir, "train", train_metrics);
  }
  if (t.do_eval) {
    train::log_metrics("eval", eval_metrics);
    train::save_metrics(t.output_dir, "eval", eval_metrics);
  }
  // With the evaluation's entry in log_history when both ran; an evaluation
  // alone leaves the trained model's trainer_state.json as it is.
  if (t.do_train) trainer.save_state();
  std::string report = runtime::metrics_report();
  write_file_atomically(t.output_dir + "/metrics_report.txt", report);
  if (t.metrics_debug) std::printf("%s", report.c_str());
  return 0;
}

}  // namespace lazytrain::apps
