// Graph cutting: where a sync cuts the lazy graph and sends it to the device
// (DESIGN.md, "The execution model"). A sync takes the pending values of the
// synced tensors (mark_step's: every live tensor of the device), annotates a
// laid-out tensor's value with its sharding, hashes the graph they compute
// (lazy/graph_lowering.h), compiles it or finds it (lazy/compile_context.h),
// gives each tensor its pending device value and launches the execution
// (lazy/launch.h), under the device's sync lock (lazy/device_context.h), so a
// device's syncs from several threads cut and launch one at a time.
// lazy_api.h's sync() and sync_live() (mark_step's graph) run here.
//
// Metrics: ExecutedDotFlops; the step analysis (lazy/step_analysis.h) counts
// each execution; the trace (runtime/profiler.h) gets one event per sync.
#pragma once

#include <cstddef>
#include <vector>

#include "lazy/lazy_api.h"
#include "lazy/lazy_tensor.h"
#include "runtime/device.h"

namespace lazytrain::lazy {

// lazy_api.h's sync(): one graph for the pending values of `tensors` (one
// device: Error otherwise); nothing when none is pending. Throws Error for a
// graph that cannot be lowered or compiled, and an earlier execution's
// ExecutionError once, after launching this graph.
void sync_tensors(const std::vector<LazyTensor*>& tensors, const SyncCause& cause);

// lazy_api.h's sync_live(): sync_tensors() of every live tensor of `device`
// with a pending value (collected under the device's sync lock), and `also`
// when it is not registered. Tells the execution mode that every pending value
// of the device was synced (note_graph_cut: fused_eager's next chunk starts empty).
void sync_live_tensors(const runtime::Device& device, const SyncCause& cause, LazyTensor* also);

// A cut graph of more IR nodes than this bound gets a one-line warning on
// stderr, once per process (lazy_api.h's set_graph_size_warning: 0 disables
// it; setting the bound re-arms it). Default kDefaultGraphSizeWarning or
// $LAZYTRAIN_GRAPH_SIZE_WARNING, read at the first use.
void set_graph_size_warning_bound(size_t nodes);
size_t graph_size_warning_bound();

}  // namespace lazytrain::lazy
