#include "train/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/atomic_file.h"

namespace lazytrain::train {
namespace {

namespace fs = std::filesystem;

bool contains(const char* text, const std::string& part) { return std::string(text).find(part) != std::string::npos; }

std::vector<uint8_t> f32_bytes(std::initializer_list<float> values) {
  std::vector<uint8_t> out(values.size() * 4);
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_all(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

std::string u64le(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lazytrain_safetensors_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  size_t files_in_dir() const { return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {})); }

  // Expects load_safetensors(file) to throw exactly `message` after the file prefix.
  void expect_load_error(const std::string& file, const std::string& message) {
    try {
      load_safetensors(file);
      ADD_FAILURE() << "no error for " << file;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "[safetensors] '" + file + "': " + message);
    }
  }

  fs::path dir_;
};

// The reference library's own test vector (safetensors/src/tensor.rs,
// test_serialization_forced_alignement): one F32 tensor [1,1,2,3] = 0..5.
TEST_F(SafetensorsTest, ExactBytesOfTinyFile) {
  std::map<std::string, TensorRecord> tensors{{"attn0", {"F32", {1, 1, 2, 3}, f32_bytes({0, 1, 2, 3, 4, 5})}}};
  const std::string json = R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})";
  ASSERT_EQ(json.size(), 65u);
  const std::string data("\x00\x00\x00\x00\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40\x00\x00\xa0\x40",
                         24);
  const std::string expected = u64le(72) + json + std::string(7, ' ') + data;
  EXPECT_EQ(serialize_safetensors(tensors), expected);

  save_safetensors(path("model.safetensors"), tensors);
  EXPECT_EQ(read_all(path("model.safetensors")), expected);
  EXPECT_EQ(files_in_dir(), 1u);  // no temporary file left
}

// Reference test_empty: "{}" padded to 8; metadata-only header padded to 32.
TEST_F(SafetensorsTest, ExactBytesOfEmptyFiles) {
  EXPECT_EQ(serialize_safetensors({}), u64le(8) + "{}      ");
  EXPECT_EQ(serialize_safetensors({}, {{"framework", "pt"}}),
            u64le(40) + R"({"__metadata__":{"framework":"pt"}})" + "     ");
}

// Like the reference's prepare(): descending dtype alignment, then name.
TEST_F(SafetensorsTest, LayoutOrderIsDtypeAlignmentThenName) {
  std::map<std::string, TensorRecord> tensors{
      {"a", {"F32", {1}, f32_bytes({1})}},
      {"b", {"I64", {1}, std::vector<uint8_t>(8, 7)}},
      {"c", {"BF16", {1}, {0x80, 0x3f}}},
      {"d", {"BOOL", {2}, {1, 0}}},
      {"e", {"F32", {1}, f32_bytes({2})}},
  };
  std::string bytes = serialize_safetensors(tensors, {{"format", "pt"}});
  const std::string json =
      R"({"__metadata__":{"format":"pt"},)"
      R"("b":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},)"
      R"("e":{"dtype":"F32","shape":[1],"data_offsets":[12,16]},)"
      R"("c":{"dtype":"BF16","shape":[1],"data_offsets":[16,18]},)"
      R"("d":{"dtype":"BOOL","shape":[2],"data_offsets":[18,20]}})";
  const size_t padded = (json.size() + 7) / 8 * 8;
  ASSERT_EQ(bytes.size(), 8 + padded + 20);
  EXPECT_EQ(bytes.substr(0, 8), u64le(padded));
  EXPECT_EQ(bytes.substr(8, padded), json + std::string(padded - json.size(), ' '));
}

TEST_F(SafetensorsTest, RoundTrip) {
  std::map<std::string, TensorRecord> tensors{
      {"bert.embeddings.word_embeddings.weight", {"F32", {2, 3}, f32_bytes({1, 2, 3, 4, 5, 6.5f})}},
      {"bert.pooler.dense.bias", {"BF16", {2}, {0x80, 0x3f, 0x00, 0x40}}},
      {"position_ids", {"I64", {1, 2}, {0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}}},
      {"scalar", {"I32", {}, {42, 0, 0, 0}}},
      {"empty", {"F16", {0, 3}, {}}},
      {"mask", {"BOOL", {3}, {1, 0, 1}}},
  };
  const std::map<std::string, std::string> metadata{{"format", "pt"}};
  save_safetensors(path("model.safetensors"), tensors, metadata);
  std::map<std::string, std::string> loaded_metadata;
  auto loaded = load_safetensors(path("model.safetensors"), &loaded_metadata);
  EXPECT_EQ(loaded, tensors);
  EXPECT_EQ(loaded_metadata, metadata);

  // Overwriting an existing file replaces it whole.
  tensors.erase("mask");
  save_safetensors(path("model.safetensors"), tensors);
  EXPECT_EQ(load_safetensors(path("model.safetensors"), &loaded_metadata), tensors);
  EXPECT_TRUE(loaded_metadata.empty());
  EXPECT_EQ(files_in_dir(), 1u);
}

TEST_F(SafetensorsTest, TruncatedFileIsRejected) {
  std::map<std::string, TensorRecord> tensors{{"attn0", {"F32", {1, 1, 2, 3}, f32_bytes({0, 1, 2, 3, 4, 5})}}};
  const std::string file = path("model.safetensors");
  save_safetensors(file, tensors);
  fs::resize_file(file, 103);
  expect_load_error(file, "file is truncated: the tensors need 24 data bytes but only 23 follow the header "
                          "(file size 103)");
  fs::resize_file(file, 50);
  expect_load_error(file, "header length 72 exceeds file size 50; expected a safetensors file");
  fs::resize_file(file, 5);
  expect_load_error(file, "file is 5 bytes, too short for the 8-byte header length; expected a safetensors file");
}

