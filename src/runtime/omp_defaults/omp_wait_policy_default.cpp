// liblazytrain_omp_defaults.so: bounds how long OpenMP threads spin before
// they sleep, unless the user chose otherwise.
//
// libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, in its own ELF
// constructor, before main() and before any of lazytrain's static
// initialisers; there is no API to change them afterwards. Its default
// (neither variable set) spins up to 300,000 times at every barrier. On a
// machine shared with other work a thread then burns the core its descheduled
// partner needs: bert-mini ran 4.5x slower than one thread beside a competing
// process (issue 15).
//
// Why 30,000 and not passive (0): on a quiet machine passive waiting pays a
// futex wake-up at every parallel region, 11% of bert-mini's speed and 3% of
// bert-base's, while 30,000 spins cover the gaps between a step's regions and
// run as fast as 300,000 (README, "On a shared machine", with the command).
// Under contention the thread governor (runtime/thread_governor.h) drops to
// one thread, where nothing waits at a barrier; the short spin bounds what a
// waiting thread burns before then.
//
// This tiny shared library sets GOMP_SPINCOUNT=30000 in its constructor. It
// depends on libc alone and is linked after libgomp, so the dynamic loader,
// which initialises later-loaded objects first (dependencies always first),
// runs it after libc (setenv works) and before libgomp (which then sees the
// variable). tests/cli/threads_cli_test.sh checks that order on the built
// binaries through libgomp's own OMP_DISPLAY_ENV report.
#include <cstdlib>

namespace {

// 1 when this library set the spin count, 0 when the user had chosen.
int defaulted = 0;

// An empty variable (`GOMP_SPINCOUNT= cmd`) is no choice: libgomp would warn and
// fall back to its own default.
bool is_set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0';
}

__attribute__((constructor)) void default_to_bounded_spinning() {
  if (is_set("OMP_WAIT_POLICY") || is_set("GOMP_SPINCOUNT")) return;
  unsetenv("OMP_WAIT_POLICY");  // an empty one, which libgomp would warn about
  setenv("GOMP_SPINCOUNT", "30000", 1);
  defaulted = 1;
}

}  // namespace

extern "C" int lazytrain_omp_wait_policy_defaulted() { return defaulted; }
