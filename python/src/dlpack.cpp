// Zero-copy DLPack import and export (dlpack.h).
#include "dlpack.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.h"
#include "lazy/ir.h"
#include "lazy/step_analysis.h"
#include "runtime/execution_queue.h"
#include "runtime/metrics.h"
#include "runtime/transfer.h"

namespace lazytrain::python {
namespace {

// ---- keeping a producer alive ----

// The producer's array, held by the storage of the Buffers that alias it.
struct Producer {
  HostArray array;
};

// Releases producers. Dropping an array needs the GIL (nanobind decrefs the
// producer), but the last Buffer over it may go on an execution queue's
// worker (an argument of a finished execution) while the thread holding the
// GIL waits for that very queue: taking the GIL there would deadlock. So a
// thread without the GIL leaves the producer here; the interpreter drops it
// at its next pending call (Py_AddPendingCall takes no GIL), or the next
// import does.
class Releases {
 public:
  static Releases& get() {
    static Releases* releases = new Releases();  // never destroyed: buffers may outlive statics
    return *releases;
  }

  void release(Producer* p) noexcept {
    // After the interpreter ended, the arrays ended with it: nothing to drop.
    if (!Py_IsInitialized() || !nb::is_alive()) return;
    if (PyGILState_Check()) {
      delete p;
      return;
    }
    bool schedule = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      waiting_.push_back(p);
      schedule = !std::exchange(scheduled_, true);
    }
    if (schedule && Py_AddPendingCall(&Releases::pending_call, nullptr) != 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      scheduled_ = false;  // the interpreter's queue is full: the next import drops them
    }
  }

  // Drops the producers left by threads without the GIL. Needs the GIL.
  void drain() noexcept {
    std::vector<Producer*> done;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done.swap(waiting_);
      scheduled_ = false;
    }
    for (Producer* p : done) delete p;
  }

 private:
  static int pending_call(void*) noexcept {
    get().drain();
    return 0;
  }

  std::mutex mutex_;
  std::vector<Producer*> waiting_;
  bool scheduled_ = false;
};

// ---- import ----

// Element strides (DLPack's unit) times the item size.
std::vector<int64_t> byte_strides(const HostArray& a) {
  std::vector<int64_t> strides(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) strides[i] = a.stride(i) * static_cast<int64_t>(a.itemsize());
  return strides;
}

// Row-major and dense: the stride of every dimension of more than one element
// is the product of the sizes after it (a dimension of one may have any stride).
bool c_contiguous(const HostArray& a) {
  int64_t expected = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    const auto n = static_cast<int64_t>(a.shape(i));
    if (n != 1 && a.stride(i) != expected) return false;
    expected *= n;
  }
  return true;
}

// Why `a` cannot be aliased on `device` (empty when it can).
std::string alias_refusal(const HostArray& a, const runtime::Device& device) {
  if (device.kind != "cpu") return "the current device " + device.to_string() + " is not a CPU device";
  if (a.size() == 0) return "the array is empty";
  if (!c_contiguous(a)) return "the array is not C-contiguous";
  const auto address = reinterpret_cast<uintptr_t>(a.data());
  if (address % 64 != 0) return "its data at " + std::to_string(address) + " is not 64-byte aligned (lazytrain's buffer alignment)";
  return "";
}

runtime::Buffer alias(const HostArray& a, const Shape& shape, DType dtype, const runtime::Device& device) {
  std::shared_ptr<void> owner(new Producer{a}, [](void* p) { Releases::get().release(static_cast<Producer*>(p)); });
  runtime::Buffer b =
      runtime::alias_host_memory(const_cast<void*>(a.data()), numel(shape) * itemsize(dtype), shape, dtype, device, std::move(owner));
  static runtime::Counter& aliases = runtime::counter("DlpackInputAliases");
  aliases.add(1);
  return b;
}

runtime::Buffer copy(const HostArray& a, const Shape& shape, DType dtype, const runtime::Device& device) {
  static runtime::Counter& copies = runtime::counter("DlpackInputCopies");
  static runtime::Counter& bytes = runtime::counter("DlpackInputCopyBytes");
  const int64_t nbytes = numel(shape) * itemsize(dtype);
  copies.add(1);
  bytes.add(nbytes);
  if (c_contiguous(a)) return runtime::transfer_to_device(a.data(), nbytes, shape, dtype, device);
  return runtime::transfer_strided_to_device(a.data(), shape, byte_strides(a), dtype, device);
}

// ---- export ----

// Live capsules per exported storage address: their Buffers share the storage
// and do not make it shared with another lazytrain value.
class Exports {
 public:
  static Exports& get() {
    static Exports* exports = new Exports();  // never destroyed: capsules may outlive statics
    return *exports;
  }
  void add(const void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++count_[p];
  }
  void remove(const void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = count_.find(p); it != count_.end() && --it->second == 0) count_.erase(it);
  }
  long count(const void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = count_.find(p);
    return it == count_.end() ? 0 : it->second;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<const void*, long> count_;
};

