// TrainerCallback: Hugging Face's transformers.TrainerCallback, the hooks a
// Trainer calls at the points of its loop (on_train_begin, on_epoch_begin,
// on_step_end, on_log, on_evaluate, on_save, on_epoch_end, on_train_end), with
// the TrainingArguments, the TrainerState and a TrainerControl. What the
// Trainer reports (the progress bar, the log lines, TensorBoard) are callbacks
// too: ProgressCallback and TensorBoardCallback below, added by the Trainer
// itself as Hugging Face's default callbacks are.
//
// Callbacks run on every replica, in the order they were added; the built-in
// ones act on the master ordinal only (state.is_world_process_zero).
#pragma once

#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "train/progress_bar.h"
#include "train/trainer_state.h"
#include "train/training_arguments.h"

namespace lazytrain::train {

class SummaryWriter;

// transformers.TrainerControl: a callback sets should_training_stop to end
// training after the current step (the Trainer still logs, and saves at the
// end as its save strategy says). The other flags are kept for Hugging Face's
// names and read by nothing yet.
struct TrainerControl {
  bool should_training_stop = false;
  bool should_epoch_stop = false;
  bool should_save = false;
  bool should_evaluate = false;
  bool should_log = false;
};

class TrainerCallback {
 public:
  virtual ~TrainerCallback() = default;
  virtual void on_train_begin(const TrainingArguments&, const TrainerState&, TrainerControl&) {}
  virtual void on_train_end(const TrainingArguments&, const TrainerState&, TrainerControl&) {}
  virtual void on_epoch_begin(const TrainingArguments&, const TrainerState&, TrainerControl&) {}
  virtual void on_epoch_end(const TrainingArguments&, const TrainerState&, TrainerControl&) {}
  // After optimizer step state.global_step has run and its loss was read
  // (state.step_loss; the loop traces the next step before reading a loss).
  virtual void on_step_end(const TrainingArguments&, const TrainerState&, TrainerControl&) {}
  // `logs`: the entry just appended to state.log_history (loss, learning_rate,
  // grad_norm, ..., or eval_* metrics, with epoch and step).
  virtual void on_log(const TrainingArguments&, const TrainerState&, TrainerControl&, const nlohmann::json& /*logs*/) {}
  virtual void on_evaluate(const TrainingArguments&, const TrainerState&, TrainerControl&,
                           const std::map<std::string, double>& /*metrics*/) {}
  // After checkpoint-<state.global_step> was written.
  virtual void on_save(const TrainingArguments&, const TrainerState&, TrainerControl&) {}
};

// Hugging Face's ProgressCallback and PrinterCallback in one: the progress bar
// (train/progress_bar.h; none with --disable_tqdm) and every log entry of a
// training run printed as a JSON line on stderr.
class ProgressCallback : public TrainerCallback {
 public:
  void on_train_begin(const TrainingArguments& args, const TrainerState& state, TrainerControl& control) override;
  void on_step_end(const TrainingArguments& args, const TrainerState& state, TrainerControl& control) override;
  void on_log(const TrainingArguments& args, const TrainerState& state, TrainerControl& control, const nlohmann::json& logs) override;
  void on_train_end(const TrainingArguments& args, const TrainerState& state, TrainerControl& control) override;

 private:
  std::unique_ptr<ProgressBar> bar_;
};

// Hugging Face's TensorBoardCallback: each log entry's numbers as scalars in
// event files under args.logging_dir (tags eval_x -> eval/x, the rest train/x;
// eval/perplexity beside eval/loss), the file made at the first entry so that
// a run failing before its first step leaves none behind.
class TensorBoardCallback : public TrainerCallback {
 public:
  TensorBoardCallback();
  ~TensorBoardCallback() override;
  void on_log(const TrainingArguments& args, const TrainerState& state, TrainerControl& control, const nlohmann::json& logs) override;
  void on_train_end(const TrainingArguments& args, const TrainerState& state, TrainerControl& control) override;

 private:
  std::unique_ptr<SummaryWriter> writer_;
};

}  // namespace lazytrain::train
