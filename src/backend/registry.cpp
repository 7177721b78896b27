#include "backend/registry.h"

#include <map>
#include <mutex>

#include "backend/cpu/cpu_compiler.h"
#include "backend/interpreter/interpreter_compiler.h"
#include "core/env_vars.h"
#include "core/error.h"

namespace lazytrain::backend {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, CompilerFactory> factories;
};

void add(Registry& r, const std::string& name, CompilerFactory factory) {
  if (name.empty()) throw Error("[backend] register_backend: the name is empty");
  if (!r.factories.emplace(name, std::move(factory)).second) {
    throw Error("[backend] register_backend: a backend named '" + name + "' is already registered");
  }
}

Registry& registry() {
  // The built-in backends, one line each.
  static Registry* r = [] {
    auto* built_in = new Registry;
    add(*built_in, "interpreter", interpreter::make_interpreter_compiler);
    add(*built_in, "cpu", cpu::make_cpu_compiler);
    return built_in;
  }();
  return *r;
}

}  // namespace

CompilerOptions CompilerOptions::from_environment() {
  const EnvironmentVariables& env = environment();
  CompilerOptions o;
  o.cache_dir = env.cache_dir;
  o.dump_dir = env.dump_hlo;
  o.profile = env.profile_stderr;
  o.cxx = env.cxx;
  o.kernel_isa = env.kernel_isa;
  o.multi_output_fusion = env.multi_output_fusion;
  o.async_collectives = env.async_collectives;
  return o;
}

void register_backend(const std::string& name, CompilerFactory factory) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  add(r, name, std::move(factory));
}

std::vector<std::string> backend_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [name, factory] : r.factories) names.push_back(name);
  return names;
}

std::unique_ptr<Compiler> make_compiler(const std::string& name, const CompilerOptions& options) {
  CompilerFactory factory;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.factories.find(name);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    std::string known;
    for (const std::string& n : backend_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error("[backend] unknown backend '" + name + "'; registered: " + known);
  }
  return factory(options);
}

std::string default_backend_name() {
  const std::string& name = environment().backend;
  return name.empty() ? "cpu" : name;
}

}  // namespace lazytrain::backend
