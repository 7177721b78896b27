// TFRecord files, TensorFlow's record format (tf.io.TFRecordWriter,
// tf.data.TFRecordDataset), uncompressed. Each record is framed as
//   uint64 length            little endian
//   uint32 masked_crc32c(length bytes)
//   byte   data[length]
//   uint32 masked_crc32c(data)
// where masked_crc32c(x) = ((c >> 15) | (c << 17)) + 0xa282ead8 with c the
// CRC32C of x (tensorflow/core/lib/hash/crc32c.h Mask; the format is
// documented at https://www.tensorflow.org/tutorials/load_data/tfrecord).
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/atomic_file.h"

namespace lazytrain::data {

uint32_t masked_crc32c(std::string_view data);

// The framed bytes of one record.
std::string tfrecord_frame(std::string_view record);

// Writes a TFRecord file atomically: it appears under `path` only on close().
// Errors (cannot create, disk full) throw lazytrain::Error naming the file.
class TFRecordWriter {
 public:
  explicit TFRecordWriter(const std::string& path);
  void write(std::string_view record);
  void close();  // publishes the file; destroying an unclosed writer discards it
  int64_t records() const { return records_; }

 private:
  AtomicFileWriter file_;
  int64_t records_ = 0;
};

// Reads the records of a TFRecord file in order. Every problem is one Error
// naming the file, the record's index and the byte offset where it starts:
//   "[TFRecordReader] 'shard-00001.tfrecord': record 7 (byte offset 3584): data CRC mismatch (...)"
// for a data CRC that does not match, a length CRC that does not match, or a
// truncated record. With skip_corrupt, a record whose data CRC fails is skipped
// (counted in skipped()) and reading goes on; a bad length CRC or a truncated
// record ends the file (the rest cannot be framed), also counted.
class TFRecordReader {
 public:
  // Throws Error when `path` cannot be opened.
  explicit TFRecordReader(std::string path, bool skip_corrupt = false);

  // The next record, or nullopt at the end of the file.
  std::optional<std::string> next();
  // Index of the record next() reads next (records read or skipped so far).
  int64_t index() const { return index_; }
  // Byte offset in the file of the record next() returned last (or is reading).
  int64_t record_offset() const { return record_offset_; }
  int64_t skipped() const { return skipped_; }
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  bool skip_corrupt_;
  std::ifstream in_;
  int64_t index_ = 0;
  int64_t offset_ = 0;         // where the next record starts
  int64_t record_offset_ = 0;  // where the current record starts
  int64_t skipped_ = 0;
  bool ended_ = false;
};

}  // namespace lazytrain::data
