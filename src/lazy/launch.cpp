#include "lazy/launch.h"

#include <map>
#include <utility>

#include "hlo/hlo_instruction.h"
#include "hlo/op_metadata.h"
#include "lazy/device_context.h"
#include "lazy/lazy_api.h"
#include "lazy/sharded_data.h"
#include "runtime/collectives.h"
#include "runtime/execution_queue.h"
#include "runtime/metrics.h"
#include "runtime/profiler.h"
#include "runtime/transfer.h"

namespace lazytrain::lazy {

std::vector<int> committed_arguments(const std::vector<LazyTensor*>& pending, const std::vector<size_t>& tensor_output, size_t outputs,
                                     const std::vector<std::shared_ptr<runtime::AsyncBuffer>>& arguments) {
  std::unordered_map<const runtime::AsyncBuffer*, int> argument_index;
  for (size_t j = 0; j < arguments.size(); ++j) argument_index.emplace(arguments[j].get(), static_cast<int>(j));
  constexpr int kUnset = -2;
  std::vector<int> keep(outputs, kUnset);
  for (size_t i = 0; i < pending.size(); ++i) {
    const std::shared_ptr<runtime::AsyncBuffer> committed = pending[i]->committed_data();
    const auto it = committed ? argument_index.find(committed.get()) : argument_index.end();
    const int j = it == argument_index.end() ? -1 : it->second;
    int& k = keep[tensor_output[i]];
    k = k == kUnset || k == j ? j : -1;
  }
  for (int& k : keep) k = std::max(k, -1);
  return keep;
}

namespace {

// Whether argument j (of a failed execution) still holds its value.
bool intact(int j, const std::vector<runtime::Buffer>& arguments, const std::vector<bool>& overwritten) {
  const auto k = static_cast<size_t>(j);
  return j >= 0 && k < arguments.size() && k < overwritten.size() && arguments[k].defined() && !overwritten[k];
}

// Fails a failed execution's outputs, except those that keep their tensors'
// value from before it (`keep`, from committed_arguments): an argument not
// overwritten in place (`overwritten`, from Executable::execute) is their value.
void fail_keeping_committed(const std::vector<std::shared_ptr<runtime::AsyncBuffer>>& results, const std::vector<int>& keep,
                            const std::vector<runtime::Buffer>& arguments, const std::vector<bool>& overwritten, const std::exception_ptr& error) {
  for (size_t i = 0; i < results.size(); ++i) {
    const int j = keep.empty() ? -1 : keep[i];
    if (intact(j, arguments, overwritten)) {
      results[i]->set(arguments[static_cast<size_t>(j)]);
    } else {
      results[i]->set_error(error);
    }
  }
}

// What a failed execution's error adds about the tensors it updates in place.
std::string kept_text(const std::vector<int>& keep, const std::vector<runtime::Buffer>& arguments, const std::vector<bool>& overwritten) {
  int64_t kept = 0, lost = 0;
  for (int j : keep) {
    if (j < 0) continue;
    (intact(j, arguments, overwritten) ? kept : lost) += 1;
  }
  const std::string lost_text = "load a checkpoint or a state_dict to go on";
  if (kept > 0 && lost > 0) {
    return "; the tensors it updates in place (parameters, optimizer state) keep their values from before it, except " + std::to_string(lost) +
           " overwritten before it failed, which are lost: " + lost_text;
  }
  if (kept > 0) return "; the tensors it updates in place (parameters, optimizer state) keep their values from before it";
  if (lost > 0) return "; the tensors it updates in place had been overwritten before it failed and are lost: " + lost_text;
  return "";
}

// An execution's output as its tensor's value on `device`. Copied when the
// executable made it elsewhere (a constant it holds, on another device) and
// when it is external memory that an input aliases (a graph passing a
// from_dlpack argument through, maybe reshaped): a new tensor must not change
// when the producer later writes its own array.
runtime::Buffer output_value(runtime::Buffer value, const runtime::Device& device) {
  if (value.device() != device) return runtime::copy_to_device(value, device);
  if (value.is_external()) return runtime::copy_buffer(value);
  return value;
}

}  // namespace

std::exception_ptr launch_spmd(const std::shared_ptr<backend::Executable>& executable, const GraphSignature& sig,
                                              const std::vector<const Node*>& outputs, const runtime::Device& device, const std::string& what,
                                              std::shared_ptr<const std::vector<OpLocation>> locations, std::vector<NodePtr>& data_nodes) {
  const hlo::HloModule& module = executable->module();
  const runtime::ReplicaWorld& world = runtime::replica_world();
  check(module.num_partitions == world.world_size(), "mark_step",
        "the SPMD program runs on " + std::to_string(module.num_partitions) + " devices, but the job has " + std::to_string(world.world_size()) +
            " (runtime::set_local_replicas, --num_cores, mpirun): a mesh spans every device of the job");
  check(device.ordinal < world.local_replicas, "mark_step",
        "the SPMD program is traced on " + device.to_string() + ", which is not one of this process's " + std::to_string(world.local_replicas) + " devices");
  const std::vector<hlo::HloSharding>& layouts = module.at(module.root).sharding->tuple_elements();
  std::vector<std::map<int64_t, std::shared_ptr<runtime::AsyncBuffer>>> tiles(outputs.size());
  std::exception_ptr earlier;
  for (int l = 0; l < world.local_replicas; ++l) {
    const int64_t ordinal = world.global_ordinal(l);
    const runtime::Device local{device.kind, l};
    std::vector<std::shared_ptr<runtime::AsyncBuffer>> arguments;
    for (const Node* p : sig.parameters) arguments.push_back(p->sharded_data() ? p->sharded_data()->tile(ordinal) : p->async_data());
    std::vector<std::shared_ptr<runtime::AsyncBuffer>> results;
    for (size_t k = 0; k < outputs.size(); ++k) {
      results.push_back(std::make_shared<runtime::AsyncBuffer>(layouts[k].tile_shape(outputs[k]->shape()), outputs[k]->dtype(), local));
      tiles[k].emplace(ordinal, results.back());
    }
    std::exception_ptr e = launch(executable, std::move(arguments), std::vector<bool>(sig.parameters.size(), false), results, local, what, locations);
    if (e && !earlier) earlier = e;
  }
  // A tiled output stays in tiles; every device holds a whole copy of the others (this device's is kept).
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (layouts[k].is_tiled()) {
      data_nodes.push_back(make_device_data(std::make_shared<const ShardedData>(outputs[k]->shape(), outputs[k]->dtype(), layouts[k], std::move(tiles[k])), device));
    } else {
      data_nodes.push_back(make_device_data(tiles[k].at(world.global_ordinal(device.ordinal))));
    }
  }
  return earlier;
}

