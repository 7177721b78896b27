#include "train/checkpoint.h"

#include <algorithm>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include "core/crc32c.h"
#include "core/error.h"
#include "train/json_file.h"

namespace lazytrain::train {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStagingPrefix = "tmp-checkpoint-";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Makes a rename or removal in `dir` durable (best effort, as atomic_file does).
void fsync_directory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// The step of a "checkpoint-<digits>" name, or nullopt.
std::optional<int64_t> step_of(const std::string& name) {
  const std::string prefix = kCheckpointPrefix;
  if (!name.starts_with(prefix) || name.size() == prefix.size() || name.size() > prefix.size() + 18) return std::nullopt;
  const std::string digits = name.substr(prefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  return std::stoll(digits);
}

void remove_staging_directories(const fs::path& output_dir) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(output_dir, ec)) {
    if (e.is_directory() && e.path().filename().string().starts_with(kStagingPrefix)) fs::remove_all(e.path(), ec);
  }
}

}  // namespace

std::string write_checkpoint(const std::string& output_dir, int64_t step, const std::function<void(const std::string& dir)>& write_files) {
  const fs::path final_dir = fs::path(output_dir) / (kCheckpointPrefix + std::to_string(step));
  const fs::path staging = fs::path(output_dir) / (kStagingPrefix + std::to_string(step));
  std::error_code ec;
  fs::create_directories(output_dir, ec);
  remove_staging_directories(output_dir);
  if (!fs::create_directory(staging, ec) && ec) {
    throw Error("[Trainer] cannot create checkpoint directory '" + staging.string() + "' (" + ec.message() + ")");
  }
  try {
    write_files(staging.string());
    // The marker: every file with its size and CRC32C, written last.
    nlohmann::json files = nlohmann::json::object();
    for (const fs::directory_entry& e : fs::directory_iterator(staging)) {
      if (!e.is_regular_file()) continue;
      const std::string bytes = read_file(e.path());
      files[e.path().filename().string()] = {{"size", bytes.size()}, {"crc32c", crc32c(bytes)}};
    }
    write_json_file((staging / kCheckpointMarker).string(), {{"global_step", step}, {"files", files}});
    if (fs::exists(final_dir)) remove_checkpoint(final_dir.string());
    fs::rename(staging, final_dir);
    fsync_directory(output_dir);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(staging, ec);
    throw Error("[Trainer] cannot write checkpoint '" + final_dir.string() + "': " + e.what());
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
  return final_dir.string();
}

std::string checkpoint_problem(const std::string& dir) {
  const fs::path d(dir);
  if (!fs::is_directory(d)) return "no such directory";
  const fs::path marker = d / kCheckpointMarker;
  if (!fs::is_regular_file(marker)) return std::string("no ") + kCheckpointMarker + ": the save did not finish";
  nlohmann::json m;
  try {
    m = read_json_file(marker.string());
  } catch (const Error& e) {
    return e.what();
  }
  if (!m.is_object() || !m.contains("files") || !m["files"].is_object()) return std::string(kCheckpointMarker) + " lists no files";
  for (const auto& [name, entry] : m["files"].items()) {
    const fs::path file = d / name;
    if (!fs::is_regular_file(file)) return name + " is missing";
    const std::string bytes = read_file(file);
    const auto size = entry.value("size", uint64_t{0});
    if (bytes.size() != size) return name + " has " + std::to_string(bytes.size()) + " bytes, the marker says " + std::to_string(size);
    if (crc32c(bytes) != entry.value("crc32c", uint32_t{0})) return name + ": CRC32C mismatch (the file changed after the save)";
  }
  return "";
}

std::vector<CheckpointDir> list_checkpoints(const std::string& output_dir) {
  std::vector<CheckpointDir> found;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(output_dir, ec)) {
    const std::optional<int64_t> step = step_of(e.path().filename().string());
    if (!step || !e.is_directory()) continue;
    // Only the marker's presence here: reading every file of every checkpoint
    // on each save would be slow; a resume verifies its checkpoint fully.
    if (fs::is_regular_file(e.path() / kCheckpointMarker)) found.push_back({*step, e.path().string()});
  }
  std::sort(found.begin(), found.end(), [](const CheckpointDir& a, const CheckpointDir& b) { return a.step < b.step; });
  return found;
}

std::optional<std::string> get_last_checkpoint(const std::string& output_dir) {
  std::vector<CheckpointDir> all = list_checkpoints(output_dir);
  // The newest whole one: a marker over a damaged file does not count.
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (checkpoint_problem(it->path).empty()) return it->path;
  }
  return std::nullopt;
}

std::string resolve_checkpoint(const std::string& arg, const std::string& output_dir) {
  const std::string what = "[Trainer] --resume_from_checkpoint '" + arg + "': ";
  if (arg == "latest") {
    std::optional<std::string> last = get_last_checkpoint(output_dir);
    if (!last) throw Error(what + "no complete checkpoint in --output_dir '" + output_dir + "'");
    return *last;
  }
  const std::string problem = checkpoint_problem(arg);
  if (!problem.empty()) throw Error(what + "not a complete checkpoint: " + problem);
  return arg;
}

bool same_path(const std::string& a, const std::string& b) {
  std::error_code ec;
  return !a.empty() && !b.empty() && fs::equivalent(a, b, ec);
}

std::vector<std::string> rotate_checkpoints(const std::string& output_dir, int64_t limit, const std::string& keep,
                                            const std::vector<std::string>& protect) {
  std::vector<CheckpointDir> all = list_checkpoints(output_dir);
  std::erase_if(all, [&](const CheckpointDir& c) { return std::any_of(protect.begin(), protect.end(), [&](const std::string& p) { return same_path(c.path, p); }); });
  std::vector<std::string> removed;
  if (limit < 1 || static_cast<int64_t>(all.size()) <= limit) return removed;
  const bool keep_listed = std::any_of(all.begin(), all.end(), [&](const CheckpointDir& c) { return same_path(c.path, keep); });
  // With limit 1 and a best checkpoint older than the newest, keep both.
  if (keep_listed && limit == 1 && !same_path(all.back().path, keep)) limit = 2;
  int64_t excess = static_cast<int64_t>(all.size()) - limit;
  for (const CheckpointDir& c : all) {
    if (excess <= 0) break;
    if (same_path(c.path, keep)) continue;
    remove_checkpoint(c.path);
    removed.push_back(c.path);
    --excess;
  }
  return removed;
}

void remove_checkpoint(const std::string& dir) {
  std::error_code ec;
  fs::remove(fs::path(dir) / kCheckpointMarker, ec);
  fsync_directory(dir);
  fs::remove_all(dir, ec);
  if (ec) throw Error("[Trainer] cannot remove checkpoint '" + dir + "' (" + ec.message() + ")");
}

}  // namespace lazytrain::train
