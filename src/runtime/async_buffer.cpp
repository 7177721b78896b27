#include "runtime/async_buffer.h"

#include "core/error.h"
#include "runtime/profiler.h"

namespace lazytrain::runtime {

AsyncBuffer::AsyncBuffer(Shape shape, DType dtype, Device device) : shape_(std::move(shape)), dtype_(dtype), device_(std::move(device)) {}

AsyncBuffer::AsyncBuffer(Buffer ready)
    : shape_(ready.shape()), dtype_(ready.dtype()), device_(ready.device()), done_(true), value_(std::move(ready)) {}

void AsyncBuffer::set(Buffer value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    check(!done_, "AsyncBuffer", "value set twice");
    check(value.device() == device_, "AsyncBuffer", "a value on " + value.device().to_string() + " for a buffer of " + device_.to_string());
    value_ = std::move(value);
    done_ = true;
  }
  cv_.notify_all();
}

void AsyncBuffer::set_error(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    check(!done_, "AsyncBuffer", "value failed after it was set");
    error_ = std::move(error);
    done_ = true;
  }
  cv_.notify_all();
}

bool AsyncBuffer::ready() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

const Buffer& AsyncBuffer::get() const {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!done_) {  // a read that waits for its execution
    TraceMe trace("wait", "wait for execution");
    if (trace) trace.arg("shape", xla_name(dtype_) + shape_str(shape_)).arg("device", device_.to_string());
    cv_.wait(lock, [&] { return done_; });
  }
  if (error_) std::rethrow_exception(error_);
  return value_;
}

}  // namespace lazytrain::runtime
