// The collective stream: where a replica device's asynchronous collectives run
// (HLO's all-gather-start, all-reduce-start, reduce-scatter-start; issue 34).
//
// Each device has one collective thread ("device cpu:0 collectives" in a
// trace), next to its execution thread: a start queues the exchange there and
// returns at once, the execution thread computes on, and the done waits for
// the result. The thread runs its queue in order, so every replica meets the
// others in the same order its program started them (the order the compiler
// fixed, the same on every replica); it runs with its device current, so the
// transports of runtime/collectives.h see the replica that started it. The
// threads are made at a device's first start and live as long as the process
// (never joined: an execution may still wait on one at exit).
#pragma once

#include <functional>
#include <future>

#include "runtime/buffer.h"
#include "runtime/device.h"

namespace lazytrain::runtime {

// Queues `exchange` (a call of all_reduce, all_gather or reduce_scatter with
// what it reads captured by value) on `device`'s collective thread. The
// future's get() returns its result or rethrows its Error (a timeout, an
// abort, a bad replica group). A future that is dropped unread still runs.
std::future<Buffer> start_collective(const Device& device, std::function<Buffer()> exchange);

}  // namespace lazytrain::runtime
