// The protobuf wire format (https://protobuf.dev/programming-guides/encoding/),
// written and read by hand. lazytrain_lib cannot link libprotobuf: Debian's
// libsentencepiece embeds (and exports) its own protobuf 3.14 runtime, which
// cannot share a process with libprotobuf 3.21. The few messages lazytrain
// writes (tf.train.Example, TensorBoard's Event) are encoded with these helpers,
// and tests hold the bytes to protobuf's own serializer of the .proto files.
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace lazytrain::protobuf_wire {

// Wire types.
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

inline void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

inline void put_tag(std::string& out, int field, int wire_type) {
  put_varint(out, static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type));
}

inline void put_little_endian(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// A length-delimited field: string, bytes or an embedded message.
inline void put_bytes(std::string& out, int field, std::string_view bytes) {
  put_tag(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

// int64 (negative values take ten bytes, as protobuf writes them).
inline void put_int64(std::string& out, int field, int64_t v) {
  put_tag(out, field, kVarint);
  put_varint(out, static_cast<uint64_t>(v));
}

inline void put_double(std::string& out, int field, double v) {
  put_tag(out, field, kFixed64);
  put_little_endian(out, std::bit_cast<uint64_t>(v), 8);
}

inline void put_float(std::string& out, int field, float v) {
  put_tag(out, field, kFixed32);
  put_little_endian(out, std::bit_cast<uint32_t>(v), 4);
}

// Thrown by Reader on malformed input, without a message: the caller knows
// which file and record it was reading and throws the lazytrain::Error.
struct ParseError {};

// Reads one message's fields in order.
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

  uint64_t fixed64() { return little_endian(8); }
  uint32_t fixed32() { return static_cast<uint32_t>(little_endian(4)); }
  double double_value() { return std::bit_cast<double>(fixed64()); }
  float float_value() { return std::bit_cast<float>(fixed32()); }

  void skip(int wire_type) {
    switch (wire_type) {
      case kVarint: varint(); break;
      case kFixed64: little_endian(8); break;
      case kLengthDelimited: bytes(); break;
      case kFixed32: little_endian(4); break;
      default: throw ParseError{};  // groups (3, 4) are in none of our schemas
    }
  }

 private:
  uint64_t little_endian(size_t n) {
    if (n > in_.size() - pos_) throw ParseError{};
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }
  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace lazytrain::protobuf_wire
