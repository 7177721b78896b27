// Fuzzing the safetensors reader: thousands of files mutated from one valid
// file (fixed seed) must each either load with exactly the contents its header
// describes or raise one lazytrain::Error naming the file — never another
// exception type, a crash or a partial result.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "train/safetensors.h"

namespace lazytrain::train {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;  // ordered enough: edits keep keys, the reader accepts any order

std::vector<uint8_t> bytes_of(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// The valid file every mutation starts from: four dtypes, a scalar, an empty
// tensor and metadata, so offsets, alignment and every dtype size are exercised.
std::map<std::string, TensorRecord> base_tensors() {
  std::vector<uint8_t> ids(16);
  for (int i = 0; i < 16; ++i) ids[i] = static_cast<uint8_t>(i < 8 ? (i == 0 ? 3 : 0) : (i == 8 ? 7 : 0));
  return {
      {"bert.embeddings.word_embeddings.weight", {"F32", {2, 3}, bytes_of({1, -2, 3.5f, 4, 5, 6})}},
      {"cls.predictions.bias", {"F32", {3}, bytes_of({0.25f, 0.5f, -1})}},
      {"position_ids", {"I64", {1, 2}, ids}},
      {"half", {"BF16", {3}, {0x80, 0x3f, 0x00, 0x40, 0x40, 0xc0}}},
      {"mask", {"BOOL", {3}, {1, 0, 1}}},
      {"scalar", {"I32", {}, {42, 0, 0, 0}}},
      {"empty", {"F16", {0, 4}, {}}},
  };
}

std::string u64le(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// A file from header text (padded with spaces to 8) and data bytes.
std::string with_header(std::string header, const std::string& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  return u64le(header.size()) + header + data;
}

// What an independent reading of `bytes` says the tensors are, assuming the
// reader accepted the file: names, dtypes, shapes and the bytes at data_offsets.
std::map<std::string, TensorRecord> expected_contents(const std::string& bytes) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  const json header = json::parse(bytes.substr(8, n));
  std::map<std::string, TensorRecord> out;
  uint64_t covered = 0;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") continue;
    TensorRecord r;
    r.dtype = v.at("dtype").get<std::string>();
    r.shape = v.at("shape").get<std::vector<int64_t>>();
    const uint64_t b = v.at("data_offsets")[0].get<uint64_t>(), e = v.at("data_offsets")[1].get<uint64_t>();
    uint64_t numel = 1;
    for (int64_t d : r.shape) numel *= static_cast<uint64_t>(d);
    EXPECT_EQ(e - b, numel * static_cast<uint64_t>(safetensors_dtype_size(r.dtype))) << name;
    r.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(8 + n + b), bytes.begin() + static_cast<std::ptrdiff_t>(8 + n + e));
    covered += e - b;
    out.emplace(name, std::move(r));
  }
  EXPECT_EQ(covered, bytes.size() - 8 - n) << "accepted a file whose tensors do not cover the buffer";
  return out;
}

class SafetensorsFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lazytrain_safetensors_fuzz_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    file_ = (dir_ / "model.safetensors").string();
    base_ = serialize_safetensors(base_tensors(), {{"format", "pt"}});
    n_ = base_.size() - base_tensors_bytes();
    header_ = json::parse(base_.substr(8, n_ - 8));
  }
  void TearDown() override { fs::remove_all(dir_); }

  static size_t base_tensors_bytes() {
    size_t total = 0;
    for (const auto& [name, r] : base_tensors()) total += r.data.size();
    return total;
  }

  // Writes `bytes`, loads them and checks the outcome. Returns true when loaded.
  bool load(const std::string& bytes, const std::string& what) {
    {
      // A new file each time: ext4 flushes a file truncated and rewritten in
      // place at close (auto_da_alloc), which made thousands of cases slow.
      fs::remove(file_);
      std::ofstream out(file_, std::ios::binary);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    ++cases_;
    std::map<std::string, std::string> metadata;
    try {
      auto loaded = load_safetensors(file_, &metadata);
      EXPECT_EQ(loaded, expected_contents(bytes)) << what;
      ++loaded_;
      return true;
    } catch (const Error& e) {
      const std::string prefix = "[safetensors] '" + file_ + "': ";
      EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << what << ": " << e.what();
      EXPECT_LT(std::string(e.what()).size(), 2000u) << what;
      EXPECT_NO_THROW((void)json(std::string(e.what())).dump()) << what << ": the message is not valid UTF-8";
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": an exception other than lazytrain::Error: " << e.what();
    }
    return false;
  }

  // The file with the header replaced by `header` (compact JSON) and the same data.
  std::string rewrite(const json& header) const { return with_header(header.dump(), base_.substr(n_)); }

  fs::path dir_;
  std::string file_, base_;
  size_t n_ = 0;  // bytes before the data: 8 + padded header
  json header_;
  int cases_ = 0, loaded_ = 0;
};

