#include "train/trainer_state.h"

#include "core/error.h"

namespace lazytrain::train {

nlohmann::json TrainerState::to_json() const {
  return {{"best_metric", best_metric ? nlohmann::json(*best_metric) : nlohmann::json(nullptr)},
          {"best_model_checkpoint", best_model_checkpoint.empty() ? nlohmann::json(nullptr) : nlohmann::json(best_model_checkpoint)},
          {"epoch", epoch},
          {"eval_steps", eval_steps},
          {"global_step", global_step},
          {"is_hyper_param_search", false},
          {"is_local_process_zero", true},
          {"is_world_process_zero", true},
          {"log_history", log_history},
          {"logging_steps", logging_steps},
          {"max_steps", max_steps},
          {"num_train_epochs", num_train_epochs},
          {"save_steps", save_steps},
          {"total_flos", 0},
          {"train_batch_size", train_batch_size},
          {"trial_name", nullptr},
          {"trial_params", nullptr}};
}

TrainerState TrainerState::from_json(const nlohmann::json& j, const std::string& source) {
  try {
    TrainerState s;
    s.epoch = j.at("epoch").get<double>();
    s.global_step = j.at("global_step").get<int64_t>();
    s.max_steps = j.at("max_steps").get<int64_t>();
    s.logging_steps = j.at("logging_steps").get<int64_t>();
    s.eval_steps = j.value("eval_steps", s.logging_steps);
    s.save_steps = j.value("save_steps", int64_t{500});
    s.num_train_epochs = j.at("num_train_epochs").get<double>();
    s.train_batch_size = j.value("train_batch_size", int64_t{0});
    if (j.contains("best_metric") && !j["best_metric"].is_null()) s.best_metric = j["best_metric"].get<double>();
    if (j.contains("best_model_checkpoint") && !j["best_model_checkpoint"].is_null()) {
      s.best_model_checkpoint = j["best_model_checkpoint"].get<std::string>();
    }
    s.log_history = j.at("log_history");
    if (!s.log_history.is_array()) throw Error("log_history is not a list");
    if (s.global_step < 0) throw Error("global_step is negative");
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw Error("[TrainerState] '" + source + "': " + e.what() + "; expected Hugging Face's trainer_state.json");
  } catch (const Error& e) {
    throw Error("[TrainerState] '" + source + "': " + e.what());
  }
}

}  // namespace lazytrain::train
