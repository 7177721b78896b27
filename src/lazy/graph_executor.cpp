// The GraphExecutor facade (lazy/graph_executor.h): each method forwards to
// the part that does the work. Only execute() is written here: it is launch's
// compiled-function path, in order with the device's syncs.
#include "lazy/graph_executor.h"

#include <mutex>
#include <utility>

#include "hlo/cost_analysis.h"
#include "lazy/compile_context.h"
#include "lazy/device_context.h"
#include "lazy/graph_cutting.h"
#include "lazy/launch.h"
#include "lazy/step_analysis.h"
#include "runtime/execution_queue.h"
#include "runtime/metrics.h"

namespace lazytrain::lazy {

namespace {

// Rethrows (once) the error of an execution of `device` that failed since the last call.
void rethrow_execution_failure(const runtime::Device& device) {
  if (std::exception_ptr failure = device_context(device).take_failure()) std::rethrow_exception(failure);
}

}  // namespace

GraphExecutor& GraphExecutor::get() {
  static GraphExecutor executor;
  return executor;
}

GraphExecutor::GraphExecutor() = default;

// ---- graph cutting (lazy/graph_cutting.h) ----

void GraphExecutor::mark_step(const runtime::Device& device) {
  runtime::counter("MarkStep").add(1);
  sync_live_tensors(device, SyncCause{SyncCause::Kind::kMarkStep, {}}, nullptr);
  end_step(device);
}

void GraphExecutor::sync(const std::vector<LazyTensor*>& tensors, const SyncCause& cause) { sync_tensors(tensors, cause); }

void GraphExecutor::sync_live(const runtime::Device& device, const SyncCause& cause, LazyTensor* also) { sync_live_tensors(device, cause, also); }

void GraphExecutor::set_graph_size_warning(size_t nodes) { set_graph_size_warning_bound(nodes); }

size_t GraphExecutor::graph_size_warning() const { return graph_size_warning_bound(); }

// ---- compiling (lazy/compile_context.h) ----

std::shared_ptr<backend::Executable> GraphExecutor::compile_or_lookup(const GraphSignature& sig, const SyncCause& cause, bool* compiled) {
  return compile_context().compile_or_lookup(sig, cause, compiled);
}

const backend::Compiler& GraphExecutor::compiler() const { return compile_context().compiler(); }

void GraphExecutor::set_compiler(std::unique_ptr<backend::Compiler> compiler) { compile_context().set_compiler(std::move(compiler)); }

void GraphExecutor::set_compile_cache_dir(const std::string& directory) { compile_context().set_cache_directory(directory); }

size_t GraphExecutor::cache_size() const { return compile_context().cache_size(); }

std::vector<std::shared_ptr<backend::Executable>> GraphExecutor::cached_executables() const { return compile_context().cached_executables(); }

std::string GraphExecutor::last_compiled_hlo() const { return compile_context().last_compiled_hlo(); }

// ---- launch and the device contexts (lazy/launch.h, lazy/device_context.h) ----

std::vector<std::shared_ptr<runtime::AsyncBuffer>> GraphExecutor::execute(const std::shared_ptr<backend::Executable>& executable,
                                                                          std::vector<std::shared_ptr<runtime::AsyncBuffer>> arguments,
                                                                          const runtime::Device& device, const std::string& what) {
  const hlo::HloModule& module = executable->module();
  const hlo::HloInstruction& root = module.at(module.root);
  std::vector<std::shared_ptr<runtime::AsyncBuffer>> results;
  for (int o : root.operands) results.push_back(std::make_shared<runtime::AsyncBuffer>(module.at(o).shape, module.at(o).dtype, device));
  note_execution(device, false, false, static_cast<int64_t>(module.instructions.size()));
  runtime::counter("ExecutedDotFlops").add(hlo::dot_flop_count(module));
  // (An earlier failure is reported before this runs: the caller gets no results then.)
  std::lock_guard<std::mutex> one_launch(device_context(device).sync_mutex());  // in order with the device's syncs
  runtime::execution_queue(device).wait_idle();
  rethrow_execution_failure(device);
  launch(executable, std::move(arguments), {}, results, device, what);
  return results;
}

std::set<uint64_t>* GraphExecutor::record_graphs(const runtime::Device& device, std::set<uint64_t>* into) {
  return std::exchange(graph_recorder(device), into);
}

int64_t GraphExecutor::execution_count(const runtime::Device& device) const { return device_context(device).executions(); }

uint64_t GraphExecutor::last_graph_hash(const runtime::Device& device) const { return device_context(device).last_graph(); }

void GraphExecutor::wait_device_ops() {
  runtime::wait_all_idle();
  for (const runtime::Device& device : devices_with_context()) rethrow_execution_failure(device);
}

void GraphExecutor::wait_device_ops(const runtime::Device& device) {
  runtime::execution_queue(device).wait_idle();
  rethrow_execution_failure(device);
}

void GraphExecutor::clear_execution_failure(const runtime::Device& device) { device_context(device).take_failure(); }

}  // namespace lazytrain::lazy
