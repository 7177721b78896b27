// TrainerState: what Hugging Face's Trainer keeps in trainer_state.json (the
// output directory's and each checkpoint's): progress, the log history and the
// best checkpoint so far.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace lazytrain::train {

struct TrainerState {
  double epoch = 0.0;
  int64_t global_step = 0;
  int64_t max_steps = 0;
  int64_t logging_steps = 500, eval_steps = 500, save_steps = 500;
  double num_train_epochs = 0.0;
  int64_t train_batch_size = 0;
  std::optional<double> best_metric;
  std::string best_model_checkpoint;  // empty: none yet
  nlohmann::json log_history = nlohmann::json::array();
  // Not saved (transformers keeps is_world_process_zero out of the file too):
  // whether this is the master ordinal, and the loss of the step that just
  // ended (its labelled tokens' mean), for callbacks' on_step_end.
  bool is_world_process_zero = true;
  double step_loss = 0.0;

  // transformers.TrainerState.save_to_json's fields (nulls for unset ones).
  nlohmann::json to_json() const;
  // TrainerState.load_from_json. Throws Error naming `source` when a field is
  // missing or of the wrong type.
  static TrainerState from_json(const nlohmann::json& json, const std::string& source);
};

}  // namespace lazytrain::train
