#include "train/results_files.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "train/json_file.h"

namespace lazytrain::train {

void save_metrics(const std::string& output_dir, const std::string& split, const std::map<std::string, double>& metrics,
                  bool combined) {
  nlohmann::json split_metrics = nlohmann::json::object();
  for (const auto& [k, v] : metrics) {
    // Counts are integers in Hugging Face's files ("eval_samples": 2405).
    if (k.ends_with("_samples") && v == std::floor(v) && std::abs(v) < 9e15) {
      split_metrics[k] = static_cast<int64_t>(v);
    } else {
      split_metrics[k] = v;
    }
  }
  write_json_file(output_dir + "/" + split + "_results.json", split_metrics);
  if (!combined) return;
  const std::string path = output_dir + "/all_results.json";
  std::error_code ec;
  nlohmann::json all = std::filesystem::exists(path, ec) ? read_json_file(path) : nlohmann::json::object();
  if (!all.is_object()) {
    throw Error("[save_metrics] '" + path + "' holds " + std::string(all.type_name()) +
                ", expected a JSON object of metrics to merge the " + split + " metrics into");
  }
  all.update(split_metrics);
  write_json_file(path, all);
}

void log_metrics(const std::string& split, const std::map<std::string, double>& metrics) {
  std::printf("***** %s metrics *****\n", split.c_str());
  for (const auto& [k, v] : metrics) std::printf("  %-26s = %.6g\n", k.c_str(), v);
}

}  // namespace lazytrain::train