std::exception_ptr launch(const std::shared_ptr<backend::Executable>& executable, std::vector<std::shared_ptr<runtime::AsyncBuffer>> arguments,
                           std::vector<bool> donated, const std::vector<std::shared_ptr<runtime::AsyncBuffer>>& results,
                           const runtime::Device& device, const std::string& description,
                           std::shared_ptr<const std::vector<OpLocation>> locations, std::vector<int> keep_on_failure) {
  DeviceContext& context = device_context(device);
  const int64_t number = context.begin_execution();
  const std::string what = "execution " + std::to_string(number) + " on " + device.to_string() + " (" + description + ")";
  // The device is free once its previous execution ended; report that one's failure first.
  runtime::ExecutionQueue& queue = runtime::execution_queue(device);
  queue.wait_idle();
  std::exception_ptr earlier = context.take_failure();
  queue.enqueue([&context, executable, arguments, donated, results, what, device, number, locations, keep_on_failure]() mutable {
    runtime::TraceMe trace("execute");
    if (trace) {
      trace.name(executable->module().name).arg("execution", number).arg("device", device.to_string()).arg("what", what);
    }
    std::vector<runtime::Buffer> buffers;
    buffers.reserve(arguments.size());
    std::string failed_input;
    for (const auto& a : arguments) {
      try {
        buffers.push_back(a->get());
      } catch (const std::exception& e) {
        // An input is the output of a failed execution, whose error was already reported.
        if (failed_input.empty()) failed_input = e.what();
        buffers.emplace_back();
      }
    }
    if (!failed_input.empty()) {
      auto error = std::make_exception_ptr(ExecutionError("[mark_step] " + what + " did not run: an input comes from a failed execution: " + failed_input));
      fail_keeping_committed(results, keep_on_failure, buffers, std::vector<bool>(buffers.size(), false), error);
      return;
    }
    std::vector<bool> overwritten;
    try {
      // A donated buffer must be held by its AsyncBuffer and this list only (its
      // storage may have become another value's too, e.g. an output that is an
      // input, or a DLPack export's), and owned by the runtime: external memory
      // (a torch parameter aliased by from_dlpack) is its owner's to write.
      for (size_t i = 0; i < donated.size(); ++i) donated[i] = donated[i] && buffers[i].use_count() == 2 && buffers[i].writable();
      arguments.clear();
      std::vector<runtime::Buffer> values;
      {
        runtime::ScopedTimer timer("ExecuteTime");
        values = executable->execute(buffers, donated, &overwritten);
      }
      buffers.clear();
      for (size_t i = 0; i < results.size(); ++i) results[i]->set(output_value(std::move(values[i]), device));
    } catch (const std::exception& e) {
      std::string message = e.what();
      if (const auto* failed = dynamic_cast<const hlo::InstructionError*>(&e); failed && locations) {
        const int64_t position = failed->metadata().ir_position;
        if (position >= 0 && position < static_cast<int64_t>(locations->size())) {
          message = failed->with_location((*locations)[static_cast<size_t>(position)]);
        }
      }
      if (overwritten.size() != buffers.size()) overwritten.assign(buffers.size(), true);  // (failed before it ran)
      message += kept_text(keep_on_failure, buffers, overwritten);
      auto error = std::make_exception_ptr(ExecutionError("[mark_step] " + what + " failed: " + message));
      // Recorded before the outputs fail: a reader woken by them clears it.
      context.set_failure(error);
      fail_keeping_committed(results, keep_on_failure, buffers, overwritten, error);
    }
  });
  return earlier;
}

}  // namespace lazytrain::lazy
