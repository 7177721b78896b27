// Under mpirun every process parses its own command line, so one process
// started with another --learning_rate, --seed or batch size would train a
// replica that silently diverges from the others (or, with another
// --num_cores, deadlock the collectives). The processes compare their resolved
// training arguments once, at start, before any other collective.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace lazytrain::train {

// The TrainingArguments::to_json() keys a process may set for itself: they
// change how fast it runs or what it prints, never what it computes.
bool is_per_process_argument(const std::string& key);

// Compares `arguments` (TrainingArguments::to_json(), resolved) across every
// MPI process through runtime::host_all_gather; one process (no mpirun)
// returns at once. Call it from the main thread before any replica starts.
// Throws Error "[command] under mpirun, process rank R has --key V, rank 0 has
// W; every process must be given the same training arguments" for the first
// key that differs (the values of ranks other than this one are shown as their
// CRC32C when they cannot be gathered). Every process throws, so all stop.
void check_arguments_agree(const std::string& command, const nlohmann::json& arguments);

}  // namespace lazytrain::train
