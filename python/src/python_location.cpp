// caller_location(): the Python frame that called into lazytrain, as an
// OpLocation (core/op_location.h). Frames of files under the lazytrain package
// are skipped (nn.Linear.forward calling F.linear names the user's line that
// called the module), and so are frames of Python's own modules that only
// forward (contextlib, functools) and of the folders add_internal_dir names
// (torch's, for torch tensors on the lazy device: torch.nn.Linear's forward is
// not the user's line).
//
// File and function names are interned for the process: an OpLocation points
// at them from IR nodes that may outlive any Python object.
#include <Python.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "bindings.h"

namespace lazytrain::python {

namespace {

struct FileEntry {
  std::string path;
  bool internal = false;
};

std::string& package_dir() {
  static std::string dir;
  return dir;
}

std::vector<std::string>& other_dirs() {
  static auto* dirs = new std::vector<std::string>();
  return *dirs;
}

bool is_internal(const std::string& path) {
  const std::string& dir = package_dir();
  if (!dir.empty() && path.compare(0, dir.size(), dir) == 0) return true;
  for (const std::string& other : other_dirs()) {
    if (path.compare(0, other.size(), other) == 0) return true;
  }
  return path.ends_with("/contextlib.py") || path.ends_with("/functools.py");
}

std::unordered_map<PyObject*, std::unique_ptr<FileEntry>>& files() {
  static auto* map = new std::unordered_map<PyObject*, std::unique_ptr<FileEntry>>();
  return *map;
}

// Keyed by the str object, kept alive by a reference the map holds, so a
// pointer is never reused for another name. Used with the GIL held.
const FileEntry& file_entry(PyObject* filename) {
  auto it = files().find(filename);
  if (it != files().end()) return *it->second;
  auto entry = std::make_unique<FileEntry>();
  const char* text = PyUnicode_AsUTF8(filename);
  if (text == nullptr) PyErr_Clear();
  entry->path = text ? text : "";
  entry->internal = is_internal(entry->path);
  Py_INCREF(filename);
  return *files().emplace(filename, std::move(entry)).first->second;
}

const char* function_name(PyObject* name) {
  static auto* names = new std::unordered_map<PyObject*, std::unique_ptr<std::string>>();
  auto it = names->find(name);
  if (it != names->end()) return it->second->c_str();
  const char* text = PyUnicode_AsUTF8(name);
  if (text == nullptr) PyErr_Clear();
  Py_INCREF(name);
  return names->emplace(name, std::make_unique<std::string>(text ? text : "")).first->second->c_str();
}

// Where ops without a user frame are said to come from (set_fallback_location).
OpLocation& fallback() {
  static OpLocation where;
  return where;
}

}  // namespace

void set_fallback_location(const std::string& file, const std::string& function, uint32_t line) {
  if (file.empty()) {
    fallback() = OpLocation{};
    return;
  }
  // Interned for the process, as file_entry's names: IR nodes keep the pointers.
  static auto* names = new std::unordered_map<std::string, std::unique_ptr<std::string>>();
  auto intern = [](const std::string& text) -> const char* {
    auto it = names->find(text);
    if (it == names->end()) it = names->emplace(text, std::make_unique<std::string>(text)).first;
    return it->second->c_str();
  };
  fallback() = OpLocation(intern(file), intern(function), line);
}

void set_package_dir(const std::string& dir) { package_dir() = dir.ends_with("/") ? dir : dir + "/"; }

void add_internal_dir(const std::string& dir) {
  const std::string folder = dir.ends_with("/") ? dir : dir + "/";
  for (const std::string& other : other_dirs()) {
    if (other == folder) return;
  }
  other_dirs().push_back(folder);
  for (auto& [name, entry] : files()) entry->internal = is_internal(entry->path);  // files seen before
}

OpLocation caller_location() {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  if (frame == nullptr) return fallback();
  Py_INCREF(frame);
  OpLocation found;
  for (int depth = 0; frame != nullptr && depth < 64; ++depth) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    const FileEntry& file = file_entry(code->co_filename);
    if (!file.internal) {
      found = OpLocation(file.path.c_str(), function_name(code->co_name), static_cast<uint32_t>(PyFrame_GetLineNumber(frame)));
      Py_DECREF(code);
      break;
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
  return found.known() ? found : fallback();
}

}  // namespace lazytrain::python
