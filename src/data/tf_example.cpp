#include "data/tf_example.h"

#include "core/error.h"
#include "core/protobuf_wire.h"

// The protobuf wire format of proto/tensorflow/example.proto, written out by hand
// (core/protobuf_wire.h says why). tests/proto/ checks these bytes against
// libprotobuf's serializer of the same .proto, in a test binary without SentencePiece.
namespace lazytrain::data {

using namespace protobuf_wire;

namespace {

// Int64List: field 1, packed or not (parsers must accept both).
std::vector<int64_t> parse_int64_list(std::string_view bytes) {
  std::vector<int64_t> values;
  Reader r(bytes);
  while (!r.done()) {
    auto [field, type] = r.tag();
    if (field == 1 && type == kLengthDelimited) {
      Reader packed(r.bytes());
      while (!packed.done()) values.push_back(static_cast<int64_t>(packed.varint()));
    } else if (field == 1 && type == kVarint) {
      values.push_back(static_cast<int64_t>(r.varint()));
    } else {
      r.skip(type);
    }
  }
  return values;
}

}  // namespace

std::string serialize_int64_example(const Int64Features& features) {
  std::string map_entries;
  for (const auto& [name, values] : features) {
    std::string packed;
    for (int64_t v : values) put_varint(packed, static_cast<uint64_t>(v));
    std::string int64_list;
    if (!packed.empty()) put_bytes(int64_list, 1, packed);  // proto3 omits an empty packed field
    std::string feature;
    put_bytes(feature, 3, int64_list);  // Feature.int64_list (oneof: written even when empty)
    std::string entry;
    put_bytes(entry, 1, name);     // key
    put_bytes(entry, 2, feature);  // value
    put_bytes(map_entries, 1, entry);  // Features.feature
  }
  std::string example;
  put_bytes(example, 1, map_entries);  // Example.features
  return example;
}

Int64Features parse_int64_example(std::string_view bytes, const std::string& where) {
  Int64Features out;
  try {
    Reader example(bytes);
    while (!example.done()) {
      auto [field, type] = example.tag();
      if (field != 1 || type != kLengthDelimited) {
        example.skip(type);
        continue;
      }
      Reader features(example.bytes());
      while (!features.done()) {
        auto [ffield, ftype] = features.tag();
        if (ffield != 1 || ftype != kLengthDelimited) {
          features.skip(ftype);
          continue;
        }
        Reader entry(features.bytes());
        std::string key;
        std::string_view value;
        bool has_value = false;
        while (!entry.done()) {
          auto [efield, etype] = entry.tag();
          if (efield == 1 && etype == kLengthDelimited) key = std::string(entry.bytes());
          else if (efield == 2 && etype == kLengthDelimited) value = entry.bytes(), has_value = true;
          else entry.skip(etype);
        }
        // A Feature: which member of the oneof is set (the last one written wins).
        int kind = 0;
        std::string_view list;
        Reader feature(has_value ? value : std::string_view());
        while (!feature.done()) {
          auto [kfield, ktype] = feature.tag();
          if (kfield >= 1 && kfield <= 3 && ktype == kLengthDelimited) kind = kfield, list = feature.bytes();
          else feature.skip(ktype);
        }
        if (kind != 3) {
          throw Error("[tf.train.Example] " + where + ": feature '" + key + "' is not an int64_list" +
                      (kind == 1 ? " (bytes_list)" : kind == 2 ? " (float_list)" : " (empty)"));
        }
        out[key] = parse_int64_list(list);  // a repeated map key: the last one wins, as in protobuf
      }
    }
  } catch (const ParseError&) {
    throw Error("[tf.train.Example] " + where + ": the record does not parse as a tf.train.Example");
  }
  return out;
}

}  // namespace lazytrain::data
