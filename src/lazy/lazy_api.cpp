// The free functions of lazy_api.h: each forwards to the GraphExecutor facade.
#include "lazy/lazy_api.h"

#include <utility>

#include "lazy/graph_executor.h"

namespace lazytrain::lazy {

void mark_step(const runtime::Device& device) { GraphExecutor::get().mark_step(device); }

void sync(const std::vector<LazyTensor*>& tensors, const SyncCause& cause) { GraphExecutor::get().sync(tensors, cause); }

void sync_live(const runtime::Device& device, const SyncCause& cause, LazyTensor* also) { GraphExecutor::get().sync_live(device, cause, also); }

void wait_device_ops() { GraphExecutor::get().wait_device_ops(); }

void wait_device_ops(const runtime::Device& device) { GraphExecutor::get().wait_device_ops(device); }

void clear_execution_failure(const runtime::Device& device) { GraphExecutor::get().clear_execution_failure(device); }

std::set<uint64_t>* record_graphs(const runtime::Device& device, std::set<uint64_t>* into) {
  return GraphExecutor::get().record_graphs(device, into);
}

int64_t execution_count(const runtime::Device& device) { return GraphExecutor::get().execution_count(device); }

uint64_t last_graph_hash(const runtime::Device& device) { return GraphExecutor::get().last_graph_hash(device); }

std::shared_ptr<backend::Executable> compile_or_lookup(const GraphSignature& signature, const SyncCause& cause, bool* compiled) {
  return GraphExecutor::get().compile_or_lookup(signature, cause, compiled);
}

std::vector<std::shared_ptr<runtime::AsyncBuffer>> execute(const std::shared_ptr<backend::Executable>& executable,
                                                           std::vector<std::shared_ptr<runtime::AsyncBuffer>> arguments,
                                                           const runtime::Device& device, const std::string& what) {
  return GraphExecutor::get().execute(executable, std::move(arguments), device, what);
}

std::string last_compiled_hlo() { return GraphExecutor::get().last_compiled_hlo(); }

size_t cache_size() { return GraphExecutor::get().cache_size(); }

std::vector<std::shared_ptr<backend::Executable>> cached_executables() { return GraphExecutor::get().cached_executables(); }

void set_graph_size_warning(size_t nodes) { GraphExecutor::get().set_graph_size_warning(nodes); }

size_t graph_size_warning() { return GraphExecutor::get().graph_size_warning(); }

const backend::Compiler& compiler() { return GraphExecutor::get().compiler(); }

void set_compiler(std::unique_ptr<backend::Compiler> compiler) { GraphExecutor::get().set_compiler(std::move(compiler)); }

void set_compile_cache_dir(const std::string& directory) { GraphExecutor::get().set_compile_cache_dir(directory); }

}  // namespace lazytrain::lazy
