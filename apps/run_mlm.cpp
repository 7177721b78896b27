// `lazytrain run_mlm`: Hugging Face's run_mlm.py for BERT and RoBERTa on the lazy
// pipeline, from text files or from TFRecord shards (the TF/TPU recipe).
#include <filesystem>
#include <map>
#include <memory>

#include "apps/commands.h"
#include "apps/mlm_datasets.h"
#include "apps/script_utils.h"
#include "apps/training_flags.h"
#include "backend/registry.h"
#include "core/error.h"
#include "data/auto_tokenizer.h"
#include "data/data_collator.h"
#include "distributed/xla_model.h"
#include "lazy/lazy_api.h"
#include "models/auto_model.h"
#include "models/roberta.h"
#include "runtime/collectives.h"
#include "runtime/profiler.h"
#include "train/arguments_agreement.h"
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
                "A Hugging Face BERT or RoBERTa directory (config.json, model.safetensors; a run_mlm output or checkpoint) to start from");
  c->add_option("--config_name", o.config_name, "A config.json (or a directory holding one); default: BERT's defaults");
  c->add_option("--config_overrides", o.config_overrides, "Overrides of config fields: \"hidden_size=128,num_hidden_layers=2\"");
  c->add_option("--attn_implementation", o.attn_implementation,
                "Attention: eager (matmul, softmax, matmul; the default) or sdpa (one fused scaled_dot_product_attention), "
                "as from_pretrained(..., attn_implementation=...); not written to config.json")
      ->check(CLI::IsMember({"eager", "sdpa"}));
  c->add_option("--tokenizer_name", o.tokenizer_name,
                "bert: a vocab.txt or a directory holding one; roberta: a SentencePiece model directory (default: --model_name_or_path)");
  c->add_option("--max_seq_length", o.max_seq_length, "Sequence length after tokenization (default: min(512, max_position_embeddings))");
  c->add_flag("--pad_to_max_length", o.pad_to_max_length, "Pad every line to max_seq_length (with --line_by_line)");
  c->add_flag("--line_by_line", o.line_by_line, "One example per line instead of grouping text into blocks");
  c->add_option("--pad_to_multiple_of", o.pad_to_multiple_of,
                "With --line_by_line and no --pad_to_max_length: pad each batch to its longest line rounded up to a multiple of "
                "this, which must divide --max_seq_length (bounded dynamic shapes: at most max_seq_length / N graphs)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  c->add_option("--mlm_probability", o.mlm_probability, "Ratio of tokens to mask, above 0 and at most 1")->check(CLI::Range(0.0, 1.0));
  c->add_option("--max_train_samples", o.max_train_samples, "Truncate the training set to this many examples (for debugging or quicker runs)");
  c->add_option("--max_eval_samples", o.max_eval_samples, "Truncate the evaluation set to this many examples");
  add_training_arguments(*c, t);
  c->add_option("--backend", o.backend, "Compiler backend: cpu (generated kernels) or interpreter (reference)")
      ->check(CLI::IsMember(backend::backend_names()));
  c->add_option("--compile_cache_dir", o.compile_cache_dir,
                "Persistent compile cache directory (default: $LAZYTRAIN_CACHE_DIR); a second run compiles nothing");
  c->add_option("--dump_hlo", o.dump_hlo, "Write each graph's HLO before and after the passes and its generated kernels here");
  c->add_option("--profile_dir", o.profile_dir,
                "Write a timeline of the run here: a Chrome trace (lazytrain-<host>-<pid>.trace.json) for ui.perfetto.dev or "
                "chrome://tracing (default: $LAZYTRAIN_PROFILE)");
}

