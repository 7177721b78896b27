// Unit tests run on the reference interpreter unless LAZYTRAIN_BACKEND says
// otherwise: no kernel compile per test process. The differential tests and
// cli.run_mlm cover the cpu backend explicitly.
#include <cstdlib>

namespace {
const bool kInterpreterByDefault = [] { return setenv("LAZYTRAIN_BACKEND", "interpreter", /*overwrite=*/0) == 0; }();
}  // namespace
