#include "data/tfrecord_dataset.h"

#include <glob.h>

#include <cstdio>

#include "core/error.h"
#include "data/tf_example.h"

namespace lazytrain::data {

std::vector<std::string> glob_files(const std::string& pattern) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> files;
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  if (files.empty()) throw Error("[TFRecordDataset] no file matches '" + pattern + "'");
  return files;  // glob(3) sorts
}

TFRecordDataset::TFRecordDataset(std::vector<std::string> files, TFRecordDatasetOptions options)
    : options_(options), rng_(options.seed) {
  check(options_.cycle_length >= 1 && options_.shuffle_buffer >= 0 && options_.num_replicas >= 1 && options_.replica_index >= 0 &&
            options_.replica_index < options_.num_replicas,
        "TFRecordDataset", "bad options: cycle_length >= 1, shuffle_buffer >= 0, 0 <= replica_index < num_replicas expected");
  if (files.empty()) throw Error("[TFRecordDataset] no files");
  for (size_t i = 0; i < files.size(); ++i) {
    if (static_cast<int>(i % static_cast<size_t>(options_.num_replicas)) == options_.replica_index) files_.push_back(files[i]);
  }
  if (files_.empty()) {
    throw Error("[TFRecordDataset] " + std::to_string(files.size()) + " files give replica " + std::to_string(options_.replica_index) +
                " of " + std::to_string(options_.num_replicas) + " nothing to read; write more shards");
  }
}

int64_t TFRecordDataset::skipped() const {
  int64_t n = skipped_closed_ + skipped_examples_;
  for (const auto& r : open_) n += r->skipped();
  return n;
}

std::optional<Example> TFRecordDataset::next_in_order() {
  while (true) {
    while (open_.size() < static_cast<size_t>(options_.cycle_length) && next_file_ < files_.size()) {
      open_.push_back(std::make_unique<TFRecordReader>(files_[next_file_++], options_.skip_corrupt));
    }
    if (open_.empty()) return std::nullopt;
    turn_ %= open_.size();
    TFRecordReader& reader = *open_[turn_];
    std::optional<std::string> record = reader.next();
    if (!record) {
      skipped_closed_ += reader.skipped();
      open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(turn_));
      continue;
    }
    ++turn_;
    const std::string where = "'" + reader.path() + "' record " + std::to_string(reader.index() - 1) + " (byte offset " +
                              std::to_string(reader.record_offset()) + ")";
    try {
      Int64Features f = parse_int64_example(*record, where);
      auto ids = f.find("input_ids");
      if (ids == f.end() || ids->second.empty()) throw Error("[tf.train.Example] " + where + ": no input_ids feature");
      Example ex;
      ex.input_ids = std::move(ids->second);
      if (auto mask = f.find("attention_mask"); mask != f.end()) {
        if (mask->second.size() != ex.input_ids.size()) {
          throw Error("[tf.train.Example] " + where + ": attention_mask has " + std::to_string(mask->second.size()) + " values, input_ids " +
                      std::to_string(ex.input_ids.size()));
        }
        ex.attention_mask = std::move(mask->second);
      }
      return ex;
    } catch (const Error& e) {
      if (!options_.skip_corrupt) throw;
      std::fprintf(stderr, "warning: %s; skipped\n", e.what());
      ++skipped_examples_;
    }
  }
}

std::optional<Example> TFRecordDataset::next() {
  if (options_.shuffle_buffer == 0) return next_in_order();
  // tf.data's shuffle: fill the buffer, then hand out a random element and refill its slot.
  while (buffer_.size() < static_cast<size_t>(options_.shuffle_buffer)) {
    std::optional<Example> ex = next_in_order();
    if (!ex) break;
    buffer_.push_back(std::move(*ex));
  }
  if (buffer_.empty()) return std::nullopt;
  const size_t k = static_cast<size_t>(rng_() % buffer_.size());
  Example out = std::move(buffer_[k]);
  if (std::optional<Example> ex = next_in_order()) buffer_[k] = std::move(*ex);
  else {
    buffer_[k] = std::move(buffer_.back());
    buffer_.pop_back();
  }
  return out;
}

}  // namespace lazytrain::data