TEST_F(SafetensorsTest, CorruptHeaderIsRejected) {
  const std::string file = path("bad.safetensors");
  write_all(file, u64le(99999) + std::string(92, ' '));
  expect_load_error(file, "header length 99999 exceeds file size 100; expected a safetensors file");

  write_all(file, u64le(8) + "{abc    ");
  try {
    load_safetensors(file);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "[safetensors] '" + file + "': header is not valid JSON (")) << e.what();
  }

  write_all(file, u64le(8) + "[1,2]   ");
  expect_load_error(file, "header does not start with '{'; expected a JSON object");

  write_all(file, u64le(200'000'000) + "{}");
  expect_load_error(file, "header length 200000000 exceeds the 100000000-byte limit; expected a safetensors file");

  auto with_header = [&](const std::string& json, size_t data_bytes) {
    std::string h = json + std::string((8 - json.size() % 8) % 8, ' ');
    write_all(file, u64le(h.size()) + h + std::string(data_bytes, '\0'));
  };
  with_header(R"({"w":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", 16);
  expect_load_error(file, "tensor 'w' has unknown dtype 'F128'; expected one of BOOL, U8, I8, F8_E5M2, F8_E4M3, "
                          "F8_E8M0, I16, U16, F16, BF16, I32, U32, F32, C64, F64, I64, U64");
  with_header(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 20);
  expect_load_error(file, "tensor 'w' has data_offsets [0,20] but shape [2, 3] of F32 needs 24 bytes");
  with_header(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4);
  expect_load_error(file, "tensor 'w' has shape [-1]; expected an array of non-negative integers");
  with_header(R"({"w":{"dtype":"F32","shape":[1]}})", 4);
  expect_load_error(file, "tensor 'w' has no \"data_offsets\"; expected {\"dtype\", \"shape\", \"data_offsets\"}");
  with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
              R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
              12);
  expect_load_error(file, "tensor 'b' starts at byte 8 but the previous tensor 'a' ends at byte 4; "
                          "expected contiguous tensors with no holes or overlaps");
  with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
              R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
              8);
  expect_load_error(file, "tensor 'b' starts at byte 4 but the previous tensor 'a' ends at byte 8; "
                          "expected contiguous tensors with no holes or overlaps");
  with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 6);
  expect_load_error(file, "the tensors cover 4 data bytes but 6 follow the header; expected no trailing bytes");
  with_header(R"({"__metadata__":{"format":1}})", 0);
  expect_load_error(file, "\"__metadata__\" value for 'format' is not a string");
}

TEST_F(SafetensorsTest, MissingFileIsRejected) {
  expect_load_error(path("nope.safetensors"), "cannot open (No such file or directory); expected a safetensors file");
  expect_load_error(dir_.string(), "not a regular file; expected a safetensors file");
}

TEST_F(SafetensorsTest, FailedSaveLeavesNoFile) {
  std::map<std::string, TensorRecord> tensors{{"w", {"F32", {1}, f32_bytes({1})}}};

  // Missing directory: the temporary file cannot even be created.
  const std::string missing = path("no_such_dir/model.safetensors");
  try {
    save_safetensors(missing, tensors);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "[safetensors] '" + missing + "': cannot create temporary file")) << e.what();
  }
  EXPECT_EQ(files_in_dir(), 0u);

  // The final name is a directory: the temporary file is written, the rename
  // fails, and the temporary file is removed.
  fs::create_directory(path("model.safetensors"));
  try {
    save_safetensors(path("model.safetensors"), tensors);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "cannot rename temporary file")) << e.what();
  }
  EXPECT_FALSE(fs::exists(atomic_temp_path(path("model.safetensors"))));
  EXPECT_EQ(files_in_dir(), 1u);
  fs::remove(path("model.safetensors"));

  // Invalid tensor: rejected before anything is written; an existing file stays intact.
  save_safetensors(path("model.safetensors"), tensors);
  const std::string before = read_all(path("model.safetensors"));
  std::map<std::string, TensorRecord> bad{{"w", {"F32", {2}, f32_bytes({1})}}};
  try {
    save_safetensors(path("model.safetensors"), bad);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[safetensors] '" + path("model.safetensors") +
                                         "': tensor 'w' has 4 bytes of data but shape [2] of F32 needs 8");
  }
  EXPECT_EQ(read_all(path("model.safetensors")), before);
  EXPECT_EQ(files_in_dir(), 1u);
}

TEST_F(SafetensorsTest, AtomicWriterCleansUpWhenAbandoned) {
  const std::string file = path("trainer_state.json");
  write_file_atomically(file, "{\"global_step\": 1}\n");
  EXPECT_EQ(read_all(file), "{\"global_step\": 1}\n");
  write_file_atomically(file, "{\"global_step\": 2}\n");
  EXPECT_EQ(read_all(file), "{\"global_step\": 2}\n");

  try {
    AtomicFileWriter writer(file);
    writer.write(std::string_view("{\"global_step\": 3"));
    EXPECT_TRUE(fs::exists(writer.temp_path()));
    throw std::runtime_error("interrupted");
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(fs::exists(atomic_temp_path(file)));
  EXPECT_EQ(read_all(file), "{\"global_step\": 2}\n");
  EXPECT_EQ(files_in_dir(), 1u);

  EXPECT_THROW(write_file_atomically(path("missing/x.json"), "{}"), Error);
  EXPECT_EQ(files_in_dir(), 1u);
}

}  // namespace
}  // namespace lazytrain::train
