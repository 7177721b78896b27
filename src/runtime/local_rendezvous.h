// LocalRendezvous: where the replica threads of one process meet for one
// group's collectives, one round per collective, in program order (the
// shared-memory transport of runtime/collectives.h).
//
// A round: each member publishes a Slot (pointers to its input and output, a
// tag) and waits for the others (arrive), works on the published slots, and
// meets the others again between phases and at the end (sync), so no member
// frees or reuses a buffer another still reads. A wait that outlasts the
// timeout throws Error naming the members that did not arrive, and aborts
// every other wait of the process (the others learn of the failure at once).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/buffer.h"

namespace lazytrain::runtime {

class LocalRendezvous {
 public:
  // What a member shares, owned by the slot (until the member's next round):
  // a member that fails may leave a round while the others still read it.
  struct Slot {
    Buffer in, out;                          // a collective's input and output
    std::shared_ptr<std::vector<char>> scratch;  // what the leader (member 0) shares with the others
    std::shared_ptr<const std::vector<double>> values;  // a host exchange's values
    std::string label;                       // a rendezvous' tag, for errors
    uint64_t tag = 0;
  };

  // `members`: the global ordinals of the members, in group order.
  explicit LocalRendezvous(std::vector<int64_t> members);

  int size() const { return static_cast<int>(members_.size()); }
  // Publishes `slot` as member `index`'s and waits for every member's; returns
  // them (valid until this member's next sync of the round ends the round).
  const std::vector<Slot>& arrive(int index, const Slot& slot, const std::string& what, double timeout_seconds);
  // Waits until every member reached the same sync.
  void sync(int index, const std::string& what, double timeout_seconds);

 private:
  std::vector<int64_t> members_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  std::vector<bool> arrived_;
  int count_ = 0;
  uint64_t generation_ = 0;
};

// The process-wide abort (runtime/collectives.h abort_collectives): every wait
// throws once it is set.
void set_collective_abort(const std::string& reason);
void clear_collective_abort();
// Throws Error("[what] " + reason) when an abort is set.
void throw_if_collective_aborted(const std::string& what);

}  // namespace lazytrain::runtime
