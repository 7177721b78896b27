// TensorBoard event files, as torch.utils.tensorboard.SummaryWriter and
// TensorFlow write them, so that `tensorboard --logdir <log_dir>` shows them.
//
// A file is a TFRecord file (data/tfrecord.h framing) whose records are
// serialized tensorflow.Event messages (TensorFlow's published
// tensorflow/core/util/event.proto and tensorflow/core/framework/summary.proto;
// our copy of the fields we write is proto/tensorboard/). The first record is
// Event{wall_time, file_version: "brain.Event:2"}; each scalar is
// Event{wall_time, step, summary{value{tag, simple_value}}}.
// The messages are encoded by hand (core/protobuf_wire.h says why);
// tests/train/tensorboard_events_test.py parses them with protobuf's own code.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace lazytrain::train {

// The file version record that opens every event file.
inline constexpr const char* kEventFileVersion = "brain.Event:2";

// A serialized Event{wall_time, file_version}.
std::string file_version_event(double wall_time);

// A serialized Event{wall_time, step, summary{value{tag, simple_value}}}.
// Fields holding proto3 defaults (step 0, wall_time +0.0) are omitted, as
// protobuf omits them, so the bytes equal protobuf's serialization.
std::string scalar_event(const std::string& tag, float simple_value, int64_t step, double wall_time);

// The current time in seconds since the Unix epoch (Event.wall_time's unit).
double unix_time_now();

// Writes one event file in `log_dir`, named as TensorBoard's EventFileWriter
// names it: events.out.tfevents.<unix seconds, 10 digits>.<hostname>.<pid>.<n><filename_suffix>,
// where n counts the writers this process has opened (0, 1, ...).
//
// The file is append-only: scalars are buffered in memory and written as whole
// records when max_queue of them are pending, when flush_secs have passed since
// the last flush (checked at each add_scalar; there is no background thread),
// and at flush() and close(). A crash loses at most the buffered scalars and
// can truncate only the last record, which readers skip; earlier records stay whole.
//
// Every error (the directory cannot be created, the file cannot be created,
// a write fails) is one lazytrain::Error naming the directory or file, e.g.
//   "[SummaryWriter] 'runs/x/events.out.tfevents....': write failed (No space left on device)".
// Not thread-safe: one thread writes (the Trainer's).
class SummaryWriter {
 public:
  // Creates `log_dir` (and its parents) if missing, creates the event file and
  // writes and flushes its file version record, so a reader sees the file at once.
  explicit SummaryWriter(const std::string& log_dir, int max_queue = 10, double flush_secs = 120,
                         const std::string& filename_suffix = "");
  // Closes the file; an error here is printed as a warning, never thrown.
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  // Logs `scalar_value` under `tag` (e.g. "train/loss") at `global_step`.
  // The value is stored as a float32 (Summary.Value.simple_value), as PyTorch
  // does; `walltime` is seconds since the Unix epoch, the current time when absent.
  // Throws Error after close(), or when a write fails.
  void add_scalar(const std::string& tag, double scalar_value, int64_t global_step = 0,
                  std::optional<double> walltime = std::nullopt);

  // Writes the buffered records to the file (visible to readers; not fsynced).
  void flush();
  // Flushes, fsyncs and closes the file. Later calls do nothing.
  void close();

  const std::string& get_logdir() const { return log_dir_; }
  // The event file's path.
  const std::string& path() const { return path_; }

 private:
  void append(const std::string& event);
  [[noreturn]] void fail(const std::string& what, int err) const;

  std::string log_dir_;
  std::string path_;
  int max_queue_;
  std::chrono::steady_clock::duration flush_interval_;
  std::chrono::steady_clock::time_point last_flush_;
  std::string pending_;  // framed records not yet written
  int pending_records_ = 0;
  int fd_ = -1;
};

}  // namespace lazytrain::train
