#include "runtime/local_rendezvous.h"

#include <chrono>

#include "core/error.h"
#include "runtime/profiler.h"

namespace lazytrain::runtime {

namespace {

struct AbortState {
  std::mutex mutex;
  std::string reason;
  std::atomic<bool> set{false};
};
AbortState& abort_state() {
  static AbortState* state = new AbortState();  // never destroyed: replica threads may outlive statics
  return *state;
}

// How often a wait looks at the process-wide abort (a replica that raised).
constexpr auto kAbortPollInterval = std::chrono::milliseconds(50);

}  // namespace

void set_collective_abort(const std::string& reason) {
  AbortState& s = abort_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.set.load()) return;  // the first failure is the one worth reporting
  s.reason = reason;
  s.set.store(true);
}

void clear_collective_abort() {
  AbortState& s = abort_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.reason.clear();
  s.set.store(false);
}

void throw_if_collective_aborted(const std::string& what) {
  AbortState& s = abort_state();
  if (!s.set.load()) return;
  std::lock_guard<std::mutex> lock(s.mutex);
  throw Error("[" + what + "] " + s.reason);
}

LocalRendezvous::LocalRendezvous(std::vector<int64_t> members)
    : members_(std::move(members)), slots_(members_.size()), arrived_(members_.size(), false) {}

const std::vector<LocalRendezvous::Slot>& LocalRendezvous::arrive(int index, const Slot& slot, const std::string& what,
                                                                  double timeout_seconds) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slots_[static_cast<size_t>(index)] = slot;
  }
  sync(index, what, timeout_seconds);
  return slots_;
}

void LocalRendezvous::sync(int index, const std::string& what, double timeout_seconds) {
  throw_if_collective_aborted(what);
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t generation = generation_;
  arrived_[static_cast<size_t>(index)] = true;
  if (++count_ == size()) {
    count_ = 0;
    arrived_.assign(arrived_.size(), false);
    ++generation_;
    cv_.notify_all();
    return;
  }
  // The last to arrive waits for nobody; the others wait here (a "wait" event).
  TraceMe trace("wait", "replicas meet");
  if (trace) trace.arg("collective", what).arg("replicas", static_cast<int64_t>(size()));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (generation_ == generation) {
    cv_.wait_for(lock, kAbortPollInterval);
    if (generation_ != generation) break;
    if (abort_state().set.load()) {
      lock.unlock();
      throw_if_collective_aborted(what);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string missing;
      int missing_count = 0;
      for (size_t i = 0; i < arrived_.size(); ++i) {
        if (arrived_[i]) continue;
        missing += (missing.empty() ? "" : ", ") + std::to_string(members_[i]);
        ++missing_count;
      }
      std::string message = "replica " + std::to_string(members_[static_cast<size_t>(index)]) + " waited " +
                            std::to_string(static_cast<int64_t>(timeout_seconds)) + " s (collective_timeout) for replica" +
                            (missing_count > 1 ? "s " : " ") + missing + " of " + std::to_string(size()) +
                            ": it died, raised or never arrived";
      lock.unlock();
      set_collective_abort(message);
      throw Error("[" + what + "] " + message);
    }
  }
}

}  // namespace lazytrain::runtime
