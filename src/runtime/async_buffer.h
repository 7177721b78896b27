// AsyncBuffer: a device buffer that may still be being computed. mark_step()
// hands out pending AsyncBuffers for a graph's outputs and returns; the
// execution fills them (or fails them) on the device's execution thread.
// Reading waits until the value is there (Tensor reads time that wait as
// TransferFromDeviceTime, as PyTorch/XLA's reads of device data include waiting
// for the execution that makes them).
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>

#include "runtime/buffer.h"

namespace lazytrain::runtime {

class AsyncBuffer {
 public:
  // A pending value of this shape and dtype, to be computed on `device`.
  AsyncBuffer(Shape shape, DType dtype, Device device);
  // A value that is ready now (host data, constants).
  explicit AsyncBuffer(Buffer ready);

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  const Device& device() const { return device_; }

  // Fulfils a pending value (once; Error if it was already set or failed).
  void set(Buffer value);
  // Fails a pending value: every get() rethrows `error`.
  void set_error(std::exception_ptr error);

  bool ready() const;
  // The value, waiting for it if pending; rethrows the error of a failed execution.
  const Buffer& get() const;

 private:
  Shape shape_;
  DType dtype_;
  Device device_;
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  bool done_ = false;
  Buffer value_;
  std::exception_ptr error_;
};

}  // namespace lazytrain::runtime
