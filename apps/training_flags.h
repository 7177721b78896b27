// The command-line flags of train::TrainingArguments, with Hugging Face's names,
// shared by the training commands (run_mlm, and run_clm to come).
#pragma once

#include <CLI/CLI.hpp>

#include "train/training_arguments.h"

namespace lazytrain::apps {

// Adds --output_dir, --do_train, ..., --save_steps, --resume_from_checkpoint
// (every TrainingArguments field) to `command`, writing into `args`.
void add_training_arguments(CLI::App& command, train::TrainingArguments& args);

}  // namespace lazytrain::apps
