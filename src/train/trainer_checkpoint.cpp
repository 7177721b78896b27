// Trainer checkpoints: what checkpoint-<step>/ holds and how a run resumes from
// it (Hugging Face's _save_checkpoint, _load_from_checkpoint, _load_rng_state
// and the batch skipping of _inner_training_loop).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "core/crc32c.h"
#include "core/error.h"
#include "lazy/lazy_api.h"
#include "tensor/ops.h"
#include "train/checkpoint.h"
#include "train/json_file.h"
#include "train/model_io.h"
#include "runtime/collectives.h"
#include "train/trainer.h"
#include "train/trainer_optimization.h"

namespace lazytrain::train {

namespace fs = std::filesystem;

namespace {

nlohmann::json rng_state_json() {
  const RngState s = get_rng_state();
  return {{"seed", s.seed}, {"offset", s.offset}, {"host", s.host}};
}

// The keys of `a` and `b` whose values differ, as "key: a vs b".
std::string config_differences(const nlohmann::json& a, const nlohmann::json& b) {
  std::string out;
  for (const auto& [key, value] : a.items()) {
    const nlohmann::json other = b.contains(key) ? b[key] : nlohmann::json(nullptr);
    if (value != other) out += (out.empty() ? "" : ", ") + key + " " + other.dump() + " (this run: " + value.dump() + ")";
  }
  for (const auto& [key, value] : b.items()) {
    if (!a.contains(key)) out += (out.empty() ? "" : ", ") + key + " " + value.dump() + " (this run: absent)";
  }
  return out;
}

}  // namespace

void Trainer::update_best(const std::map<std::string, double>& metrics) {
  if (args_.metric_for_best_model.empty()) return;
  const std::string key = args_.best_metric_key();
  const auto it = metrics.find(key);
  if (it == metrics.end()) {
    std::string known;
    for (const auto& [k, v] : metrics) known += (known.empty() ? "" : ", ") + k;
    throw Error("[Trainer] --metric_for_best_model '" + args_.metric_for_best_model + "': the evaluation has no '" + key + "'; it has " + known);
  }
  const bool better = !state_.best_metric || (*args_.greater_is_better ? it->second > *state_.best_metric : it->second < *state_.best_metric);
  if (better) {
    state_.best_metric = it->second;
    state_.best_model_checkpoint = args_.output_dir + "/" + kCheckpointPrefix + std::to_string(state_.global_step);
  }
}

nlohmann::json Trainer::data_state() const {
  // What fixes the data order: the rows one feed reads and how many feeds share
  // an epoch. Under --fsdp or --tp_size one feed reads the global batch (per device x
  // devices) for all devices, so a checkpoint resumes on another mesh of the
  // same global batch, or on one replica of that batch.
  nlohmann::json state = {{"train_samples", dataset_size(true)},
          {"per_device_train_batch_size", args_.per_device_train_batch_size * devices_per_batch()},
          {"gradient_accumulation_steps", args_.gradient_accumulation_steps},
          {"dataloader_drop_last", args_.dataloader_drop_last},
          {"seed", args_.seed},
          {"world_size", spmd_ ? 1 : replicas_},
          {"micro_batches_per_epoch", micro_batches_per_epoch()},
          {"epoch", state_.global_step / updates_per_epoch()},
          {"micro_batches_done_in_epoch", (state_.global_step % updates_per_epoch()) * args_.gradient_accumulation_steps}};
  // The training set's content (the in-memory set's token ids), so that a
  // checkpoint is not resumed on other text of the same size (a stream is only
  // counted: hashing it would read it whole).
  if (train_dataset_.fingerprint) state["train_data_crc32c"] = train_dataset_.fingerprint();
  return state;
}

void Trainer::check_parameters_finite(const std::string& when) const {
  for (const auto& [name, p] : model_.named_parameters()) {
    const std::vector<float> values = p.to_vector<float>();
    const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
    if (bad == values.end()) continue;
    const auto count = std::count_if(bad, values.end(), [](float v) { return !std::isfinite(v); });
    throw Error("[Trainer] training step " + std::to_string(state_.global_step) + ": parameter '" + name + "' holds non-finite values (" +
                std::to_string(count) + " of " + std::to_string(values.size()) + ", the first " + std::to_string(*bad) + " at index " +
                std::to_string(bad - values.begin()) + "); " + when +
                (args_.max_grad_norm > 0 ? ". Lower --learning_rate or check the data" : ". Lower --learning_rate, set --max_grad_norm, or check the data"));
  }
}

bool Trainer::saves_at(int64_t step) const {
  if (step > state_.max_steps) return false;
  if (args_.save_strategy == "steps") return step % args_.save_steps == 0 || step == state_.max_steps;
  if (args_.save_strategy == "epoch") return step % updates_per_epoch() == 0 || step == state_.max_steps;
  return false;
}

void Trainer::sort_out_existing_checkpoints(const std::string& resumed_from) {
  foreign_checkpoints_.clear();
  const std::vector<CheckpointDir> existing = list_checkpoints(args_.output_dir);
  const bool resumed_here = std::any_of(existing.begin(), existing.end(), [&](const CheckpointDir& c) { return same_path(c.path, resumed_from); });
  for (const CheckpointDir& c : existing) {
    // A resumed run's own checkpoints are those up to the step it resumed from.
    if (!(resumed_here && c.step <= state_.global_step)) foreign_checkpoints_.push_back(c.path);
    for (const std::string& read : read_checkpoints_) {
      if (same_path(c.path, read) && c.step > state_.global_step && saves_at(c.step)) {
        throw Error("[Trainer] this run would save checkpoint-" + std::to_string(c.step) + " over '" + read +
                    "', which it read its starting weights from; pass another --output_dir, or copy that checkpoint elsewhere first");
      }
    }
  }
}

void Trainer::save_checkpoint(TrainerOptimization& opt) {
  check_parameters_finite("checkpoint-" + std::to_string(state_.global_step) + " was not written");
  // A sharded optimizer's state is gathered by every replica (collectives).
  std::optional<optim::AdamWStateDict> optimizer_state;
  if (opt.sharded) optimizer_state = opt.optimizer->state_dict(model_.named_parameters());
  // The master writes (every replica holds the same parameters and optimizer
  // state); the others wait, so none runs ahead of a checkpoint being written.
  if (!is_master()) {
    runtime::host_rendezvous("Trainer.save_checkpoint");
    callback([](TrainerCallback& c, auto&... a) { c.on_save(a...); });
    return;
  }
  const std::string written = write_checkpoint(args_.output_dir, state_.global_step, [&](const std::string& dir) {
    save_pretrained(model_, model_config_.is_null() ? nlohmann::json::object() : model_config_, dir);
    save_optimization(opt, optimizer_state ? *optimizer_state : opt.optimizer->state_dict(model_.named_parameters()), dir);
    write_json_file(dir + "/rng_state.json", rng_state_json());
    write_json_file(dir + "/data_state.json", data_state());
    write_json_file(dir + "/trainer_state.json", state_.to_json());
    write_json_file(dir + "/training_args.json", args_.to_json());
    if (save_extra_files_) save_extra_files_(dir);
  });
  std::erase_if(foreign_checkpoints_, [&](const std::string& c) { return same_path(c, written); });  // replaced: this run's now
  if (args_.save_total_limit) {
    const std::string keep = args_.load_best_model_at_end ? state_.best_model_checkpoint : "";
    std::vector<std::string> protect = read_checkpoints_;
    protect.insert(protect.end(), foreign_checkpoints_.begin(), foreign_checkpoints_.end());
    rotate_checkpoints(args_.output_dir, *args_.save_total_limit, fs::exists(keep) ? keep : "", protect);
  }
  if (replicas_ > 1) runtime::host_rendezvous("Trainer.save_checkpoint");
  callback([](TrainerCallback& c, auto&... a) { c.on_save(a...); });
}

void Trainer::load_checkpoint(const std::string& dir, TrainerOptimization& opt) {
  read_checkpoints_.push_back(dir);
  const std::string what = "[Trainer] cannot resume from '" + dir + "': ";
  const std::string problem = checkpoint_problem(dir);
  if (!problem.empty()) throw Error(what + "not a complete checkpoint: " + problem);
  // Everything is checked before the model or optimizer changes.
  if (!model_config_.is_null()) {
    const nlohmann::json saved = read_json_file(dir + "/config.json");
    const std::string differences = config_differences(model_config_, saved);
    if (!differences.empty()) throw Error(what + "it was made for another model config: " + differences);
  }
  const nlohmann::json saved_data = read_json_file(dir + "/data_state.json");
  const nlohmann::json current = data_state();
  for (const char* key : {"train_samples", "train_data_crc32c", "per_device_train_batch_size", "gradient_accumulation_steps",
                          "dataloader_drop_last", "seed", "world_size"}) {
    // (Checkpoints from before replicas have no world_size: they were made by one.)
    const nlohmann::json absent = std::string(key) == "world_size" ? nlohmann::json(1) : nlohmann::json();
    const nlohmann::json saved_value = saved_data.value(key, absent), value = current.value(key, nlohmann::json());
    if (saved_value != value) {
      throw Error(what + "it was made with " + key + " " + saved_value.dump() + ", this run has " + value.dump() +
                  "; resuming exactly needs the same training data and order");
    }
  }
  TrainerState saved_state = TrainerState::from_json(read_json_file(dir + "/trainer_state.json"), dir + "/trainer_state.json");
  const nlohmann::json rng = read_json_file(dir + "/rng_state.json");
  RngState rng_state;
  try {
    rng_state = {rng.at("seed").get<uint64_t>(), rng.at("offset").get<uint64_t>(), rng.at("host").get<std::string>()};
  } catch (const nlohmann::json::exception& e) {
    throw Error(what + "rng_state.json: " + e.what());
  }
  load_model_weights(model_, dir);
  load_optimization(opt, model_, dir);
  set_rng_state(rng_state);
  state_.global_step = saved_state.global_step;
  state_.epoch = saved_state.epoch;
  state_.best_metric = saved_state.best_metric;
  state_.best_model_checkpoint = saved_state.best_model_checkpoint;
  state_.log_history = saved_state.log_history;
  if (is_master()) std::fprintf(stderr, "Resuming training from %s at step %lld (epoch %.4f)\n", dir.c_str(), static_cast<long long>(state_.global_step),
               state_.epoch);
}

}  // namespace lazytrain::train
