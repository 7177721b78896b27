#include "data/tfrecord_shards.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "data/tf_example.h"
#include "data/text_dataset.h"
#include "data/tfrecord.h"
#include "data/unicode_text.h"

namespace lazytrain::data {

namespace fs = std::filesystem;

namespace {
constexpr const char* kOp = "[make_tfrecords] ";

std::string shard_name(const std::string& prefix, size_t index, size_t count) {
  char b[64];
  std::snprintf(b, sizeof(b), "-%05zu-of-%05zu.tfrecord", index, count);
  return prefix + b;
}
}  // namespace

TFRecordShardSummary write_tfrecord_shards(const std::vector<std::string>& input_files, const Tokenizer& tokenizer,
                                           const TFRecordShardOptions& o) {
  if (o.max_seq_length < 2) throw Error(std::string(kOp) + "--max_seq_length must be at least 2, got " + std::to_string(o.max_seq_length));
  if (o.shard_size < 1) throw Error(std::string(kOp) + "--shard_size must be at least 1, got " + std::to_string(o.shard_size));
  if (input_files.empty()) throw Error(std::string(kOp) + "no --input file given");
  if (o.output_dir.empty()) throw Error(std::string(kOp) + "--output_dir is required");
  // Tokenize everything first: the number of shards is part of their names.
  const bool keep_linebreaks = tokenizer.num_special_tokens_to_add() == 0;
  std::vector<int64_t> stream;
  for (const std::string& path : input_files) {
    std::ifstream in(path, std::ios::binary);
    std::error_code ec;
    if (!fs::is_regular_file(path, ec) || !in) throw Error(std::string(kOp) + "cannot read input file '" + path + "'");
    const size_t before = stream.size();
    std::string line;
    for (int64_t number = 1; std::getline(in, line); ++number) {
      if (unicode::find_invalid_utf8(line) != unicode::kValidUtf8) {
        throw Error(std::string(kOp) + "'" + path + "' line " + std::to_string(number) + " is not valid UTF-8");
      }
      if (is_blank_line(line)) continue;  // a paragraph break: no text, no <s> </s>
      // A tokenizer without special tokens keeps the line break (keep_linebreaks).
      std::vector<int64_t> ids = tokenizer.encode(keep_linebreaks ? line + "\n" : line, true);
      stream.insert(stream.end(), ids.begin(), ids.end());
    }
    if (stream.size() == before) throw Error(std::string(kOp) + "input file '" + path + "' has no text");
  }
  const size_t block = static_cast<size_t>(o.max_seq_length);
  const size_t examples = (stream.size() + block - 1) / block;
  const size_t shards = (examples + static_cast<size_t>(o.shard_size) - 1) / static_cast<size_t>(o.shard_size);
  fs::create_directories(o.output_dir);
  TFRecordShardSummary summary;
  summary.num_tokens = static_cast<int64_t>(stream.size());
  std::vector<std::unique_ptr<TFRecordWriter>> writers;  // published together at the end
  for (size_t s = 0; s < shards; ++s) {
    const std::string file = o.output_dir + "/" + shard_name(o.prefix, s, shards);
    writers.push_back(std::make_unique<TFRecordWriter>(file));
    summary.files.push_back(file);
  }
  for (size_t e = 0; e < examples; ++e) {
    std::vector<int64_t> ids(block, tokenizer.pad_token_id()), mask(block, 0);
    for (size_t t = 0; t < block && e * block + t < stream.size(); ++t) {
      ids[t] = stream[e * block + t];
      mask[t] = 1;
    }
    writers[e / static_cast<size_t>(o.shard_size)]->write(serialize_int64_example({{"input_ids", ids}, {"attention_mask", mask}}));
  }
  summary.num_examples = static_cast<int64_t>(examples);
  for (auto& w : writers) w->close();
  nlohmann::json info = {{"num_examples", summary.num_examples}, {"num_tokens", summary.num_tokens},
                         {"num_shards", shards}, {"max_seq_length", o.max_seq_length}, {"shard_size", o.shard_size},
                         {"tokenizer", o.tokenizer_name}, {"features", {"input_ids", "attention_mask"}},
                         {"files", nlohmann::json::array()}};
  for (const std::string& f : summary.files) info["files"].push_back(fs::path(f).filename().string());
  write_file_atomically(o.output_dir + "/" + o.prefix + ".json", info.dump(2) + "\n");
  return summary;
}

}  // namespace lazytrain::data
