// lazytrain's hand-written tf.train.Example codec (src/data/tf_example.cpp)
// against libprotobuf's code generated from proto/tensorflow/example.proto:
// the same bytes out (deterministic serialization: map keys sorted), and
// protobuf's messages parsed back, including forms lazytrain never writes
// (unpacked values, unknown fields, empty lists). Runs in its own binary.
#include <gtest/gtest.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "core/error.h"
#include "data/tf_example.h"
#include "proto/tensorflow/example.pb.h"

namespace lazytrain::data {
namespace {

std::string protobuf_bytes(const tensorflow::Example& example) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  example.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

tensorflow::Example protobuf_example(const Int64Features& features) {
  tensorflow::Example example;
  auto* map = example.mutable_features()->mutable_feature();
  for (const auto& [name, values] : features) {
    auto* list = (*map)[name].mutable_int64_list();
    for (int64_t v : values) list->add_value(v);
  }
  return example;
}

TEST(TfExampleProtobuf, SameBytesAsProtobuf) {
  const std::vector<Int64Features> cases = {
      {{"input_ids", {1, 2, 300}}},
      {{"input_ids", {0, -1, INT64_MIN, INT64_MAX, 1LL << 35}}, {"attention_mask", {1, 1, 0, 0, 1}}},
      {{"empty", {}}, {"z", {5}}, {"a", {7}}},
      {}};
  for (const Int64Features& f : cases) {
    EXPECT_EQ(serialize_int64_example(f), protobuf_bytes(protobuf_example(f)));
  }
}

TEST(TfExampleProtobuf, ParsesWhatProtobufWrites) {
  const Int64Features f = {{"input_ids", {3, -4, 1LL << 50}}, {"attention_mask", {1, 0, 1}}};
  EXPECT_EQ(parse_int64_example(protobuf_example(f).SerializeAsString(), "w"), f);
  // Unpacked values (what some writers emit), and an unknown field to skip.
  std::string unpacked = "\x08\x03\x08\x05";  // Int64List: value=3, value=5, not packed
  tensorflow::Int64List list;
  ASSERT_TRUE(list.ParseFromString(unpacked));
  ASSERT_EQ(list.value_size(), 2);
  tensorflow::Example ex;
  *(*ex.mutable_features()->mutable_feature())["ids"].mutable_int64_list() = list;
  std::string bytes = ex.SerializeAsString() + std::string("\x10\x07", 2);  // field 2 varint: unknown to the schema
  EXPECT_EQ(parse_int64_example(bytes, "w").at("ids"), (std::vector<int64_t>{3, 5}));
}

TEST(TfExampleProtobuf, OtherKindsAndGarbageAreErrors) {
  tensorflow::Example ex;
  (*ex.mutable_features()->mutable_feature())["text"].mutable_bytes_list()->add_value("hello");
  EXPECT_THROW(parse_int64_example(ex.SerializeAsString(), "w"), Error);
  tensorflow::Example check;
  EXPECT_FALSE(check.ParseFromString(std::string("\x0a\x7f\x01", 3)));  // protobuf rejects it too
  EXPECT_THROW(parse_int64_example(std::string("\x0a\x7f\x01", 3), "w"), Error);
}

}  // namespace
}  // namespace lazytrain::data
