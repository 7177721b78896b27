// SummaryWriter (torch.utils.tensorboard names): the Event bytes, the file name,
// TFRecord framing read back with data::TFRecordReader, buffering and errors.
// tests/train/tensorboard_events_test.py parses the same files with protobuf.
#include "train/tensorboard.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/protobuf_wire.h"
#include "data/tfrecord.h"

namespace lazytrain::train {
namespace {

namespace fs = std::filesystem;
using std::string_literals::operator""s;

// One Event decoded field by field (proto/tensorboard/event.proto numbers).
struct DecodedEvent {
  double wall_time = 0;
  int64_t step = 0;
  std::optional<std::string> file_version;
  std::vector<std::pair<std::string, float>> values;  // summary.value: (tag, simple_value)
};

DecodedEvent decode_event(std::string_view bytes) {
  namespace wire = protobuf_wire;
  DecodedEvent e;
  wire::Reader event(bytes);
  while (!event.done()) {
    auto [field, type] = event.tag();
    if (field == 1 && type == wire::kFixed64) e.wall_time = event.double_value();
    else if (field == 2 && type == wire::kVarint) e.step = static_cast<int64_t>(event.varint());
    else if (field == 3 && type == wire::kLengthDelimited) e.file_version = std::string(event.bytes());
    else if (field == 5 && type == wire::kLengthDelimited) {
      wire::Reader summary(event.bytes());
      while (!summary.done()) {
        auto [sfield, stype] = summary.tag();
        EXPECT_EQ(sfield, 1);
        EXPECT_EQ(stype, wire::kLengthDelimited);
        wire::Reader value(summary.bytes());
        std::string tag;
        std::optional<float> simple_value;
        while (!value.done()) {
          auto [vfield, vtype] = value.tag();
          if (vfield == 1 && vtype == wire::kLengthDelimited) tag = std::string(value.bytes());
          else if (vfield == 2 && vtype == wire::kFixed32) simple_value = value.float_value();
          else ADD_FAILURE() << "unexpected Summary.Value field " << vfield;
        }
        EXPECT_TRUE(simple_value.has_value()) << tag;
        e.values.emplace_back(tag, simple_value.value_or(-1));
      }
    } else {
      ADD_FAILURE() << "unexpected Event field " << field;
      event.skip(type);
    }
  }
  return e;
}

std::vector<std::string> read_records(const std::string& path) {
  data::TFRecordReader reader(path);  // throws on a bad length or data CRC
  std::vector<std::string> records;
  while (auto r = reader.next()) records.push_back(*r);
  return records;
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  return names;
}

class TensorBoard : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("lazytrain_tensorboard_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(TensorBoard, EventBytesAreTheProtobufWireFormat) {
  // wall_time (field 1, fixed64) 1.5, file_version (field 3) "brain.Event:2".
  EXPECT_EQ(file_version_event(1.5), "\x09\x00\x00\x00\x00\x00\x00\xf8\x3f\x1a\x0d"s + "brain.Event:2");
  // wall_time 1700000000.5, step (field 2) 7, summary (field 5) { value (1) {
  // tag (1) "train/loss", simple_value (2, fixed32) 2.5f } }.
  EXPECT_EQ(scalar_event("train/loss", 2.5f, 7, 1700000000.5),
            "\x09\x00\x00\x20\x40\xfc\x54\xd9\x41\x10\x07\x2a\x13\x0a\x11\x0a\x0a"s + "train/loss" + "\x15\x00\x00\x20\x40"s);
  // proto3 defaults are omitted (step 0, wall_time 0); a value of 0 is a oneof
  // member and stays; a negative step is a ten-byte varint.
  EXPECT_EQ(scalar_event("a", 0.0f, 0, 0.0), "\x2a\x0a\x0a\x08\x0a\x01\x61\x15\x00\x00\x00\x00"s);
  EXPECT_EQ(scalar_event("a", 0.0f, -1, 0.0).substr(0, 11), "\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"s);
}

TEST_F(TensorBoard, WritesScalarsThatReadBack) {
  const std::string log_dir = dir_ + "/runs/nested";  // created with its parents
  std::string path;
  const double before = unix_time_now();
  {
    SummaryWriter writer(log_dir);
    EXPECT_EQ(writer.get_logdir(), log_dir);
    path = writer.path();
    writer.add_scalar("train/loss", 2.5, 10);
    writer.add_scalar("train/learning_rate", 5e-5, 10, 1700000000.25);
    writer.add_scalar("eval/accuracy", 1.0 / 3.0, 1LL << 40);
    writer.close();
  }
  const double after = unix_time_now();

  ASSERT_EQ(files_in(log_dir), std::vector<std::string>{fs::path(path).filename().string()});
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  std::smatch m;
  const std::string name = fs::path(path).filename().string();
  ASSERT_TRUE(std::regex_match(name, m, std::regex(R"(events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.(\d+))"))) << name;
  EXPECT_GE(std::stoll(m[1]), static_cast<long long>(before));
  EXPECT_LE(std::stoll(m[1]), static_cast<long long>(after));
  EXPECT_EQ(m[2], std::string(host));
  EXPECT_EQ(std::stoll(m[3]), ::getpid());

  const std::vector<std::string> records = read_records(path);
  ASSERT_EQ(records.size(), 4u);
  const DecodedEvent version = decode_event(records[0]);
  EXPECT_EQ(version.file_version, std::optional<std::string>("brain.Event:2"));
  EXPECT_GE(version.wall_time, before);
  EXPECT_LE(version.wall_time, after);
  EXPECT_EQ(version.step, 0);
  EXPECT_TRUE(version.values.empty());

  const DecodedEvent loss = decode_event(records[1]);
  EXPECT_FALSE(loss.file_version.has_value());
  EXPECT_EQ(loss.step, 10);
  EXPECT_GE(loss.wall_time, version.wall_time);
  EXPECT_LE(loss.wall_time, after);
  EXPECT_EQ(loss.values, (std::vector<std::pair<std::string, float>>{{"train/loss", 2.5f}}));

  const DecodedEvent lr = decode_event(records[2]);
  EXPECT_EQ(lr.step, 10);
  EXPECT_EQ(lr.wall_time, 1700000000.25);
  EXPECT_EQ(lr.values, (std::vector<std::pair<std::string, float>>{{"train/learning_rate", 5e-5f}}));

  const DecodedEvent accuracy = decode_event(records[3]);
  EXPECT_EQ(accuracy.step, 1LL << 40);
  // simple_value is a float32: the double is rounded to nearest.
  EXPECT_EQ(accuracy.values, (std::vector<std::pair<std::string, float>>{{"eval/accuracy", 1.0f / 3.0f}}));
}

TEST_F(TensorBoard, BufferedUntilFlushOrMaxQueue) {
  SummaryWriter writer(dir_, /*max_queue=*/3);
  EXPECT_EQ(read_records(writer.path()).size(), 1u);  // the file version is flushed at once
  writer.add_scalar("train/loss", 1.0, 1);
  writer.add_scalar("train/loss", 0.5, 2);
  EXPECT_EQ(read_records(writer.path()).size(), 1u);
  writer.flush();
  EXPECT_EQ(read_records(writer.path()).size(), 3u);
  writer.add_scalar("train/loss", 0.25, 3);
  writer.add_scalar("train/loss", 0.125, 4);
  EXPECT_EQ(read_records(writer.path()).size(), 3u);
  writer.add_scalar("train/loss", 0.0625, 5);  // the third pending record: written
  const std::vector<std::string> records = read_records(writer.path());
  ASSERT_EQ(records.size(), 6u);
  EXPECT_EQ(decode_event(records[5]).step, 5);
  EXPECT_EQ(decode_event(records[5]).values[0].second, 0.0625f);
}

TEST_F(TensorBoard, FlushSecsZeroWritesEachScalar) {
  SummaryWriter writer(dir_, /*max_queue=*/100, /*flush_secs=*/0);
  writer.add_scalar("eval/loss", 3.0, 1);
  EXPECT_EQ(read_records(writer.path()).size(), 2u);
}

TEST_F(TensorBoard, DestructorClosesAndEachWriterHasItsOwnFile) {
  std::string first, second;
  {
    SummaryWriter a(dir_, 100, 120, ".suffix");
    SummaryWriter b(dir_, 100);
    first = a.path();
    second = b.path();
    a.add_scalar("x", 1.0, 1);
    b.add_scalar("y", 2.0, 2);
  }  // both flushed by their destructors
  EXPECT_NE(first, second);
  EXPECT_TRUE(first.ends_with(".suffix"));
  EXPECT_EQ(files_in(dir_).size(), 2u);
  EXPECT_EQ(decode_event(read_records(first).at(1)).values.at(0).first, "x");
  EXPECT_EQ(decode_event(read_records(second).at(1)).values.at(0).first, "y");
}

TEST_F(TensorBoard, TornLastRecordLeavesEarlierRecordsWhole) {
  std::string path;
  {
    SummaryWriter writer(dir_);
    path = writer.path();
    writer.add_scalar("train/loss", 4.0, 1);
  }
  // What a crash in the middle of a write leaves: half of one more record.
  const std::string torn = data::tfrecord_frame(scalar_event("train/loss", 3.0f, 2, 1.0));
  std::ofstream(path, std::ios::binary | std::ios::app) << torn.substr(0, torn.size() / 2);
  data::TFRecordReader reader(path, /*skip_corrupt=*/true);
  EXPECT_TRUE(decode_event(*reader.next()).file_version.has_value());
  EXPECT_EQ(decode_event(*reader.next()).values.at(0).second, 4.0f);
  EXPECT_FALSE(reader.next().has_value());
  EXPECT_EQ(reader.skipped(), 1);
}

TEST_F(TensorBoard, UncreatableLogDirIsOneErrorNamingIt) {
  fs::create_directories(dir_);
  std::ofstream(dir_ + "/a_file") << "x";
  const std::string log_dir = dir_ + "/a_file/runs";
  try {
    SummaryWriter writer(log_dir);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[SummaryWriter] '" + log_dir + "': cannot create the log directory"), std::string::npos)
        << e.what();
  }
}

TEST_F(TensorBoard, WriteFailureNamesTheFileAndARetryWritesTheRest) {
  SummaryWriter writer(dir_, /*max_queue=*/1000);
  for (int step = 1; step <= 20; ++step) writer.add_scalar("train/loss", 1.0 / step, step);
  // A file size limit makes write() fail part-way (EFBIG; SIGXFSZ ignored meanwhile).
  rlimit old_limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old_limit;
  small.rlim_cur = 300;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  try {
    writer.flush();
  } catch (const Error& e) {
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(message, "[SummaryWriter] '" + writer.path() + "': write failed (File too large)");
  EXPECT_EQ(fs::file_size(writer.path()), 300u);
  writer.close();  // writes what the failed flush left, after the bytes already written
  const std::vector<std::string> records = read_records(writer.path());
  ASSERT_EQ(records.size(), 21u);
  EXPECT_EQ(decode_event(records[20]).step, 20);
  EXPECT_EQ(decode_event(records[20]).values.at(0).second, 1.0f / 20);
}

TEST_F(TensorBoard, AddScalarAfterCloseIsAnError) {
  SummaryWriter writer(dir_);
  writer.close();
  writer.close();  // a second close does nothing
  try {
    writer.add_scalar("train/loss", 1.0, 1);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(writer.path()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("after close()"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lazytrain::train
