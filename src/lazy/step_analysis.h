// Per-step analysis of what a device did between two mark_step()s (PyTorch/
// XLA's PT_XLA_DEBUG execution analysis): graphs compiled, graphs executed and
// why, and every transfer to the host with the read that forced it. A
// `loss.item()` each step shows up as "1 host transfer: item() at train.cpp:57";
// a read that ran a graph before mark_step says so.
//
// Always recorded (a few counters a step); printed one line a step on stderr
// when enabled (--debug_graphs, set_step_analysis(true)).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/op_location.h"
#include "runtime/device.h"

namespace lazytrain::lazy {

struct HostTransfer {
  std::string read;              // "item()", "to_vector()", "to_literal()"
  OpLocation where;    // the user's call
  bool ran_graph = false;        // the read had to run pending ops first
};

struct StepRecord {
  int64_t step = 0;              // this device's mark_step count, from 1
  int64_t compiles = 0;          // graphs compiled (not found in the cache)
  int64_t executions = 0;        // graphs executed
  int64_t eager_ops = 0;         // of which single ops of the eager modes
  int64_t largest_graph = 0;     // IR nodes of the largest graph executed
  std::vector<HostTransfer> transfers;
};

// Prints each finished step's line on stderr (a step is what one mark_step()
// closes: a gradient-accumulation micro-batch, an evaluation batch): "[mark_step 3 on cpu:0] 0 compiles,
// 2 executions (largest 1830 nodes), 1 host transfer: item() at train.cpp:57 (ran a graph before mark_step)".
void set_step_analysis(bool enabled);
bool step_analysis();

// Recording (the GraphExecutor and the tensor layer call these).
void note_execution(const runtime::Device& device, bool compiled, bool eager_op, int64_t nodes);
void note_host_transfer(const runtime::Device& device, const std::string& read, const OpLocation& where, bool ran_graph);
// Closes the device's current step (mark_step) and returns it.
StepRecord end_step(const runtime::Device& device);

// The device's step in progress (since its last mark_step) and the last
// finished ones (up to 16, oldest first).
StepRecord current_step(const runtime::Device& device);
std::vector<StepRecord> recent_steps(const runtime::Device& device);
// One line describing `record` (what set_step_analysis prints).
std::string describe(const StepRecord& record, const runtime::Device& device);

}  // namespace lazytrain::lazy
