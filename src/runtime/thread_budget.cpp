#include "runtime/thread_budget.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/env_vars.h"

extern "C" int lazytrain_omp_wait_policy_defaulted();  // liblazytrain_omp_defaults.so

namespace lazytrain::runtime {
namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  return parts;
}

// One cgroup hierarchy this process is in: where it is mounted and the
// directory of the process's own cgroup.
struct Hierarchy {
  bool v2 = false;
  std::string mount_point;  // e.g. /sys/fs/cgroup/cpu
  std::string own_dir;      // mount_point + the process's cgroup path
};

// /proc/self/mountinfo: "... <root> <mount point> <options> [optional...] - <fstype> <source> <super options>".
// Yields the cgroup2 mount and the cgroup v1 mount of the `cpu` controller.
std::vector<Hierarchy> cgroup_hierarchies(const std::string& root) {
  // The process's path in each hierarchy: "0::/a/b" (v2), "4:cpu,cpuacct:/a/b" (v1).
  std::string v2_path, v1_cpu_path;
  bool has_v2 = false, has_v1_cpu = false;
  std::ifstream cgroup(root + "/proc/self/cgroup");
  for (std::string line; std::getline(cgroup, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.substr(0, a) == "0" && controllers.empty()) {
      v2_path = path, has_v2 = true;
    } else {
      for (const std::string& c : split(controllers, ',')) {
        if (c == "cpu") v1_cpu_path = path, has_v1_cpu = true;
      }
    }
  }
  std::vector<Hierarchy> out;
  std::ifstream mountinfo(root + "/proc/self/mountinfo");
  for (std::string line; std::getline(mountinfo, line);) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    const std::vector<std::string> before = split(line.substr(0, dash), ' ');
    const std::vector<std::string> after = split(line.substr(dash + 3), ' ');
    if (before.size() < 5 || after.size() < 3) continue;
    const std::string& mount_root = before[3];
    const std::string& mount_point = before[4];
    const std::string& fstype = after[0];
    bool cpu_controller = false;
    for (const std::string& option : split(after[2], ',')) cpu_controller |= option == "cpu";
    const bool v2 = fstype == "cgroup2" && has_v2;
    if (!v2 && !(fstype == "cgroup" && cpu_controller && has_v1_cpu)) continue;
    std::string path = v2 ? v2_path : v1_cpu_path;
    // Inside a container the mount's root may be the container's own cgroup:
    // the process's path is then relative to it.
    if (mount_root != "/" && path.rfind(mount_root, 0) == 0) path = path.substr(mount_root.size());
    if (path == "/") path.clear();
    out.push_back({v2, root + mount_point, root + mount_point + path});
  }
  return out;
}

// The quota of one cgroup directory in CPUs, nullopt when unlimited/unreadable.
std::optional<double> quota_of(const Hierarchy& h, const std::string& dir) {
  if (h.v2) {
    // cpu.max: "<quota> <period>" in microseconds, or "max <period>".
    const std::vector<std::string> fields = split(read_first_line(dir + "/cpu.max"), ' ');
    if (fields.size() != 2 || fields[0] == "max") return std::nullopt;
    const double quota = std::atof(fields[0].c_str()), period = std::atof(fields[1].c_str());
    if (quota > 0 && period > 0) return quota / period;
    return std::nullopt;
  }
  const std::string quota_text = read_first_line(dir + "/cpu.cfs_quota_us");
  const std::string period_text = read_first_line(dir + "/cpu.cfs_period_us");
  if (quota_text.empty() || period_text.empty()) return std::nullopt;
  const double quota = std::atof(quota_text.c_str()), period = std::atof(period_text.c_str());
  if (quota > 0 && period > 0) return quota / period;  // -1: no quota
  return std::nullopt;
}

}  // namespace

int affinity_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

std::optional<double> cgroup_cpu_limit(const std::string& root) {
  std::optional<double> limit;
  for (const Hierarchy& h : cgroup_hierarchies(root)) {
    // A parent's quota limits its children too: the smallest on the way up.
    for (std::string dir = h.own_dir;; dir = dir.substr(0, dir.rfind('/'))) {
      if (std::optional<double> q = quota_of(h, dir)) limit = std::min(limit.value_or(*q), *q);
      if (dir.size() <= h.mount_point.size() || dir.rfind('/') == std::string::npos) break;
    }
  }
  return limit;
}

namespace {

// available_cpus() and how it was found.
const ThreadBudget& cpu_budget() {
  static const ThreadBudget budget = [] {
    ThreadBudget b;
    const int cpus = affinity_cpu_count();
    const std::optional<double> quota = cgroup_cpu_limit();
    b.threads = cpus;
    b.reason = std::to_string(cpus) + (cpus == 1 ? " CPU" : " CPUs") + " in the affinity mask";
    if (quota) {
      std::ostringstream q;
      q << *quota;
      b.threads = std::max(1, std::min(cpus, static_cast<int>(std::ceil(*quota - 1e-9))));
      b.reason += ", a cgroup CPU quota of " + q.str();
    } else {
      b.reason += ", no cgroup CPU quota";
    }
    return b;
  }();
  return budget;
}

}  // namespace

int available_cpus() { return cpu_budget().threads; }

const ThreadBudget& default_thread_budget() {
  static const ThreadBudget budget = [] {
    if (std::optional<int> user = environment().omp_num_threads) return ThreadBudget{*user, "OMP_NUM_THREADS=" + std::to_string(*user)};
    return cpu_budget();
  }();
  return budget;
}

std::string omp_wait_policy() {
  if (lazytrain_omp_wait_policy_defaulted()) return "GOMP_SPINCOUNT=30000 (lazytrain's default)";
  std::string out;
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"}) {
    if (const char* value = std::getenv(name); value != nullptr && value[0] != '\0') out += (out.empty() ? "" : " ") + std::string(name) + "=" + value;
  }
  return out + " (the user's)";
}

int bounded_data_workers(int requested, int compute_threads) {
  if (requested <= 0) return 0;
  const int left = std::max(1, available_cpus() - std::max(0, compute_threads));
  return std::min(requested, left);
}

void yield_to_compute_threads() {
  // On Linux a thread's nice value is its own (setpriority on its thread id).
  const id_t tid = static_cast<id_t>(syscall(SYS_gettid));
  const int now = getpriority(PRIO_PROCESS, tid);
  if (now < 10) (void)setpriority(PRIO_PROCESS, tid, 10);
}

}  // namespace lazytrain::runtime
