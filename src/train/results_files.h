// The metrics files of a run, as Hugging Face's Trainer.save_metrics and
// log_metrics write them: <output_dir>/<split>_results.json and the combined
// all_results.json, with non-finite values as Infinity / NaN (train/json_file.h).
#pragma once

#include <map>
#include <string>

namespace lazytrain::train {

// Trainer.save_metrics(split, metrics, combined): writes
// <output_dir>/<split>_results.json (e.g. split "train" or "eval") with exactly
// `metrics` (a whole-number "*_samples" count written as an integer, as HF does), and, when combined, merges them into <output_dir>/all_results.json:
// the keys already there are kept, new ones added, and a key of `metrics`
// replaces the old value (Python dict.update), so an evaluation run after
// training keeps the train_* entries. Files are written atomically. Throws
// lazytrain::Error naming the file when it cannot be written, or when an
// existing all_results.json is not a JSON object.
void save_metrics(const std::string& output_dir, const std::string& split, const std::map<std::string, double>& metrics,
                  bool combined = true);

// Trainer.log_metrics: prints "***** <split> metrics *****" and one
// "  key = value" line per metric to stdout (inf and nan as "inf", "nan").
void log_metrics(const std::string& split, const std::map<std::string, double>& metrics);

}  // namespace lazytrain::train
