// TFRecord framing and tf.train.Example payloads: bytes as the published format
// gives them (computed independently, stated here), round trips, and every kind
// of damage reported with the file and the record index, or skipped on request.
#include "data/tfrecord.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/error.h"
#include "data/tf_example.h"

namespace lazytrain::data {
namespace {

namespace fs = std::filesystem;

std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

class TFRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("lazytrain_tfrecord_" + std::to_string(::getpid()))).string();
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // Three records of known content.
  std::string write_three(const std::string& name) {
    TFRecordWriter w(path(name));
    for (int i = 0; i < 3; ++i) w.write(serialize_int64_example({{"input_ids", {i, i + 1, 1000 + i}}}));
    w.close();
    return path(name);
  }

  std::string dir_;
};

// {"input_ids": [1, 2, 300]} as a tf.train.Example is 25 bytes:
//   0a 17 (features) 0a 15 (map entry) 0a 09 "input_ids" 12 08 (Feature) 1a 06 (int64_list)
//   0a 04 (packed values) 01 02 ac 02 (varints 1, 2, 300)
// framed: length 25 as u64 LE, masked CRC32C of those 8 bytes = 0x2808f18b,
// the data, masked CRC32C of the data = 0xe946c023; then an empty record.
TEST_F(TFRecordTest, FileBytesFollowThePublishedFormat) {
  const std::string example = serialize_int64_example({{"input_ids", {1, 2, 300}}});
  EXPECT_EQ(example, unhex("0a170a150a09696e7075745f69647312081a060a040102ac02"));
  TFRecordWriter w(path("known.tfrecord"));
  w.write(example);
  w.write("");
  w.close();
  EXPECT_EQ(w.records(), 2);
  EXPECT_EQ(read_all(path("known.tfrecord")),
            unhex("19000000000000008bf108280a170a150a09696e7075745f69647312081a060a040102ac0223c046e9"
                  "000000000000000029039807d8ea82a2"));
}

TEST_F(TFRecordTest, ExamplesSerializeInKeyOrderAndRoundTrip) {
  const Int64Features features = {{"input_ids", {0, -1, 1LL << 40}}, {"attention_mask", {1, 1, 0}}};
  const std::string bytes = serialize_int64_example(features);
  EXPECT_LT(bytes.find("attention_mask"), bytes.find("input_ids"));
  EXPECT_EQ(parse_int64_example(bytes, "here"), features);
  EXPECT_EQ(serialize_int64_example(features), bytes);
}

TEST_F(TFRecordTest, RecordsRoundTripAndTheWriterIsAtomic) {
  {
    TFRecordWriter unfinished(path("unfinished.tfrecord"));
    unfinished.write("x");
  }  // never closed: nothing appears
  EXPECT_FALSE(fs::exists(path("unfinished.tfrecord")));
  TFRecordReader r(write_three("three.tfrecord"));
  for (int i = 0; i < 3; ++i) {
    std::optional<std::string> rec = r.next();
    ASSERT_TRUE(rec);
    EXPECT_EQ(parse_int64_example(*rec, "r").at("input_ids"), (std::vector<int64_t>{i, i + 1, 1000 + i}));
  }
  EXPECT_FALSE(r.next());
  EXPECT_EQ(r.index(), 3);
}

void expect_error(TFRecordReader& r, int reads_before, const std::string& file, const std::string& record, const std::string& what) {
  for (int i = 0; i < reads_before; ++i) ASSERT_TRUE(r.next());
  try {
    r.next();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'" + file + "'"), std::string::npos) << m;
    EXPECT_NE(m.find(record), std::string::npos) << m;
    EXPECT_NE(m.find(what), std::string::npos) << m;
  }
}

TEST_F(TFRecordTest, CorruptDataIsReportedOrSkipped) {
  std::string bytes = read_all(write_three("bad.tfrecord"));
  const size_t second = bytes.size() / 3;  // records have equal length
  bytes[second + 12 + 3] ^= 0x40;          // a data byte of record 1
  write_all(path("bad.tfrecord"), bytes);
  TFRecordReader strict(path("bad.tfrecord"));
  expect_error(strict, 1, path("bad.tfrecord"), "record 1 (byte offset " + std::to_string(second) + ")", "data CRC mismatch");
  TFRecordReader skipping(path("bad.tfrecord"), true);
  ASSERT_TRUE(skipping.next());
  std::optional<std::string> third = skipping.next();
  ASSERT_TRUE(third);
  EXPECT_EQ(parse_int64_example(*third, "r").at("input_ids")[0], 2);
  EXPECT_FALSE(skipping.next());
  EXPECT_EQ(skipping.skipped(), 1);
}

TEST_F(TFRecordTest, ATruncatedFinalRecordIsReportedOrSkipped) {
  std::string bytes = read_all(write_three("cut.tfrecord"));
  write_all(path("cut.tfrecord"), bytes.substr(0, bytes.size() - 3));
  TFRecordReader strict(path("cut.tfrecord"));
  expect_error(strict, 2, path("cut.tfrecord"), "record 2 (byte offset " + std::to_string(bytes.size() / 3 * 2) + ")", "truncated record");
  TFRecordReader skipping(path("cut.tfrecord"), true);
  EXPECT_TRUE(skipping.next());
  EXPECT_TRUE(skipping.next());
  EXPECT_FALSE(skipping.next());
  EXPECT_EQ(skipping.skipped(), 1);
}

TEST_F(TFRecordTest, ABadLengthCrcEndsTheFile) {
  std::string bytes = read_all(write_three("len.tfrecord"));
  bytes[bytes.size() / 3 + 9] ^= 0x01;  // record 1's length CRC
  write_all(path("len.tfrecord"), bytes);
  TFRecordReader strict(path("len.tfrecord"));
  expect_error(strict, 1, path("len.tfrecord"), "record 1 (byte offset " + std::to_string(bytes.size() / 3) + ")", "length CRC mismatch");
  TFRecordReader skipping(path("len.tfrecord"), true);
  EXPECT_TRUE(skipping.next());
  EXPECT_FALSE(skipping.next());
  EXPECT_EQ(skipping.skipped(), 1);
}

TEST_F(TFRecordTest, ARecordThatIsNotAnExampleNamesWhere) {
  EXPECT_THROW(TFRecordReader(path("missing.tfrecord")), Error);
  try {
    parse_int64_example("\xff\xff\xff", "'a.tfrecord' record 4");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'a.tfrecord' record 4"), std::string::npos);
  }
}

}  // namespace
}  // namespace lazytrain::data
