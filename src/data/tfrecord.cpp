#include "data/tfrecord.h"

#include <cstdio>

#include "core/crc32c.h"
#include "core/error.h"

namespace lazytrain::data {

namespace {

constexpr uint32_t kMaskDelta = 0xa282ead8u;

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint64_t get_le(const char* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}

std::string hex(uint32_t v) {
  char b[11];
  std::snprintf(b, sizeof(b), "0x%08x", v);
  return b;
}

}  // namespace

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + kMaskDelta;
}

std::string tfrecord_frame(std::string_view record) {
  std::string out;
  out.reserve(record.size() + 16);
  put_le(out, record.size(), 8);
  put_le(out, masked_crc32c(std::string_view(out.data(), 8)), 4);
  out.append(record);
  put_le(out, masked_crc32c(record), 4);
  return out;
}

TFRecordWriter::TFRecordWriter(const std::string& path) : file_(path, "TFRecordWriter") {}

void TFRecordWriter::write(std::string_view record) {
  file_.write(tfrecord_frame(record));
  ++records_;
}

void TFRecordWriter::close() { file_.commit(); }

TFRecordReader::TFRecordReader(std::string path, bool skip_corrupt)
    : path_(std::move(path)), skip_corrupt_(skip_corrupt), in_(path_, std::ios::binary) {
  if (!in_) throw Error("[TFRecordReader] '" + path_ + "': cannot open the file");
}

void TFRecordReader::fail(const std::string& what) const {
  throw Error("[TFRecordReader] '" + path_ + "': record " + std::to_string(index_) + " (byte offset " + std::to_string(record_offset_) +
              "): " + what);
}

std::optional<std::string> TFRecordReader::next() {
  while (!ended_) {
    record_offset_ = offset_;
    char header[12];
    in_.read(header, 12);
    const std::streamsize got = in_.gcount();
    if (got == 0) {
      ended_ = true;
      return std::nullopt;
    }
    // A problem that loses the framing ends the file (when skipping) or throws.
    auto lost = [&](const std::string& what) -> std::optional<std::string> {
      if (!skip_corrupt_) fail(what);
      std::fprintf(stderr, "warning: [TFRecordReader] '%s': record %lld (byte offset %lld): %s; skipping the rest of the file\n",
                   path_.c_str(), static_cast<long long>(index_), static_cast<long long>(record_offset_), what.c_str());
      ++skipped_;
      ended_ = true;
      return std::nullopt;
    };
    if (got < 12) return lost("truncated header (" + std::to_string(got) + " of 12 bytes)");
    const uint64_t length = get_le(header, 8);
    const uint32_t length_crc = static_cast<uint32_t>(get_le(header + 8, 4));
    if (masked_crc32c(std::string_view(header, 8)) != length_crc) {
      return lost("length CRC mismatch (stored " + hex(length_crc) + ", computed " + hex(masked_crc32c(std::string_view(header, 8))) + ")");
    }
    std::string data;
    data.resize(length);
    in_.read(data.data(), static_cast<std::streamsize>(length));
    char footer[4];
    if (static_cast<uint64_t>(in_.gcount()) != length || !in_.read(footer, 4)) {
      return lost("truncated record (" + std::to_string(length) + " data bytes and a CRC expected)");
    }
    const uint32_t data_crc = static_cast<uint32_t>(get_le(footer, 4));
    if (masked_crc32c(data) != data_crc) {
      const std::string what = "data CRC mismatch (stored " + hex(data_crc) + ", computed " + hex(masked_crc32c(data)) + ")";
      if (!skip_corrupt_) fail(what);
      std::fprintf(stderr, "warning: [TFRecordReader] '%s': record %lld (byte offset %lld): %s; skipped\n", path_.c_str(),
                   static_cast<long long>(index_), static_cast<long long>(record_offset_), what.c_str());
      ++skipped_;
      ++index_;
      offset_ += 16 + static_cast<int64_t>(length);
      continue;
    }
    ++index_;
    offset_ += 16 + static_cast<int64_t>(length);
    return data;
  }
  return std::nullopt;
}

}  // namespace lazytrain::data
