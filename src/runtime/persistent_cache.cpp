// PersistentCache: entry format, atomic writes and validation (see the header).
//
// POSIX I/O (open/read/write/fsync/rename) is used directly so that every
// failure is an errno we can turn into a miss or a `false`, never an exception.
#include "runtime/persistent_cache.h"

#include "core/crc32c.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

#include "core/error.h"
#include "runtime/metrics.h"

namespace lazytrain::runtime {
namespace {

constexpr char kMagic[8] = {'L', 'Z', 'T', 'C', 'A', 'C', 'H', 'E'};
constexpr size_t kMaxKeyLength = 128;

// ---- little-endian encoding -------------------------------------------------

void put_u32(char* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
void put_u64(char* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
uint32_t get_u32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}
uint64_t get_u64(const char* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}

// ---- key hashing ----------------------------------------------------------------

uint64_t fmix64(uint64_t h) {  // MurmurHash3's finalizer
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 33;
  return h;
}

// ---- helpers ------------------------------------------------------------------

Counter& hits() { static Counter& c = counter("PersistentCacheHit"); return c; }
Counter& misses() { static Counter& c = counter("PersistentCacheMiss"); return c; }
Counter& corrupt() { static Counter& c = counter("PersistentCacheCorrupt"); return c; }
Counter& write_errors() { static Counter& c = counter("PersistentCacheWriteError"); return c; }

void check_key(const std::string& key) {
  bool ok = key.size() >= 2 && key.size() <= kMaxKeyLength;
  for (char ch : key) {
    ok = ok && ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                ch == '_' || ch == '-');
  }
  check(ok, "PersistentCache",
        "invalid key '" + key + "': expected 2 to 128 characters of [0-9A-Za-z_-] (use make_key)");
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Reads exactly `size` bytes; false on error or early end of file.
bool read_all(int fd, char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::read(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// "<folder>/.tmp.<stem>.<pid>.<tid>.<n>": unique per process, thread and call.
std::string temp_name(const std::string& folder, const std::string& stem) {
  static std::atomic<uint64_t> sequence{0};
  return folder + "/.tmp." + stem + "." + std::to_string(::getpid()) + "." +
         std::to_string(static_cast<long long>(::gettid())) + "." +
         std::to_string(sequence.fetch_add(1, std::memory_order_relaxed));
}

void fsync_directory(const std::string& folder) {  // best effort: makes the rename durable
  int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

PersistentCache::PersistentCache(std::string directory) : directory_(std::move(directory)) {
  const std::string op = "PersistentCache";
  check(!directory_.empty(), op, "'': the cache directory must not be empty");
  std::error_code ec;
  std::filesystem::create_directories(directory_, ec);
  if (ec || !std::filesystem::is_directory(directory_)) {
    throw Error("[" + op + "] '" + directory_ + "': cannot create directory: " +
                (ec ? ec.message() : std::string("exists and is not a directory")));
  }
  // Probe that entries can be written here (a read-only folder fails now,
  // not silently at every put).
  const std::string probe = temp_name(directory_, "probe");
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error("[" + op + "] '" + directory_ + "': directory is not writable: " +
                std::strerror(errno));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

std::string PersistentCache::make_key(std::initializer_list<std::string_view> parts) {
  // Hash A: FNV-1a 64. Hash B: rotate-xor-multiply with another seed and
  // multiplier. Both run over the same unambiguous encoding (8-byte
  // little-endian length, then the bytes, per part) and are finalized with fmix64.
  uint64_t a = 0xCBF29CE484222325ull;
  uint64_t b = 0x9E3779B97F4A7C15ull;
  auto feed = [&](unsigned char byte) {
    a = (a ^ byte) * 0x100000001B3ull;
    b = ((b << 5) | (b >> 59)) ^ byte;
    b *= 0xD6E8FEB86659FD93ull;
  };
  for (std::string_view part : parts) {
    const uint64_t length = part.size();
    for (int i = 0; i < 8; ++i) feed(static_cast<unsigned char>((length >> (8 * i)) & 0xFF));
    for (char ch : part) feed(static_cast<unsigned char>(ch));
  }
  a = fmix64(a);
  b = fmix64(b ^ parts.size());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string key(32, '0');
  for (int i = 0; i < 16; ++i) {
    key[i] = kHex[(a >> (60 - 4 * i)) & 0xF];
    key[16 + i] = kHex[(b >> (60 - 4 * i)) & 0xF];
  }
  return key;
}

uint32_t PersistentCache::checksum(std::string_view data, uint32_t crc) { return crc32c(data, crc); }

std::string PersistentCache::path_for(const std::string& key) const {
  check_key(key);
  return directory_ + "/" + key.substr(0, 2) + "/" + key + ".bin";
}

std::optional<std::string> PersistentCache::get(const std::string& key) {
  const std::string path = path_for(key);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {  // absent (or unreadable): a plain miss
    misses().add(1);
    return std::nullopt;
  }
  std::optional<std::string> payload;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {  // I/O error: a miss, but the entry may be fine
    ::close(fd);
    misses().add(1);
    return std::nullopt;
  }
  // Validate the header against the file's size before allocating anything.
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint64_t prefix = kHeaderSize + key.size();
  char header[kHeaderSize];
  if (size >= prefix && read_all(fd, header, kHeaderSize) &&
      std::memcmp(header, kMagic, sizeof(kMagic)) == 0 && get_u32(header + 8) == kFormatVersion &&
      get_u32(header + 12) == key.size() && get_u64(header + 16) == size - prefix) {
    std::string stored_key(key.size(), '\0');
    std::string bytes(static_cast<size_t>(size - prefix), '\0');
    if (read_all(fd, stored_key.data(), stored_key.size()) && stored_key == key &&
        read_all(fd, bytes.data(), bytes.size()) &&
        checksum(bytes, checksum(stored_key)) == get_u32(header + 24)) {
      payload = std::move(bytes);
    }
  }
  if (!payload) {
    corrupt().add(1);
    // Delete it, unless a writer has meanwhile renamed a new entry over it.
    struct stat now {};
    if (::stat(path.c_str(), &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev) {
      ::unlink(path.c_str());
    }
  }
  ::close(fd);
  (payload ? hits() : misses()).add(1);
  return payload;
}

bool PersistentCache::put(const std::string& key, std::string_view bytes) {
  const std::string path = path_for(key);
  const std::string folder = directory_ + "/" + key.substr(0, 2);
  if (::mkdir(folder.c_str(), 0777) != 0 && errno != EEXIST) {
    write_errors().add(1);
    return false;
  }
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmp = temp_name(folder, key);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    write_errors().add(1);
    return false;
  }
  std::string head(kHeaderSize, '\0');
  std::memcpy(head.data(), kMagic, 8);
  put_u32(head.data() + 8, kFormatVersion);
  put_u32(head.data() + 12, static_cast<uint32_t>(key.size()));
  put_u64(head.data() + 16, bytes.size());
  put_u32(head.data() + 24, checksum(bytes, checksum(key)));
  head += key;
  bool ok = write_all(fd, head.data(), head.size()) && write_all(fd, bytes.data(), bytes.size()) &&
            ::fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  ok = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    ::unlink(tmp.c_str());
    write_errors().add(1);
    return false;
  }
  fsync_directory(folder);
  return true;
}

}  // namespace lazytrain::runtime
