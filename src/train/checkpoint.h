// Checkpoint directories as Hugging Face's Trainer lays them out:
// <output_dir>/checkpoint-<step>/ holding config.json, model.safetensors,
// optimizer.safetensors, scheduler.json, rng_state.json, data_state.json,
// trainer_state.json and training_args.json.
//
// Crash safety: the files are written into <output_dir>/tmp-checkpoint-<step>
// (each one atomically: temporary name, fsync, rename), then the completion
// marker checkpoint_complete.json, which lists every file with its size and
// CRC32C, and only then is the directory renamed to checkpoint-<step> and the
// parent directory fsynced. A checkpoint counts only when its marker exists
// and every file it lists is whole, so a process killed mid-save leaves either
// a staging directory (ignored and removed by the next save) or a complete
// checkpoint. Removal deletes the marker first, for the same reason.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace lazytrain::train {

inline constexpr const char* kCheckpointPrefix = "checkpoint-";
inline constexpr const char* kCheckpointMarker = "checkpoint_complete.json";

struct CheckpointDir {
  int64_t step = 0;
  std::string path;
};

// Writes checkpoint-<step> under `output_dir`: `write_files(dir)` writes the
// checkpoint's files into the staging directory `dir`; then the marker is
// written and the directory published (an older checkpoint-<step> is replaced).
// Leftover staging directories of earlier, interrupted saves are removed first.
// Returns the checkpoint's path. Throws Error naming the directory when a
// file cannot be written; nothing that looks like a checkpoint is left then.
std::string write_checkpoint(const std::string& output_dir, int64_t step, const std::function<void(const std::string& dir)>& write_files);

// Empty when `dir` is a complete checkpoint; otherwise why not ("no
// checkpoint_complete.json: the save did not finish", "model.safetensors has
// 12 bytes, the marker says 4096", "optimizer.safetensors: CRC32C mismatch").
std::string checkpoint_problem(const std::string& dir);

// The complete checkpoint-<step> directories of `output_dir`, oldest step first
// (incomplete ones are skipped). None when the directory does not exist.
std::vector<CheckpointDir> list_checkpoints(const std::string& output_dir);

// transformers.trainer_utils.get_last_checkpoint: the newest complete checkpoint.
std::optional<std::string> get_last_checkpoint(const std::string& output_dir);

// --resume_from_checkpoint: "latest" → the newest complete checkpoint of
// `output_dir`; a path → that directory, which must be a complete checkpoint.
// Throws Error "[Trainer] --resume_from_checkpoint '<arg>': <why>" otherwise.
std::string resolve_checkpoint(const std::string& arg, const std::string& output_dir);

// Removes the oldest complete checkpoints until at most `limit` remain, never
// the one at `keep` (the best model's, when load_best_model_at_end); with
// limit 1 and a best checkpoint that is not the newest, both stay (as Hugging
// Face's _rotate_checkpoints does). Checkpoints in `protect` are neither
// counted nor removed: those of an older run in the same --output_dir
// (--overwrite_output_dir) and those this run read. Returns the removed paths.
std::vector<std::string> rotate_checkpoints(const std::string& output_dir, int64_t limit, const std::string& keep = "",
                                            const std::vector<std::string>& protect = {});

// Whether `a` and `b` name the same existing file or directory (false when either is missing or empty).
bool same_path(const std::string& a, const std::string& b);

// Removes one checkpoint directory, its marker first.
void remove_checkpoint(const std::string& dir);

}  // namespace lazytrain::train
