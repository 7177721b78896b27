#include "data/tf_example.h"

#include "core/error.h"

// The protobuf wire format of proto/tensorflow/example.proto, written out by hand:
// Debian's libsentencepiece embeds (and exports) its own protobuf 3.14 runtime,
// which cannot share a process with libprotobuf 3.21, and lazytrain needs both
// SentencePiece and tf.train.Example in one process. tests/proto/ checks these
// bytes against libprotobuf's serializer of the same .proto, in a test binary
// without SentencePiece.
namespace lazytrain::data {

namespace {

// Wire types.
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_tag(std::string& out, int field, int wire_type) { put_varint(out, static_cast<uint64_t>(field << 3 | wire_type)); }

void put_bytes(std::string& out, int field, std::string_view bytes) {
  put_tag(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

// Reads one message's fields; throws a message-less ParseError on malformed input.
struct ParseError {};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool done() const { return pos_ >= in_.size(); }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= in_.size()) throw ParseError{};
      const auto b = static_cast<unsigned char>(in_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    throw ParseError{};
  }

  // The next field: its number and wire type.
  std::pair<int, int> tag() {
    const uint64_t t = varint();
    if ((t >> 3) == 0 || (t >> 3) > (1u << 29)) throw ParseError{};
    return {static_cast<int>(t >> 3), static_cast<int>(t & 7)};
  }

  std::string_view bytes() {
    const uint64_t n = varint();
    if (n > in_.size() - pos_) throw ParseError{};
    std::string_view b = in_.substr(pos_, n);
    pos_ += n;
    return b;
  }

  void skip(int wire_type) {
    switch (wire_type) {
      case kVarint: varint(); break;
      case kFixed64: advance(8); break;
      case kLengthDelimited: bytes(); break;
      case kFixed32: advance(4); break;
      default: throw ParseError{};  // groups (3, 4) are not in this schema
    }
  }

 private:
  void advance(size_t n) {
    if (n > in_.size() - pos_) throw ParseError{};
    pos_ += n;
  }
  std::string_view in_;
  size_t pos_ = 0;
};

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
