#include "core/thread_name.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <map>
#include <mutex>

namespace lazytrain {

namespace {

struct Names {
  std::mutex mutex;
  std::map<int64_t, std::string> by_thread;
};

Names& names() {
  static Names* n = new Names();  // never destroyed: threads may name themselves during exit
  return *n;
}

}  // namespace

int64_t current_thread_id() {
  thread_local const int64_t id = static_cast<int64_t>(::syscall(SYS_gettid));
  return id;
}

void set_thread_name(const std::string& name) {
  {
    Names& n = names();
    std::lock_guard<std::mutex> lock(n.mutex);
    n.by_thread[current_thread_id()] = name;
  }
  // The kernel keeps 15 bytes and a terminator. Not for the main thread: its
  // kernel name is the process's own (what ps and top show).
  if (current_thread_id() != static_cast<int64_t>(::getpid())) ::pthread_setname_np(::pthread_self(), name.substr(0, 15).c_str());
}

std::string thread_name(int64_t thread_id) {
  Names& n = names();
  std::lock_guard<std::mutex> lock(n.mutex);
  auto it = n.by_thread.find(thread_id);
  return it == n.by_thread.end() ? std::string() : it->second;
}

}  // namespace lazytrain
