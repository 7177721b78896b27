// PersistentCache: an on-disk, content-addressed store of compiled artifacts
// (e.g. the CPU backend's .so bytes), shared by concurrent processes.
//
// Keys are hex digests made with make_key(graph hash, backend, compiler
// version, flags, ...). An entry lives at <dir>/<key[0:2]>/<key>.bin:
//
//   offset  size  field (integers little-endian)
//        0     8  magic "LZTCACHE"
//        8     4  format version (kFormatVersion)
//       12     4  key length in bytes (K)
//       16     8  payload length in bytes (N)
//       24     4  CRC32C (Castagnoli) of key bytes followed by payload bytes
//       28     4  reserved, 0
//       32     K  key (must equal the file's key)
//     32+K     N  payload
//
// put() writes a temp file unique per process and thread in the entry's
// folder, fsyncs it and renames it over the entry, so readers see either the
// old entry, the new one or none; concurrent writers of one key are safe (last
// rename wins). get() validates everything above; an invalid entry (bad magic
// or version, size mismatch, wrong key, checksum mismatch) is deleted and
// reported as a miss.
//
// Counters (runtime/metrics.h): PersistentCacheHit, PersistentCacheMiss (every
// get that returns nullopt), PersistentCacheCorrupt (invalid entries found),
// PersistentCacheWriteError (failed puts).
//
// Errors: the constructor throws lazytrain::Error
// "[PersistentCache] '<dir>': ..." if the directory cannot be created or
// written. After construction I/O never throws (a cache must not break
// training): get() misses, put() returns false. A malformed key (empty, shorter
// than 2 characters, longer than 128, or not [0-9A-Za-z_-]) is misuse and
// throws lazytrain::Error.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace lazytrain::runtime {

class PersistentCache {
 public:
  static constexpr uint32_t kFormatVersion = 1;
  static constexpr size_t kHeaderSize = 32;  // bytes before the key

  // Creates `directory` (and parents) if needed and checks it is writable.
  explicit PersistentCache(std::string directory);

  // A stable 32-hex-character digest (two independent 64-bit hashes) of the
  // parts. Each part is length-prefixed, so {"ab","c"} != {"a","bc"}. The
  // result never changes between runs, builds or machines.
  static std::string make_key(std::initializer_list<std::string_view> parts);

  // The stored bytes of `key`, or nullopt on a miss (absent, unreadable or
  // invalid entry; invalid entries are deleted).
  std::optional<std::string> get(const std::string& key);

  // Stores `bytes` under `key` atomically. Returns false (leaving no temp
  // file) if it could not be written.
  bool put(const std::string& key, std::string_view bytes);

  // The entry's file: <dir>/<key[0:2]>/<key>.bin.
  std::string path_for(const std::string& key) const;

  const std::string& directory() const { return directory_; }

  // CRC32C (Castagnoli, as iSCSI/ext4) of `data` continuing from `crc` (0 to
  // start), the entries' checksum:
  // checksum("123456789") == 0xE3069283.
  static uint32_t checksum(std::string_view data, uint32_t crc = 0);

 private:
  std::string directory_;
};

}  // namespace lazytrain::runtime
