#include "train/tensorboard.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "core/protobuf_wire.h"
#include "data/tfrecord.h"

namespace lazytrain::train {

namespace {

namespace wire = protobuf_wire;

// Field numbers of tensorflow.Event and tensorflow.Summary (proto/tensorboard/).
constexpr int kWallTimeField = 1, kStepField = 2, kFileVersionField = 3, kSummaryField = 5;  // Event
constexpr int kValueField = 1;                                                               // Summary
constexpr int kTagField = 1, kSimpleValueField = 2;                                          // Summary.Value

// Event.wall_time and Event.step, which proto3 omits when they hold their default.
std::string event_header(double wall_time, int64_t step) {
  std::string out;
  if (std::bit_cast<uint64_t>(wall_time) != 0) wire::put_double(out, kWallTimeField, wall_time);
  if (step != 0) wire::put_int64(out, kStepField, step);
  return out;
}

std::string hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

// Writers opened by this process: the last part of the file name, so two
// writers opened in the same second get different files.
std::atomic<int> writers_opened{0};

}  // namespace

std::string file_version_event(double wall_time) {
  std::string out = event_header(wall_time, 0);
  wire::put_bytes(out, kFileVersionField, kEventFileVersion);
  return out;
}

std::string scalar_event(const std::string& tag, float simple_value, int64_t step, double wall_time) {
  std::string value;
  if (!tag.empty()) wire::put_bytes(value, kTagField, tag);
  wire::put_float(value, kSimpleValueField, simple_value);  // a oneof member: written even when 0
  std::string summary;
  wire::put_bytes(summary, kValueField, value);
  std::string out = event_header(wall_time, step);
  wire::put_bytes(out, kSummaryField, summary);
  return out;
}

double unix_time_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

SummaryWriter::SummaryWriter(const std::string& log_dir, int max_queue, double flush_secs, const std::string& filename_suffix)
    : log_dir_(log_dir),
      max_queue_(max_queue),
      flush_interval_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(flush_secs))),
      last_flush_(std::chrono::steady_clock::now()) {
  std::error_code ec;
  std::filesystem::create_directories(log_dir_, ec);
  if (ec) throw Error("[SummaryWriter] '" + log_dir_ + "': cannot create the log directory (" + ec.message() + ")");
  const double now = unix_time_now();
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%010lld", static_cast<long long>(now));
  path_ = (std::filesystem::path(log_dir_) / ("events.out.tfevents." + std::string(seconds) + "." + hostname() + "." +
                                              std::to_string(::getpid()) + "." + std::to_string(writers_opened++) +
                                              filename_suffix))
              .string();
  // O_EXCL: never append to (or truncate) another writer's file.
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot create the event file", errno);
  append(file_version_event(now));
  flush();
}

SummaryWriter::~SummaryWriter() {
  try {
    close();
  } catch (const Error& e) {
    std::fprintf(stderr, "warning: %s\n", e.what());
  }
}

void SummaryWriter::fail(const std::string& what, int err) const {
  throw Error("[SummaryWriter] '" + path_ + "': " + what + " (" + std::strerror(err) + ")");
}

void SummaryWriter::add_scalar(const std::string& tag, double scalar_value, int64_t global_step, std::optional<double> walltime) {
  if (fd_ < 0) throw Error("[SummaryWriter] '" + path_ + "': add_scalar('" + tag + "') after close()");
  append(scalar_event(tag, static_cast<float>(scalar_value), global_step, walltime ? *walltime : unix_time_now()));
  if (pending_records_ >= max_queue_ || std::chrono::steady_clock::now() - last_flush_ >= flush_interval_) flush();
}

void SummaryWriter::append(const std::string& event) {
  pending_ += data::tfrecord_frame(event);
  ++pending_records_;
}

void SummaryWriter::flush() {
  if (fd_ < 0) return;
  size_t done = 0;
  while (done < pending_.size()) {
    const ssize_t n = ::write(fd_, pending_.data() + done, pending_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      pending_.erase(0, done);  // what was written stays written; a retry writes the rest
      fail("write failed", err);
    }
    done += static_cast<size_t>(n);
  }
  pending_.clear();
  pending_records_ = 0;
  last_flush_ = std::chrono::steady_clock::now();
}

void SummaryWriter::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  try {
    flush();
  } catch (const Error&) {
    fd_ = -1;  // closed even when the last write failed: a later close() does nothing
    ::close(fd);
    throw;
  }
  fd_ = -1;
  const int sync_err = ::fsync(fd) == 0 ? 0 : errno;
  const int close_err = ::close(fd) == 0 ? 0 : errno;
  if (sync_err != 0) fail("fsync failed", sync_err);
  if (close_err != 0) fail("close failed", close_err);
}

}  // namespace lazytrain::train
