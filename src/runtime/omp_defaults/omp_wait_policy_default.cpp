// liblazytrain_omp_defaults.so: makes OpenMP threads wait passively unless the
// user chose otherwise.
//
// libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, in its own ELF
// constructor, before main() and before any of lazytrain's static
// initialisers; there is no API to change the policy afterwards. Its default
// (neither variable set) spins up to 300,000 times at every barrier. On a
// machine shared with other work a thread then burns the core its descheduled
// partner needs: bert-mini ran 4.5x slower than one thread beside a competing
// process (issue 15). Passive waiting costs nothing measurable on a quiet
// machine (README, "On a shared machine").
//
// This tiny shared library sets OMP_WAIT_POLICY=passive in its constructor. It
// depends on libc alone and is linked after libgomp, so the dynamic loader,
// which initialises later-loaded objects first (dependencies always first),
// runs it after libc (setenv works) and before libgomp (which then sees the
// variable). tests/runtime/omp_wait_policy_test.sh checks that order on the
// built binaries through libgomp's own OMP_DISPLAY_ENV report.
#include <cstdlib>

namespace {

// 1 when this library set the policy, 0 when the user had set one.
int defaulted = 0;

__attribute__((constructor)) void default_to_passive_waiting() {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  setenv("OMP_WAIT_POLICY", "passive", 0);
  defaulted = 1;
}

}  // namespace

extern "C" int lazytrain_omp_wait_policy_defaulted() { return defaulted; }
