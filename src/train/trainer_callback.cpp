#include "train/trainer_callback.h"

#include <cmath>

#include "train/json_file.h"
#include "train/tensorboard.h"

namespace lazytrain::train {

void ProgressCallback::on_train_begin(const TrainingArguments& args, const TrainerState& state, TrainerControl&) {
  if (state.is_world_process_zero) bar_ = std::make_unique<ProgressBar>(state.max_steps, args.disable_tqdm);
}

void ProgressCallback::on_step_end(const TrainingArguments&, const TrainerState& state, TrainerControl&) {
  if (bar_) bar_->update(state.global_step, state.step_loss);
}

void ProgressCallback::on_log(const TrainingArguments&, const TrainerState& state, TrainerControl&, const nlohmann::json& logs) {
  // During training only, as Hugging Face's ProgressCallback: an evaluation
  // afterwards goes to eval_results.json and log_metrics.
  if (state.is_world_process_zero && bar_) bar_->message(dump_json(logs));
}

void ProgressCallback::on_train_end(const TrainingArguments&, const TrainerState&, TrainerControl&) {  // after the last log line
  if (bar_) bar_->finish();
  bar_.reset();
}

TensorBoardCallback::TensorBoardCallback() = default;
TensorBoardCallback::~TensorBoardCallback() = default;

void TensorBoardCallback::on_log(const TrainingArguments& args, const TrainerState& state, TrainerControl&, const nlohmann::json& logs) {
  if (!state.is_world_process_zero) return;
  if (!writer_) writer_ = std::make_unique<SummaryWriter>(args.logging_dir);
  const int64_t step = logs.value("step", state.global_step);
  for (const auto& [key, value] : logs.items()) {
    if (key == "epoch" || key == "step" || !value.is_number()) continue;
    const std::string tag = key.starts_with("eval_") ? "eval/" + key.substr(5) : "train/" + key;
    writer_->add_scalar(tag, value.get<double>(), step);
  }
  if (logs.contains("eval_loss")) writer_->add_scalar("eval/perplexity", std::exp(logs["eval_loss"].get<double>()), step);
  writer_->flush();
}

void TensorBoardCallback::on_train_end(const TrainingArguments&, const TrainerState&, TrainerControl&) {
  if (writer_) writer_->flush();
}

}  // namespace lazytrain::train
