#include "train/script_utils.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <vector>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "distributed/spawn.h"
#include "distributed/spmd.h"
#include "distributed/xla_model.h"
#include "lazy/lazy_api.h"
#include "runtime/collectives.h"
#include "runtime/metrics.h"
#include "train/checkpoint.h"
#include "train/model_io.h"
#include "train/results_files.h"

namespace lazytrain::train {


namespace fs = std::filesystem;

namespace {

// Empty, or holding only the staging directories of checkpoint saves that a
// killed run left behind (train/checkpoint.h): a job killed before its first
// checkpoint can be re-run with the same command.
bool is_empty_but_for_staging(const fs::path& dir) {
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (!e.path().filename().string().starts_with("tmp-checkpoint-")) return false;
  }
  return true;
}

}  // namespace

std::string check_output_dir(const std::string& command, const TrainingArguments& t) {
  const fs::path dir(t.output_dir);
  const bool master = distributed::is_master_ordinal(false);  // under mpirun every process checks; one tells
  std::string resume;
  if (fs::exists(dir)) {
    if (!fs::is_directory(dir)) throw Error("[" + command + "] --output_dir '" + t.output_dir + "' exists and is not a directory");
    if (t.do_train && !t.resume_from_checkpoint.empty()) {
      resume = resolve_checkpoint(t.resume_from_checkpoint, t.output_dir);
    } else if (t.do_train && !t.overwrite_output_dir) {
      // run_mlm.py's get_last_checkpoint: a preempted job re-run with the same command resumes.
      const std::optional<std::string> last = get_last_checkpoint(t.output_dir);
      std::string damaged;  // marked checkpoints newer than `last` whose files are not whole
      std::vector<CheckpointDir> checkpoints = list_checkpoints(t.output_dir);
      for (auto it = checkpoints.rbegin(); it != checkpoints.rend() && (!last || it->path != *last); ++it) {
        const CheckpointDir& c = *it;
        const std::string problem = checkpoint_problem(c.path);
        if (master) std::fprintf(stderr, "warning: skipping checkpoint '%s': %s\n", c.path.c_str(), problem.c_str());
        damaged += (damaged.empty() ? "" : "; ") + c.path + ": " + problem;
      }
      if (!last && !damaged.empty()) {
        throw Error("[" + command + "] --output_dir '" + t.output_dir + "' holds checkpoints but none is complete (" + damaged +
                    "); pass --resume_from_checkpoint with a whole one, or --overwrite_output_dir to start over beside them");
      }
      if (last) {
        resume = *last;
        if (master) {
          std::fprintf(stderr, "Checkpoint detected, resuming training at %s. To avoid this behavior, change the `--output_dir` or add "
                               "`--overwrite_output_dir` to train from scratch.\n", last->c_str());
        }
      } else if (!is_empty_but_for_staging(dir)) {
        throw Error("[" + command + "] Output directory (" + t.output_dir +
                    ") already exists and is not empty. Use --overwrite_output_dir to overcome.");
      }
    }
  } else if (t.do_train && !t.resume_from_checkpoint.empty()) {
    resume = resolve_checkpoint(t.resume_from_checkpoint, t.output_dir);
  }
  // Fails before any work when it could not be created or written.
  fs::path p = fs::absolute(dir);
  while (!p.empty() && !fs::exists(p)) p = p.parent_path();
  if (p.empty() || !fs::is_directory(p) || access(p.c_str(), W_OK) != 0) {
    throw Error("[" + command + "] --output_dir '" + t.output_dir + "' cannot be created: '" + p.string() + "' is not a writable directory");
  }
  return resume;
}

void fit_batch_sizes_to_data(const std::string& command, TrainingArguments& t, int64_t train_examples, int64_t eval_examples) {
  auto fit = [&](int64_t& batch, int64_t examples, const char* flag) {
    if (examples <= 0 || examples >= batch) return;
    if (distributed::is_master_ordinal(false)) {
      std::fprintf(stderr, "[%s] %s %lld is more than the %lld examples there are: batches of %lld\n", command.c_str(), flag,
                   static_cast<long long>(batch), static_cast<long long>(examples), static_cast<long long>(examples));
    }
    batch = examples;
  };
  if (t.do_train) fit(t.per_device_train_batch_size, train_examples, "--per_device_train_batch_size");
  if (t.do_eval) fit(t.per_device_eval_batch_size, eval_examples, "--per_device_eval_batch_size");
}

void run_replicas(const TrainingArguments& t, const std::function<void(int)>& replica) {
  if (t.uses_spmd()) {
    // One thread traces for all devices (SPMD): no replica threads.
    runtime::set_collective_timeout(t.collective_timeout);
    distributed::spmd::use_spmd(static_cast<int>(t.num_cores));
    replica(0);
  } else if (t.num_cores > 1) {
    distributed::SpawnOptions spawn_options;
    spawn_options.collective_timeout = t.collective_timeout;
    if (t.num_threads > 0) spawn_options.threads_per_replica = std::max(1, static_cast<int>(t.num_threads / t.num_cores));
    distributed::spawn(replica, static_cast<int>(t.num_cores), spawn_options);
  } else {
    runtime::set_collective_timeout(t.collective_timeout);
    replica(0);
  }
}

void load_pretrained_weights(nn::Module& model, const std::string& model_name_or_path, bool do_train) {
  if (!model_name_or_path.empty()) {
    const std::string path = model_name_or_path + "/model.safetensors";
    const std::string warning = load_safetensors_into(model, path).warning(path);
    if (!warning.empty()) std::fprintf(stderr, "%s\n", warning.c_str());
  } else if (!do_train) {
    std::fprintf(stderr, "warning: evaluating a randomly initialised model; pass --model_name_or_path to evaluate a trained one\n");
  }
}

void save_run_outputs(const TrainingArguments& t, const Trainer& trainer, const nn::Module& model,
                      const nlohmann::json& config, const data::Tokenizer& tokenizer,
                      const std::map<std::string, double>& train_metrics, const std::map<std::string, double>& eval_metrics) {
  fs::create_directories(t.output_dir);
  if (t.do_train) {
    save_pretrained(model, config, t.output_dir);
    tokenizer.save_pretrained(t.output_dir);
    log_metrics("train", train_metrics);
    save_metrics(t.output_dir, "train", train_metrics);
  }
  if (t.do_eval) {
    log_metrics("eval", eval_metrics);
    save_metrics(t.output_dir, "eval", eval_metrics);
  }
  // With the evaluation's entry in log_history when both ran; an evaluation
  // alone leaves the trained model's trainer_state.json as it is.
  if (t.do_train) trainer.save_state();
  const std::string report = runtime::metrics_report();
  write_file_atomically(t.output_dir + "/metrics_report.txt", report);
  if (t.metrics_debug) std::printf("%s", report.c_str());
}

void train_evaluate_and_save(Trainer& trainer, const nn::Module& model, const nlohmann::json& config,
                             const data::Tokenizer& tokenizer, const std::string& resume_from, const std::string& command) {
  const TrainingArguments& t = trainer.args();
  trainer.set_model_config(config);
  trainer.on_save([&](const std::string& dir) { tokenizer.save_pretrained(dir); });
  std::map<std::string, double> train_metrics, eval_metrics;
  if (t.do_train) train_metrics = trainer.train(resume_from);
  if (t.do_eval) eval_metrics = trainer.evaluate();
  lazy::wait_device_ops(runtime::current_device());
  if (distributed::is_master_ordinal(false)) save_run_outputs(t, trainer, model, config, tokenizer, train_metrics, eval_metrics);
  distributed::rendezvous(command + ".saved");
}

}  // namespace lazytrain::train
