// Compiling generated C++ into a shared object with the system compiler and
// loading it with dlopen.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lazytrain::backend::cpu {

// A loaded shared object; unloaded (dlclose) when the last reference goes.
class SharedLibrary {
 public:
  // dlopen(path, RTLD_NOW | RTLD_LOCAL); throws Error with dlerror() on failure.
  explicit SharedLibrary(const std::string& path);
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  // The address of `symbol`; throws Error naming it when absent.
  void* symbol(const std::string& symbol) const;

 private:
  void* handle_ = nullptr;
  std::string path_;
};

// The C++ compiler: `preferred` (CompilerOptions::cxx; $CXX by default) when
// not empty, else `c++` on PATH; nullopt when it does not run.
std::optional<std::string> find_cxx_compiler(const std::string& preferred);
// "c++ (Debian 12.2.0-14) 12.2.0": the first line of `<compiler> --version`.
std::string compiler_version(const std::string& compiler);

// Compiles `sources` (file name → contents) with `kernel_flags` (kernel_isa.h's
// kernel_flags) into a shared object and returns its bytes. Throws Error with
// the compiler's first error lines on failure.
std::string compile_shared_object(const std::string& compiler, const std::vector<std::string>& kernel_flags,
                                  const std::vector<std::pair<std::string, std::string>>& sources);

// Writes `bytes` to a fresh temporary file and loads it.
std::shared_ptr<SharedLibrary> load_shared_object(const std::string& bytes);

}  // namespace lazytrain::backend::cpu