TEST_F(SafetensorsFuzz, MutatedFilesLoadExactlyOrFailNamingTheFile) {
  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(20261130);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  ASSERT_TRUE(load(base_, "the valid file"));

  // Truncation at every length, and trailing bytes: always an error.
  for (size_t len = 0; len < base_.size(); ++len) EXPECT_FALSE(load(base_.substr(0, len), "truncated to " + std::to_string(len)));
  for (size_t extra = 1; extra <= 16; ++extra) EXPECT_FALSE(load(base_ + std::string(extra, '\0'), "extended"));

  // Bit flips and byte changes anywhere; in the data they must load exactly.
  for (int i = 0; i < 1500; ++i) {
    std::string m = base_;
    const size_t at = pick(m.size());
    m[at] = static_cast<char>(m[at] ^ (1 << pick(8)));
    const bool loaded = load(m, "bit flip at " + std::to_string(at));
    if (at >= n_) {
      EXPECT_TRUE(loaded) << "bit flip in the data at " << at;
    }
  }
  for (int i = 0; i < 500; ++i) {  // confined to the data: every one loads, with the flipped bit
    std::string m = base_;
    const size_t at = n_ + pick(m.size() - n_);
    m[at] = static_cast<char>(m[at] ^ (1 << pick(8)));
    EXPECT_TRUE(load(m, "bit flip in the data at " + std::to_string(at)));
  }
  for (int i = 0; i < 1000; ++i) {
    std::string m = base_;
    for (size_t k = 0, changes = 1 + pick(4); k < changes; ++k) m[pick(m.size())] = static_cast<char>(rng());
    load(m, "byte changes");
  }
  // The 8-byte header length: special and random values.
  const uint64_t n_json = n_ - 8;
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, n_json - 1, n_json + 1, n_json + 8, uint64_t(base_.size()), uint64_t(base_.size()) - 8,
                     uint64_t{100'000'001}, uint64_t{1} << 63, ~uint64_t{0}, ~uint64_t{0} - 7}) {
    load(u64le(v) + base_.substr(8), "header length " + std::to_string(v));
  }
  for (int i = 0; i < 200; ++i) load(u64le(rng() % (2 * base_.size())) + base_.substr(8), "random header length");

  // Edits of the header's JSON, one or two at a time.
  std::vector<std::string> names;
  for (const auto& [name, v] : header_.items())
    if (name != "__metadata__") names.push_back(name);
  const std::vector<json> odd_values = {json(nullptr), json(true), json(-1), json(1.5), json("x"), json::array(), json::object(),
                                        json(uint64_t{1} << 62), json(~uint64_t{0}), json::array({json::array({1})}),
                                        json(9223372036854775807LL), json(-9223372036854775807LL - 1)};
  const std::vector<std::string> dtypes = {"F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL", "U64",
                                           "F8_E4M3", "C64", "F4", "f32", "", "F32 "};
  std::vector<std::function<void(json&)>> edits = {
      [&](json& h) {  // swap the offsets of two tensors
        auto& a = h[names[pick(names.size())]]["data_offsets"];
        auto& b = h[names[pick(names.size())]]["data_offsets"];
        std::swap(a, b);
      },
      [&](json& h) { h[names[pick(names.size())]]["dtype"] = dtypes[pick(dtypes.size())]; },
      [&](json& h) { h[names[pick(names.size())]]["dtype"] = odd_values[pick(odd_values.size())]; },
      [&](json& h) {  // a dimension changed, added or removed
        auto& s = h[names[pick(names.size())]]["shape"];
        const int kind = static_cast<int>(pick(4));
        if (kind == 0 && !s.empty()) s[pick(s.size())] = odd_values[pick(odd_values.size())];
        else if (kind == 1 && !s.empty()) s[pick(s.size())] = static_cast<int64_t>(pick(8));
        else if (kind == 2) s.push_back(static_cast<int64_t>(pick(3)));
        else if (!s.empty()) s.erase(s.size() - 1);
      },
      [&](json& h) { h[names[pick(names.size())]]["shape"] = odd_values[pick(odd_values.size())]; },
      [&](json& h) {  // an offset moved, set to an odd value, or the pair replaced
        auto& o = h[names[pick(names.size())]]["data_offsets"];
        const int kind = static_cast<int>(pick(4));
        if (kind == 0) o[pick(2)] = o[pick(2)].get<uint64_t>() + pick(9) - 4;
        else if (kind == 1) o[pick(2)] = odd_values[pick(odd_values.size())];
        else if (kind == 2) o = json::array({o[1], o[0]});
        else o = odd_values[pick(odd_values.size())];
      },
      [&](json& h) { h[names[pick(names.size())]].erase(std::vector<std::string>{"dtype", "shape", "data_offsets"}[pick(3)]); },
      [&](json& h) { h[names[pick(names.size())]]["extra"] = odd_values[pick(odd_values.size())]; },
      [&](json& h) { h.erase(names[pick(names.size())]); },
      [&](json& h) { h[names[pick(names.size())]] = odd_values[pick(odd_values.size())]; },
      [&](json& h) {  // an extra tensor: empty at the end (valid), or overlapping
        const uint64_t end = base_.size() - n_;
        if (pick(2) == 0) h["extra"] = {{"dtype", "F32"}, {"shape", {0}}, {"data_offsets", {end, end}}};
        else h["extra"] = {{"dtype", "U8"}, {"shape", {1}}, {"data_offsets", {pick(end), pick(end) + 1}}};
      },
      [&](json& h) { h["__metadata__"] = odd_values[pick(odd_values.size())]; },
      [&](json& h) { h["__metadata__"]["format"] = odd_values[pick(odd_values.size())]; },
      [&](json& h) {  // a tensor renamed
        const std::string name = names[pick(names.size())];
        json v = h[name];
        h.erase(name);
        h[name + std::string(1 + pick(3), static_cast<char>('a' + pick(26)))] = v;
      },
  };
  for (int i = 0; i < 2000; ++i) {
    json h = header_;
    for (size_t k = 0, count = 1 + pick(2); k < count; ++k) {
      try {
        edits[pick(edits.size())](h);
      } catch (const json::exception&) {  // a second edit that no longer applies (the first replaced its target)
      }
    }
    load(rewrite(h), "header edit " + h.dump().substr(0, 300));
  }

  // Headers no JSON editor above can produce.
  const std::string data = base_.substr(n_);
  const std::string valid = header_.dump();
  const std::string one = R"("x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]})";
  std::vector<std::pair<std::string, std::string>> raw = {
      {"", "empty header"},
      {"[]", "array header"},
      {"\"text\"", "string header"},
      {"null", "null header"},
      {"{" + one + "," + one + "}", "duplicate tensor"},
      {R"({"x":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "duplicate field"},
      {R"({"__metadata__":{"a":"1","a":"2"}})", "duplicate metadata key"},
      {R"({"x":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}})", "float dimension"},
      {R"({"x":{"dtype":"U8","shape":[NaN],"data_offsets":[0,1]}})", "NaN dimension"},
      {R"({"x":{"dtype":"U8","shape":[1e400],"data_offsets":[0,1]}})", "overflowing dimension"},
      {R"({"x":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,1]}})", "dimension over 2^64"},
      {R"({"x":{"dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,8]}})", "byte count overflows"},
      {R"({"x":{"dtype":"U8","shape":[0,4611686018427387904,4611686018427387904],"data_offsets":[0,0]}})", "numel overflows"},
      {R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551615,0]}})", "offsets reversed"},
      {R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551615,18446744073709551616]}})", "offset over 2^64"},
      {"{\"x\xff\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", "name not UTF-8"},
      {"{\"x\":{\"dtype\":\"U\xc0\",\"shape\":[1],\"data_offsets\":[0,1]}}", "dtype not UTF-8"},
      {valid + "x", "trailing text"},
      {valid.substr(0, valid.size() - 1), "unterminated"},
      {std::string("{\"x\":{\"dtype\":\"U8\",\"shape\":") + std::string(100000, '[') + std::string(100000, ']') + "}}", "deep nesting"},
      {std::string(200000, '{'), "deep objects"},
      {"{\"x\":{\"dtype\":\"U8\",\"shape\":[" + std::string(1 << 16, '1') + "],\"data_offsets\":[0,1]}}", "huge number"},
  };
  std::string many_dims = R"({"x":{"dtype":"U8","shape":[)";
  for (int i = 0; i < 100000; ++i) many_dims += i ? ",1" : "1";
  raw.emplace_back(many_dims + R"(],"data_offsets":[0,1]}})", "rank 100000");  // valid: 1 byte, rank 100000
  for (const auto& [header, what] : raw) {
    load(with_header(header, data), what);
    load(with_header(header, std::string(1, '\x07')), what + " (1 data byte)");
  }

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[fuzz] %d mutated files: %d loaded exactly, %d rejected with an Error naming the file, %.2f s\n", cases_, loaded_,
              cases_ - loaded_, seconds);
  EXPECT_GE(cases_, 5000);
  EXPECT_GT(loaded_, 1000);  // every data-only flip, and header edits that stay valid
}

}  // namespace
}  // namespace lazytrain::train
