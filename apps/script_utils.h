// The CLI's share of the scripts' boilerplate: input files checked by flag.
// The rest (output directory, batch sizes, starting weights, replicas, run
// outputs, backend and execution settings) is the library's
// (train/script_utils.h, lazy/configure.h), shared with the Python package.
#pragma once

#include <string>

#include "lazy/configure.h"
#include "train/script_utils.h"

namespace lazytrain::apps {

// `path` given with `flag` must be an existing regular file; Error
// "[command] --flag ..." saying what it is otherwise.
void require_file(const std::string& command, const std::string& path, const std::string& flag);

using lazy::configure_backend;
using lazy::configure_execution;
using train::check_output_dir;
using train::fit_batch_sizes_to_data;
using train::load_pretrained_weights;
using train::run_replicas;
using train::save_run_outputs;
using train::train_evaluate_and_save;

}  // namespace lazytrain::apps
