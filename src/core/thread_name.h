// Names of this process's threads, for profiles and debuggers: the row a
// thread gets in a trace (runtime/profiler.h: "device cpu:0 execution",
// "host (trace)", "loader") and what `top -H`, gdb and perf show (the kernel's
// name, cut to its 15 characters).
#pragma once

#include <cstdint>
#include <string>

namespace lazytrain {

// The calling thread's id as the kernel numbers it (gettid(); the main
// thread's equals the process id). What a Chrome trace calls "tid".
int64_t current_thread_id();

// Names the calling thread (replacing an earlier name) and, except for the
// main thread (whose kernel name is the process's), sets the kernel's name to
// the first 15 bytes of `name` (pthread_setname_np).
void set_thread_name(const std::string& name);

// The name given to thread `thread_id` (a current_thread_id()); "" when it
// was never named. Names stay after a thread ends (its id may be reused later
// by another thread, which then names itself).
std::string thread_name(int64_t thread_id);

}  // namespace lazytrain
