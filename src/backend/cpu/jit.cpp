#include "backend/cpu/jit.h"

#include <mutex>
#include <map>
#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace lazytrain::backend::cpu {

namespace fs = std::filesystem;

namespace {

// A private temporary directory, removed with its contents on destruction.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "lazytrain-jit-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw Error("[cpu backend] cannot create a temporary directory under " + fs::temp_directory_path().string());
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// Runs `command` through the shell; returns its exit status and output.
int run(const std::string& command, std::string& output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

}  // namespace

SharedLibrary::SharedLibrary(const std::string& path) : path_(path) {
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) throw Error(std::string("[cpu backend] cannot load generated code '") + path + "': " + dlerror());
}

SharedLibrary::~SharedLibrary() {
  if (handle_) dlclose(handle_);
}

void* SharedLibrary::symbol(const std::string& name) const {
  void* p = dlsym(handle_, name.c_str());
  if (!p) throw Error("[cpu backend] generated code '" + path_ + "' has no symbol '" + name + "'");
  return p;
}

std::optional<std::string> find_cxx_compiler(const std::string& preferred) {
  static std::mutex mutex;
  static std::map<std::string, std::optional<std::string>> found;  // candidate -> answer, asked once each
  const std::string candidate = preferred.empty() ? "c++" : preferred;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = found.find(candidate);
  if (it == found.end()) {
    std::string output;
    const bool runs = run(quote(candidate) + " --version", output) == 0;
    it = found.emplace(candidate, runs ? std::optional<std::string>(candidate) : std::nullopt).first;
  }
  return it->second;
}

std::string compiler_version(const std::string& compiler) {
  std::string output;
  run(quote(compiler) + " --version", output);
  return output.substr(0, output.find('\n'));
}

std::string compile_shared_object(const std::string& compiler, const std::vector<std::string>& kernel_flags,
                                  const std::vector<std::pair<std::string, std::string>>& sources) {
  TempDir dir;
  std::string flags;
  for (const auto& f : kernel_flags) flags += " " + f;
  // Each source compiles to an object in parallel (one per core), then one link.
  std::string command, objects;
  for (const auto& [name, text] : sources) {
    std::ofstream(dir.path / name) << text;
    const fs::path object = dir.path / (name + ".o");
    command += quote(compiler) + flags + " -c " + quote((dir.path / name).string()) + " -o " + quote(object.string()) + " & ";
    objects += " " + quote(object.string());
  }
  command += "wait";
  std::string output;
  run(command, output);
  for (const auto& [name, text] : sources) {
    if (!fs::exists(dir.path / (name + ".o"))) throw Error("[cpu backend] compiling generated kernels failed: " + output.substr(0, 2000));
  }
  const fs::path so = dir.path / "kernels.so";
  if (run(quote(compiler) + flags + objects + " -o " + quote(so.string()) + " -lsleef", output) != 0) {
    throw Error("[cpu backend] linking generated kernels failed: " + output.substr(0, 2000));
  }
  return read_file(so);
}

std::shared_ptr<SharedLibrary> load_shared_object(const std::string& bytes) {
  TempDir dir;
  const fs::path so = dir.path / "kernels.so";
  std::ofstream(so, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  // The mapping stays valid after the file is removed.
  return std::make_shared<SharedLibrary>(so.string());
}

}  // namespace lazytrain::backend::cpu
