#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace lazytrain {

std::string atomic_temp_path(const std::string& path) {
  return path + ".tmp." + std::to_string(static_cast<long long>(::getpid()));
}

AtomicFileWriter::AtomicFileWriter(std::string path, std::string op)
    : path_(std::move(path)), temp_path_(atomic_temp_path(path_)), op_(std::move(op)) {
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    int err = errno;
    throw Error("[" + op_ + "] '" + path_ + "': cannot create temporary file '" + temp_path_ + "' (" +
                std::strerror(err) + "); expected a writable directory");
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) discard();
}

void AtomicFileWriter::discard() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::fail(const std::string& what, int err) {
  discard();
  committed_ = true;  // nothing left to clean up
  throw Error("[" + op_ + "] '" + path_ + "': " + what + " (" + std::strerror(err) + "); nothing was written");
}

void AtomicFileWriter::write(const void* data, size_t size) {
  if (fd_ < 0) throw Error("[" + op_ + "] '" + path_ + "': write after commit or failure");
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write temporary file '" + temp_path_ + "'", errno);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicFileWriter::commit() {
  if (fd_ < 0) throw Error("[" + op_ + "] '" + path_ + "': commit after commit or failure");
  if (::fsync(fd_) != 0) fail("cannot fsync temporary file '" + temp_path_ + "'", errno);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot close temporary file '" + temp_path_ + "'", errno);
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0)
    fail("cannot rename temporary file '" + temp_path_ + "' to the final name", errno);
  committed_ = true;
  // Make the rename durable; best effort (some filesystems refuse fsync on directories).
  std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  if (dir.empty()) dir = ".";
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  AtomicFileWriter writer(path);
  writer.write(contents);
  writer.commit();
}

}  // namespace lazytrain
