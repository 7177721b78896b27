// What training scripts share, as Hugging Face's example scripts share their
// Trainer boilerplate: the output directory checked (and the checkpoint to
// resume from found) before any work, batch sizes fitted to small datasets,
// the starting weights, replicas, and the files a run leaves in output_dir.
// The CLI's run_mlm and run_clm (apps/) and the Python package use them.
// Errors name the `command` ("run_mlm") and the flag.
#pragma once

#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "data/tokenizer.h"
#include "nn/module.h"
#include "train/trainer.h"
#include "train/training_arguments.h"

namespace lazytrain::train {

// --output_dir must be creatable and writable. Returns the checkpoint training
// resumes from (empty: none): --resume_from_checkpoint resolved (train/checkpoint.h),
// else, when training without --overwrite_output_dir, the newest complete
// checkpoint in --output_dir, as run_mlm.py's get_last_checkpoint. A non-empty
// --output_dir without a checkpoint is refused only when training without
// --overwrite_output_dir (evaluating writes its results beside the model it
// evaluates). As Hugging Face's, --overwrite_output_dir deletes nothing: it
// skips the "not empty" check and the automatic resume; the new run's
// checkpoints replace those of the same step. Throws Error naming the flag.
std::string check_output_dir(const std::string& command, const TrainingArguments& args);

// A dataset smaller than one batch trains (and evaluates) as one batch of all
// its examples, as Hugging Face runs it: the batch size is lowered to the
// examples there are (a note on stderr says so) rather than padding a few
// examples to a huge batch. `train_examples` / `eval_examples`: the sizes of
// the splits in use (0: not used).
void fit_batch_sizes_to_data(const std::string& command, TrainingArguments& args, int64_t train_examples, int64_t eval_examples);

// Loads <model_name_or_path>/model.safetensors into `model` (Hugging Face's
// names; see train::load_safetensors_into), printing one warning line for
// unused weights of a checkpoint from another head; with no path and no
// training, warns that a randomly initialised model is evaluated.
void load_pretrained_weights(nn::Module& model, const std::string& model_name_or_path, bool do_train);

// Runs `replica(ordinal)` once per --num_cores: on spawned replica threads
// (distributed::spawn, xla_spawn.py) when there are several, else on this
// thread; --collective_timeout applies to both.
void run_replicas(const TrainingArguments& args, const std::function<void(int)>& replica);

// Hugging Face's outputs after train()/evaluate(): when training, the model
// (config.json + model.safetensors), the tokenizer, train_results.json and
// trainer_state.json; when evaluating, eval_results.json; the metrics merged
// into all_results.json; and metrics_report.txt (printed with --metrics_debug).
void save_run_outputs(const TrainingArguments& args, const Trainer& trainer, const nn::Module& model,
                      const nlohmann::json& config, const data::Tokenizer& tokenizer,
                      const std::map<std::string, double>& train_metrics, const std::map<std::string, double>& eval_metrics);

// The end of a replica of run_mlm / run_clm, as run_*.py's main(): the Trainer
// saves the model config and the tokenizer with each checkpoint, trains from
// `resume_from` (--do_train), evaluates (--do_eval), waits for the device, the
// master ordinal writes save_run_outputs, and every replica meets at
// "<command>.saved".
void train_evaluate_and_save(Trainer& trainer, const nn::Module& model, const nlohmann::json& config,
                             const data::Tokenizer& tokenizer, const std::string& resume_from, const std::string& command);

}  // namespace lazytrain::train
