// Releasing long chains of shared ownership without recursion.
//
// A lazy IR node owns its operands, an autograd GradFn owns the GradFns of its
// inputs (and closures holding tensors): a chain of a million ops is a chain of
// a million nested destructors, which overflows the stack when its head is
// released. A destructor that calls `release_iteratively(std::move(children))`
// instead of letting its members go hands them to a per-thread queue: the
// outermost call drains the queue one value at a time, and a destructor that
// runs during the drain only enqueues. Stack depth stays constant whatever the
// chain's length.
#pragma once

#include <memory>
#include <utility>
#include <vector>

namespace lazytrain {

namespace detail {

struct ReleasedValue {
  virtual ~ReleasedValue() = default;
};

template <typename T>
struct ReleasedValueOf final : ReleasedValue {
  explicit ReleasedValueOf(T&& v) : value(std::move(v)) {}
  T value;
};

struct ReleaseQueue {
  std::vector<std::unique_ptr<ReleasedValue>> pending;
  bool draining = false;
};

inline ReleaseQueue& release_queue() {
  thread_local ReleaseQueue queue;
  return queue;
}

}  // namespace detail

// Destroys `value` (moved in) now, or, when called from a destructor that is
// itself being run by an outer release_iteratively on this thread, as soon as
// that outer call's loop reaches it. Never throws (T's destructor must not).
template <typename T>
void release_iteratively(T&& value) {
  detail::ReleaseQueue& queue = detail::release_queue();
  queue.pending.push_back(std::make_unique<detail::ReleasedValueOf<std::decay_t<T>>>(std::move(value)));
  if (queue.draining) return;
  queue.draining = true;
  while (!queue.pending.empty()) {
    std::unique_ptr<detail::ReleasedValue> next = std::move(queue.pending.back());
    queue.pending.pop_back();
    next.reset();  // may enqueue more
  }
  queue.draining = false;
}

}  // namespace lazytrain