namespace {

models::BertConfig load_config(const RunMlmOptions& o) {
  models::BertConfig config = o.model_type == "roberta" ? models::roberta_config() : models::BertConfig();
  std::string source = o.config_name.empty() ? o.model_name_or_path : o.config_name;
  if (!source.empty()) {
    std::string path = fs::is_directory(source) ? source + "/config.json" : source;
    config = models::BertConfig::from_json_file(path);
  }
  if (!o.config_overrides.empty()) config.update_from_string(o.config_overrides);
  if (!o.attn_implementation.empty()) config.attn_implementation = o.attn_implementation;
  config.validate(o.config_overrides.empty() ? "'" + source + "'" : "the config after --config_overrides");
  if (config.model_type != "bert" && config.model_type != "roberta") {
    throw Error("[run_mlm] model_type '" + config.model_type + "' is not supported; expected 'bert' or 'roberta'");
  }
  return config;
}

// The flags that must agree with each other, checked before anything is read.
void check_flags(const RunMlmOptions& o) {
  const train::TrainingArguments& t = o.training;
  t.validate();
  if (!t.do_train && !t.do_eval) throw Error("[run_mlm] nothing to do: pass --do_train and/or --do_eval");
  if (t.do_train && o.train_tfrecords.empty()) require_file("run_mlm", o.train_file, "--train_file");
  if (t.do_eval && o.validation_tfrecords.empty()) require_file("run_mlm", o.validation_file, "--validation_file");
  if (!o.train_tfrecords.empty() && !o.train_file.empty()) throw Error("[run_mlm] give --train_file or --train_tfrecords, not both");
  if (!o.validation_tfrecords.empty() && !o.validation_file.empty()) {
    throw Error("[run_mlm] give --validation_file or --validation_tfrecords, not both");
  }
  if (o.pad_to_multiple_of > 0 && (!o.line_by_line || o.pad_to_max_length || !o.train_tfrecords.empty() || !o.validation_tfrecords.empty())) {
    throw Error("[run_mlm] --pad_to_multiple_of pads lines of different lengths: it needs --line_by_line on text files, without --pad_to_max_length");
  }
  if (!(o.mlm_probability > 0.0)) throw Error("[run_mlm] --mlm_probability must be in (0, 1]; with 0 no token is masked and the loss is undefined");
  if (!o.model_name_or_path.empty() && !fs::is_regular_file(o.model_name_or_path + "/model.safetensors")) {
    throw Error("[run_mlm] --model_name_or_path '" + o.model_name_or_path + "' holds no model.safetensors");
  }
}

std::unique_ptr<data::Tokenizer> load_tokenizer(const RunMlmOptions& o, const models::BertConfig& config) {
  const std::string name = o.tokenizer_name.empty() ? o.model_name_or_path : o.tokenizer_name;
  if (name.empty()) throw Error("[run_mlm] --tokenizer_name is required (bert: a vocab.txt; roberta: a SentencePiece model directory)");
  std::unique_ptr<data::Tokenizer> tokenizer = data::AutoTokenizer::from_pretrained(name, config.model_type);
  if (tokenizer->vocab_size() > config.vocab_size) {
    throw Error("[run_mlm] the tokenizer has " + std::to_string(tokenizer->vocab_size()) + " tokens but the config's vocab_size is " +
                std::to_string(config.vocab_size));
  }
  return tokenizer;
}

}  // namespace

int run_mlm(const RunMlmOptions& options) {
  RunMlmOptions o = options;
  o.training.resolve();  // HF's __post_init__: --evaluation_strategy implies --do_eval, ...
  const train::TrainingArguments& t = o.training;
  // Everything is validated before --output_dir is touched.
  check_flags(o);
  train::check_arguments_agree("run_mlm", t.to_json());  // under mpirun: every process the same
  const runtime::ScopedTrace profile(o.profile_dir, "--profile_dir");  // written when run_mlm returns or throws
  const std::string resume_from = check_output_dir("run_mlm", t);
  const models::BertConfig config = load_config(o);
  const std::unique_ptr<data::Tokenizer> tokenizer = load_tokenizer(o, config);
  MlmDatasets datasets = load_mlm_datasets(o, *tokenizer, config);
  fit_batch_sizes_to_data("run_mlm", o.training,
                          datasets.train_stream ? datasets.train_stream_size : static_cast<int64_t>(datasets.train.size()),
                          datasets.eval_stream ? datasets.eval_stream_size : static_cast<int64_t>(datasets.eval.size()));
  configure_backend(o.backend, o.compile_cache_dir, o.dump_hlo);
  configure_execution(t.execution_mode, t.detect_anomaly, t.debug_recompiles, t.debug_graphs);

  // One replica: the model, its Trainer, training and evaluation (the whole of
  // xla_spawn.py's _mp_fn); --num_cores N runs N of them on their own devices.
  auto replica = [&](int) {
    manual_seed(t.seed);
    const std::shared_ptr<models::MaskedLMModel> model = models::AutoModelForMaskedLM::from_config(config);
    load_pretrained_weights(*model, o.model_name_or_path, t.do_train);
    if (t.gradient_checkpointing) model->gradient_checkpointing_enable();
    auto loss_fn = [&](const distributed::DeviceBatch& b) {
      // The LM head runs on the labelled tokens only (the same loss and accuracy as
      // on all of them): logits [K, vocab] with their labels.
      models::MaskedLMOutput out = model->forward_labelled(b["input_ids"], b["attention_mask"], b["masked_lm_positions"], b["masked_lm_labels"]);
      return train::ModelOutput(out.loss, out.logits, b["masked_lm_labels"]);
    };
    data::DataCollatorOptions collator_options;
    collator_options.mlm_probability = o.mlm_probability;
    collator_options.seed = t.seed;
    // Only unpadded lines (--line_by_line without --pad_to_max_length) vary in length.
    collator_options.pad_to_multiple_of = o.pad_to_multiple_of;
    const data::CollatorTokens collator_tokens = tokenizer->collator_tokens();
    train::Trainer trainer(*model, t, loss_fn, datasets.train, datasets.eval,
                           [&] { return data::DataCollatorForLanguageModeling(collator_tokens, collator_options); });
    if (!o.model_name_or_path.empty()) trainer.keep_checkpoint(o.model_name_or_path);
    if (datasets.train_stream) trainer.stream_train_dataset(datasets.train_stream, datasets.train_stream_size);
    if (datasets.eval_stream) trainer.stream_eval_dataset(datasets.eval_stream, datasets.eval_stream_size);
    train_evaluate_and_save(trainer, *model, config.to_json(), *tokenizer, resume_from, "run_mlm");
  };
  run_replicas(t, replica);
  return 0;
}

}  // namespace lazytrain::apps