// Capsule destructors of the exported Buffer (shared, or a copy of its own).
void release_shared_export(void* p) noexcept {
  auto* buffer = static_cast<runtime::Buffer*>(p);
  Exports::get().remove(buffer->raw());
  delete buffer;
}
void release_copied_export(void* p) noexcept { delete static_cast<runtime::Buffer*>(p); }

// `t`'s materialised buffer; without the GIL. A read, as Tensor::to_literal
// records it (lazy/step_analysis.h), without the copy.
runtime::Buffer buffer_of(const Tensor& t, const char* what) {
  t.ir_value();  // a view whose base was written since takes its new value
  const bool ran_graph = t.impl()->has_pending_ir();
  t.impl()->sync();
  lazy::note_host_transfer(t.device(), what, *current_op_location(), ran_graph);
  runtime::ScopedTimer timer("TransferFromDeviceTime");
  return t.impl()->buffer();
}

// Whether a consumer may share `b`, `t`'s materialised value: nothing else in
// lazytrain reads that storage later, so what the consumer writes into it (torch
// accumulating a gradient in place) reaches this tensor only. Its holders must
// be the tensor's device-data node (held by the tensor and `node` here) and
// that node's one Buffer, `b`, and earlier exports' capsules; anything more
// is another value over the same bytes (an output that passes an input
// through, an executable's constant, a detached alias, the scalar cache).
bool may_share(const Tensor& t, const runtime::Buffer& b) {
  if (b.device().kind != "cpu") return false;
  const lazy::NodePtr node = t.impl()->ir_value();
  if (!node->async_data() || node->sharded_data() || node->data().raw() != b.raw()) return false;
  if (node.use_count() > 2) return false;
  return b.use_count() <= 2 + Exports::get().count(b.raw());
}

}  // namespace

Tensor import_array(const HostArray& a, std::optional<bool> copy_wanted) {
  Releases::get().drain();
  const DType dtype = array_dtype(a.dtype(), "from_dlpack");
  Shape shape(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) shape[i] = static_cast<int64_t>(a.shape(i));
  const runtime::Device device = runtime::current_device();
  const std::string refusal = alias_refusal(a, device);
  if (copy_wanted == false && !refusal.empty()) throw nb::buffer_error(("from_dlpack(copy=False): cannot alias the array: " + refusal).c_str());
  // The alias holds the array (a Python reference) from here, made with the GIL.
  runtime::Buffer b = copy_wanted != true && refusal.empty() ? alias(a, shape, dtype, device) : runtime::Buffer();
  PyOp op;  // (the eager modes copy without the GIL)
  if (!b.defined()) b = copy(a, shape, dtype, device);
  return Tensor(lazy::make_device_data(std::move(b)));
}

nb::object export_dlpack(const Tensor& t, std::optional<bool> copy_wanted) {
  check(t.defined(), "Tensor.__dlpack__", "use of an undefined tensor");
  runtime::Buffer b;
  bool shared = false;
  {
    PyWait wait;
    b = buffer_of(t, "__dlpack__");
    shared = copy_wanted != true && may_share(t, b);
    if (shared) {
      // An execution launched earlier may still read it, and the consumer may write it as soon as it has it.
      runtime::execution_queue(b.device()).wait_idle();
    } else if (copy_wanted != false) {
      static runtime::Counter& copies = runtime::counter("DlpackOutputCopies");
      static runtime::Counter& bytes = runtime::counter("DlpackOutputCopyBytes");
      copies.add(1);
      bytes.add(b.nbytes());
      b = runtime::copy_buffer(b);
    }
  }
  if (copy_wanted == false && !shared) {
    throw nb::buffer_error("Tensor.__dlpack__(copy=False): its buffer is shared with another lazytrain value, so only a copy can be exported");
  }
  if (shared) {
    static runtime::Counter& aliases = runtime::counter("DlpackOutputAliases");
    aliases.add(1);
    Exports::get().add(b.raw());
  }
  auto* owner = new runtime::Buffer(std::move(b));
  nb::capsule keep(owner, shared ? &release_shared_export : &release_copied_export);
  std::vector<size_t> shape(owner->shape().begin(), owner->shape().end());
  return nb::cast(nb::ndarray<>(owner->raw(), shape.size(), shape.data(), keep, nullptr, dlpack_dtype(owner->dtype()), nb::device::cpu::value));
}

runtime::Buffer materialised_buffer(const Tensor& t, const char* what) {
  check(t.defined(), what, "use of an undefined tensor");
  PyWait wait;
  return buffer_of(t, what);
}

}  // namespace lazytrain::python
