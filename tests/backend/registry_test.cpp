// The backend registry: built-in backends by name, a clear error for an unknown
// one, and a backend added from outside the library with one register_backend
// call (here a test-only backend that wraps the interpreter and counts compiles).
#include "backend/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>

#include "../support/backend_scope.h"
#include "core/error.h"
#include "lazy/lazy_api.h"
#include "runtime/metrics.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

std::atomic<int> counting_compiles{0};

// The test-only backend: the interpreter, counting what it compiles.
class CountingCompiler : public backend::Compiler {
 public:
  explicit CountingCompiler(const backend::CompilerOptions& options) : inner_(backend::make_compiler("interpreter", options)) {}
  std::string name() const override { return "test-counting"; }
  std::unique_ptr<backend::Executable> compile(hlo::HloModule module) override {
    ++counting_compiles;
    return inner_->compile(std::move(module));
  }

 private:
  std::unique_ptr<backend::Compiler> inner_;
};

// The one registration line.
const bool kRegistered = [] {
  backend::register_backend("test-counting", [](const backend::CompilerOptions& o) { return std::make_unique<CountingCompiler>(o); });
  return true;
}();

TEST(BackendRegistry, ListsBuiltInAndRegisteredBackends) {
  ASSERT_TRUE(kRegistered);
  const std::vector<std::string> names = backend::backend_names();
  for (const char* name : {"cpu", "interpreter", "test-counting"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(backend::make_compiler("cpu")->name(), "cpu");
  EXPECT_EQ(backend::make_compiler("interpreter")->name(), "interpreter");
}

TEST(BackendRegistry, UnknownAndDuplicateNamesAreErrors) {
  try {
    backend::make_compiler("tpu");
    FAIL() << "expected an error for an unknown backend";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[backend] unknown backend 'tpu'; registered: cpu, interpreter"), std::string::npos) << e.what();
  }
  EXPECT_THROW(backend::register_backend("cpu", [](const backend::CompilerOptions& o) { return backend::make_compiler("interpreter", o); }),
               Error);
  EXPECT_THROW(backend::register_backend("", [](const backend::CompilerOptions& o) { return backend::make_compiler("interpreter", o); }),
               Error);
}

TEST(BackendRegistry, GraphExecutorRunsARegisteredBackend) {
  testing::BackendScope scope("test-counting");
  EXPECT_EQ(lazy::compiler().name(), "test-counting");
  const int before = counting_compiles;
  Tensor x = from_vector(std::vector<float>{1, 2, 3}, {3});
  EXPECT_EQ((x * 3.0 + 1.0).to_vector<float>(), (std::vector<float>{4, 7, 10}));
  EXPECT_EQ((x * 5.0 + 1.0).to_vector<float>(), (std::vector<float>{6, 11, 16}));  // the same graph: cached
  EXPECT_EQ(counting_compiles, before + 1);
}

}  // namespace
}  // namespace lazytrain
