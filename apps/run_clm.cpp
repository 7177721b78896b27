// `lazytrain run_clm`: Hugging Face's run_clm.py for GPT-2 and Llama on the lazy
// pipeline: text files read as its text loader reads them (keep_linebreaks),
// or blocks streamed from TFRecord shards (--train_tfrecords),
// every line tokenized, the stream grouped into blocks of --block_size (the
// remainder dropped), labels = input_ids (the model shifts them), the Trainer's
// outputs, eval_loss, perplexity and next-token eval_accuracy.
#include <filesystem>
#include <map>
#include <memory>

#include "apps/commands.h"
#include "apps/script_utils.h"
#include "apps/tfrecord_split.h"
#include "apps/training_flags.h"
#include "backend/registry.h"
#include "core/error.h"
#include "data/auto_tokenizer.h"
#include "data/data_collator.h"
#include "data/text_dataset.h"
#include "distributed/xla_model.h"
#include "lazy/lazy_api.h"
#include "models/auto_model.h"
#include "runtime/collectives.h"
#include "runtime/profiler.h"
#include "train/arguments_agreement.h"
#include "train/trainer.h"

namespace lazytrain::apps {

namespace fs = std::filesystem;

void add_run_clm_command(CLI::App& app, RunClmOptions& o) {
  CLI::App* c = app.add_subcommand("run_clm", "Train and/or evaluate a causal language model (GPT-2, Llama) on text files");
  auto& t = o.training;
  c->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->always_capture_default();
  c->add_option("--train_file", o.train_file, "A text file to train on");
  c->add_option("--validation_file", o.validation_file, "A text file to evaluate on");
  c->add_option("--train_tfrecords", o.train_tfrecords, "TFRecord shards to train on, a glob (lazytrain make_tfrecords --tokenizer GPT2_DIR), streamed");
  c->add_option("--validation_tfrecords", o.validation_tfrecords, "TFRecord shards to evaluate on, a glob");
  c->add_option("--model_type", o.model_type, "Model type to train from scratch (a config file's own model_type wins)")
      ->check(CLI::IsMember({"gpt2", "llama"}));
  c->add_option("--model_name_or_path", o.model_name_or_path, "A Hugging Face GPT-2 or Llama directory (config.json, model.safetensors) to start from");
  c->add_option("--config_name", o.config_name, "A config.json (or a directory holding one); default: the defaults of --model_type's config (GPT-2 124M's, Llama-7B's)");
  c->add_option("--config_overrides", o.config_overrides, "Overrides of config fields: \"n_embd=128,n_layer=2,n_head=2\" (Llama: \"hidden_size=128,num_key_value_heads=2\")");
  c->add_option("--attn_implementation", o.attn_implementation,
                "GPT-2's attention: sdpa (one fused scaled_dot_product_attention; the default) or eager (matmul, softmax, matmul), "
                "as from_pretrained(..., attn_implementation=...); not written to config.json. Llama's is sdpa only")
      ->check(CLI::IsMember({"eager", "sdpa"}));
  c->add_option("--tokenizer_name", o.tokenizer_name, "A tokenizer: GPT-2's (a directory of vocab.json and merges.txt); for Llama also a SentencePiece model (spm.model or a .model file)");
  c->add_option("--block_size", o.block_size, "Tokens per training example (default: min(1024, the model's positions))");
  c->add_flag("--no_keep_linebreaks", o.no_keep_linebreaks, "Drop the line breaks of the text files (run_clm.py keeps them)");
  c->add_option("--max_train_samples", o.max_train_samples, "Truncate the training set to this many blocks");
  c->add_option("--max_eval_samples", o.max_eval_samples, "Truncate the evaluation set to this many blocks");
  add_training_arguments(*c, t);
  c->add_option("--backend", o.backend, "Compiler backend: cpu (generated kernels) or interpreter (reference)")
      ->check(CLI::IsMember(backend::backend_names()));
  c->add_option("--compile_cache_dir", o.compile_cache_dir, "Persistent compile cache directory (default: $LAZYTRAIN_CACHE_DIR)");
  c->add_option("--dump_hlo", o.dump_hlo, "Write each graph's HLO before and after the passes and its generated kernels here");
  c->add_option("--profile_dir", o.profile_dir,
                "Write a timeline of the run here: a Chrome trace (lazytrain-<host>-<pid>.trace.json) for ui.perfetto.dev or "
                "chrome://tracing (default: $LAZYTRAIN_PROFILE)");
}

namespace {

// The config of --config_name / --model_name_or_path (its model_type), or --model_type's defaults with --config_overrides.
models::CausalLMConfig load_config(const RunClmOptions& o) {
  const std::string source = o.config_name.empty() ? o.model_name_or_path : o.config_name;
  if (!source.empty()) return models::AutoModelForCausalLM::config_from_file(fs::is_directory(source) ? source + "/config.json" : source, o.model_type);
  return models::AutoModelForCausalLM::config_from_json(nlohmann::json::object(), o.model_type, o.config_overrides,
                                                        o.config_overrides.empty() ? "--model_type " + o.model_type + "'s defaults"
                                                                                   : "the config after --config_overrides");
}

// run_clm.py's tokenize_function and group_texts: blocks of block_size, labels = input_ids.
std::vector<data::Example> load_blocks(const std::string& path, const data::Tokenizer& tokenizer, const RunClmOptions& o, int64_t block_size,
                                       const std::optional<int64_t>& max_samples, const std::string& flag) {
  const std::vector<std::string> lines =
      o.no_keep_linebreaks ? data::read_text_lines(path, data::BlankLines::kKeep) : data::read_text_lines_keeping_breaks(path);
  std::vector<std::vector<int64_t>> ids;
  ids.reserve(lines.size());
  for (const std::string& line : lines) ids.push_back(tokenizer.encode(line, /*add_special_tokens=*/true));
  std::vector<data::Example> blocks;
  for (std::vector<int64_t>& block : data::group_texts(ids, block_size)) {
    data::Example e;
    e.attention_mask.assign(block.size(), 1);
    e.input_ids = std::move(block);
    blocks.push_back(std::move(e));
  }
  if (max_samples && static_cast<int64_t>(blocks.size()) > *max_samples) blocks.resize(static_cast<size_t>(*max_samples));
  if (blocks.empty()) {
    throw Error("[run_clm] " + flag + " '" + path + "' gives no block of " + std::to_string(block_size) +
                " tokens (the text is shorter; lower --block_size)");
  }
  return blocks;
}

}  // namespace

int run_clm(const RunClmOptions& options) {
  RunClmOptions o = options;
  o.training.resolve();
  const train::TrainingArguments& t = o.training;
  t.validate();
  if (!t.do_train && !t.do_eval) throw Error("[run_clm] nothing to do: pass --do_train and/or --do_eval");
  train::check_arguments_agree("run_clm", t.to_json());  // under mpirun: every process the same, before any other collective
  const runtime::ScopedTrace profile(o.profile_dir, "--profile_dir");  // written when run_clm returns or throws
  if (!o.train_tfrecords.empty() && !o.train_file.empty()) throw Error("[run_clm] give --train_file or --train_tfrecords, not both");
  if (!o.validation_tfrecords.empty() && !o.validation_file.empty()) {
    throw Error("[run_clm] give --validation_file or --validation_tfrecords, not both");
  }
  if (t.do_train && o.train_tfrecords.empty()) require_file("run_clm", o.train_file, "--train_file");
  if (t.do_eval && o.validation_tfrecords.empty()) require_file("run_clm", o.validation_file, "--validation_file");
  if (!o.config_overrides.empty() && (!o.config_name.empty() || !o.model_name_or_path.empty())) {
    throw Error("[run_clm] --config_overrides can't be used in combination with --config_name or --model_name_or_path");
  }
  for (const auto& [flag, value] : {std::pair{"--max_train_samples", o.max_train_samples}, std::pair{"--max_eval_samples", o.max_eval_samples}}) {
    if (value && *value < 1) throw Error(std::string("[run_clm] ") + flag + " must be at least 1, got " + std::to_string(*value));
  }
  if (!o.model_name_or_path.empty() && !fs::is_regular_file(o.model_name_or_path + "/model.safetensors")) {
    throw Error("[run_clm] --model_name_or_path '" + o.model_name_or_path + "' holds no model.safetensors");
  }
  const std::string resume_from = check_output_dir("run_clm", t);
  models::CausalLMConfig config = load_config(o);
  if (!o.attn_implementation.empty()) {
    if (config.json.at("model_type") == "llama" && o.attn_implementation != "sdpa") {
      throw Error("[run_clm] --attn_implementation " + o.attn_implementation + ": Llama's attention is sdpa only");
    }
    // The model reads it as a config.json key; to_json (what is saved) leaves it out.
    if (config.json.at("model_type") == "gpt2") config.json["attn_implementation"] = o.attn_implementation;
  }
  const int64_t positions = config.limits.max_positions;
  const std::string positions_field = config.limits.max_positions_field;
  const bool gpt2 = config.json.at("model_type") == "gpt2";
  const std::string tokenizer_path = o.tokenizer_name.empty() ? o.model_name_or_path : o.tokenizer_name;
  if (tokenizer_path.empty()) {
    throw Error(std::string("[run_clm] --tokenizer_name is required (") +
                (gpt2 ? "a GPT-2 tokenizer directory: vocab.json, merges.txt)" : "GPT-2's vocab.json and merges.txt, or a SentencePiece model)"));
  }
  // GPT-2 takes its byte-level BPE; Llama any tokenizer the files hold (AutoTokenizer::from_files).
  const std::unique_ptr<data::Tokenizer> tokenizer =
      gpt2 ? data::AutoTokenizer::from_pretrained(tokenizer_path, "gpt2") : data::AutoTokenizer::from_files(tokenizer_path);
  if (tokenizer->vocab_size() > config.limits.vocab_size) {
    throw Error("[run_clm] the tokenizer has " + std::to_string(tokenizer->vocab_size()) + " tokens but the config's vocab_size is " +
                std::to_string(config.limits.vocab_size));
  }
  std::vector<data::Example> train_set, eval_set;
  std::optional<StreamedSplit> train_stream, eval_stream;
  // A split from shards: their blocks fix the length, which --block_size (when given) must equal.
  auto stream_split = [&](bool training) {
    const std::string flag = training ? "--train_tfrecords" : "--validation_tfrecords";
    const std::string& glob = training ? o.train_tfrecords : o.validation_tfrecords;
    StreamedSplit split = stream_tfrecords("run_clm", flag, glob, training, t, training ? o.max_train_samples : o.max_eval_samples);
    const std::string where = flag + " '" + glob + "' holds blocks of " + std::to_string(split.length) + " tokens";
    if (o.block_size && *o.block_size != split.length) {
      throw Error("[run_clm] " + where + ", not --block_size " + std::to_string(*o.block_size) + " (shards fix the length; leave --block_size out)");
    }
    if (split.length < 2 || split.length > positions) {
      throw Error("[run_clm] " + where + "; they must be in [2, " + positions_field + " = " + std::to_string(positions) + "]");
    }
    // Fewer blocks than a batch make one padded batch, as Hugging Face runs them.
    if (split.size < 1) throw Error("[run_clm] " + flag + " '" + glob + "' holds no block");
    return split;
  };
  if (t.do_train && !o.train_tfrecords.empty()) train_stream = stream_split(true);
  if (t.do_eval && !o.validation_tfrecords.empty()) eval_stream = stream_split(false);
  // Text files are grouped into --block_size blocks, else the shards' length, else min(1024, the positions).
  const int64_t block_size = o.block_size.value_or(train_stream   ? train_stream->length
                                                   : eval_stream ? eval_stream->length
                                                                 : std::min<int64_t>(1024, positions));
  if (block_size < 2 || block_size > positions) {
    throw Error("[run_clm] --block_size " + std::to_string(block_size) + " must be in [2, " + positions_field + " = " + std::to_string(positions) + "]");
  }
  if (t.do_train && !train_stream) train_set = load_blocks(o.train_file, *tokenizer, o, block_size, o.max_train_samples, "--train_file");
  if (t.do_eval && !eval_stream) eval_set = load_blocks(o.validation_file, *tokenizer, o, block_size, o.max_eval_samples, "--validation_file");
  fit_batch_sizes_to_data("run_clm", o.training, train_stream ? train_stream->size : static_cast<int64_t>(train_set.size()),
                          eval_stream ? eval_stream->size : static_cast<int64_t>(eval_set.size()));
  configure_backend(o.backend, o.compile_cache_dir, o.dump_hlo);
  configure_execution(t.execution_mode, t.detect_anomaly, t.debug_recompiles, t.debug_graphs);

  auto replica = [&](int) {
    manual_seed(t.seed);
    std::shared_ptr<models::CausalLMModel> model = models::AutoModelForCausalLM::from_config(config.json);
    load_pretrained_weights(*model, o.model_name_or_path, t.do_train);
    if (t.gradient_checkpointing) model->gradient_checkpointing_enable();
    auto loss_fn = [&](const distributed::DeviceBatch& b) {
      models::CausalLMOutput out = model->forward(b["input_ids"], b["attention_mask"], b["labels"]);
      // Next-token accuracy: the prediction at i against the token at i + 1 (run_clm.py's
      // compute_metrics); the labels are shifted instead of the logits, whose copy is large.
      return train::ModelOutput(out.loss, out.logits, models::shift_labels_left(b["labels"]));
    };
    data::DataCollatorOptions collator_options;
    collator_options.mlm = false;  // labels = input_ids, <|endoftext|> included (run_clm.py's default_data_collator)
    collator_options.pad_labels_by_id = false;
    collator_options.seed = t.seed;
    const data::CollatorTokens collator_tokens = tokenizer->collator_tokens();
    train::Trainer trainer(*model, t, loss_fn, train_set, eval_set,
                           [&] { return data::DataCollatorForLanguageModeling(collator_tokens, collator_options); });
    if (!o.model_name_or_path.empty()) trainer.keep_checkpoint(o.model_name_or_path);
    if (train_stream) trainer.stream_train_dataset(train_stream->stream, train_stream->size);
    if (eval_stream) trainer.stream_eval_dataset(eval_stream->stream, eval_stream->size);
    train_evaluate_and_save(trainer, *model, config.json, *tokenizer, resume_from, "run_clm");
  };
  run_replicas(t, replica);
  return 0;
}

}  // namespace lazytrain::apps
