// Atomic file writes: a file either appears whole under its final name or not
// at all, so a crash or an error never leaves a half-written checkpoint.
//
// Method (POSIX): write "<path>.tmp.<pid>" in the same directory, fsync it,
// rename() it over <path> (atomic within one filesystem), then fsync the
// directory so the rename itself is durable. On any failure the temporary file
// is removed and lazytrain::Error is thrown; an existing <path> is untouched.
//
// Two threads of one process must not write the same <path> at the same time
// (they would share the temporary name); separate processes may.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lazytrain {

// The temporary name used while writing `path`: "<path>.tmp.<pid>".
std::string atomic_temp_path(const std::string& path);

// Streams a file to its temporary name; commit() publishes it under `path`.
// Destroying an uncommitted writer (e.g. during an exception) removes the
// temporary file. Errors name `op` and the file:
//   "[<op>] '<path>': cannot create temporary file '<tmp>' (No such file or directory)"
class AtomicFileWriter {
 public:
  // Creates (truncating) the temporary file. Throws Error if it cannot.
  explicit AtomicFileWriter(std::string path, std::string op = "write_file_atomically");
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Appends `size` bytes. Throws Error on a write failure (e.g. disk full).
  void write(const void* data, size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }

  // fsync + close + rename to the final path + fsync of the directory.
  // Throws Error on failure (the temporary file is removed first).
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  [[noreturn]] void fail(const std::string& what, int err);
  void discard() noexcept;

  std::string path_;
  std::string temp_path_;
  std::string op_;
  int fd_ = -1;
  bool committed_ = false;
};

// Writes `contents` to `path` atomically (see above). Throws lazytrain::Error
// naming the file on failure, leaving no temporary file behind.
void write_file_atomically(const std::string& path, std::string_view contents);

}  // namespace lazytrain
