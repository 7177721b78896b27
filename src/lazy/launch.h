// Launch: puts a compiled graph's execution on its device's queue
// (runtime::ExecutionQueue), the part of the lazy runtime between the
// computation cache and the device (DESIGN.md, "The execution model"). It
// numbers the execution in the device's context (lazy/device_context.h),
// donates the buffers it may, turns a failure into the outputs' error and the
// device's unreported failure, keeps a failed step's parameters where the
// execution did not overwrite them, and runs an SPMD program on every device
// of this process. A backend plugs in through backend::Executable alone.
#pragma once

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "backend/compiler.h"
#include "core/op_location.h"
#include "lazy/graph_lowering.h"
#include "lazy/lazy_tensor.h"
#include "runtime/async_buffer.h"
#include "runtime/device.h"

namespace lazytrain::lazy {

// Enqueues one execution; fills `results` (pending) and numbers it for errors.
// `locations`: the running trace's op locations by IR position, which an
// execution error names (null: the module's own metadata). When it fails,
// result i takes argument keep_on_failure[i]'s value, where that is >= 0 and
// the execution had not overwritten it, and fails otherwise.
// Returns (taking it) the failure of an earlier execution not reported yet,
// for the caller to throw once its own results are in place.
std::exception_ptr launch(const std::shared_ptr<backend::Executable>& executable, std::vector<std::shared_ptr<runtime::AsyncBuffer>> arguments,
                          std::vector<bool> donated, const std::vector<std::shared_ptr<runtime::AsyncBuffer>>& results,
                          const runtime::Device& device, const std::string& what,
                          std::shared_ptr<const std::vector<OpLocation>> locations = nullptr, std::vector<int> keep_on_failure = {});

// launch() of an SPMD-partitioned executable (module num_partitions > 1) on
// every device of this process, each with its tiles of the sharded inputs
// (and the whole of the others); appends to `data_nodes` one device-data
// node per output: sharded data for a tiled output, this device's copy of
// a replicated one. Nothing is donated. Returns the earliest unreported
// failure of those devices, as launch() does.
std::exception_ptr launch_spmd(const std::shared_ptr<backend::Executable>& executable, const GraphSignature& signature,
                               const std::vector<const Node*>& outputs, const runtime::Device& device, const std::string& what,
                               std::shared_ptr<const std::vector<OpLocation>> locations, std::vector<NodePtr>& data_nodes);

// For each output, the argument that holds its tensors' value from before
// their pending updates (LazyTensor::committed_data), or -1: a parameter the
// graph updates in place, which keeps its old value if the execution fails.
// -1 too where the tensors of one output disagree or hold none. `pending`:
// the synced tensors, `tensor_output`: each one's output index.
std::vector<int> committed_arguments(const std::vector<LazyTensor*>& pending, const std::vector<size_t>& tensor_output, size_t outputs,
                                     const std::vector<std::shared_ptr<runtime::AsyncBuffer>>& arguments);

}  // namespace lazytrain::lazy
