// The lazy pipeline end to end: ops record, mark_step compiles once, the cache hits.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "lazy/graph_lowering.h"
#include "lazy/lazy_api.h"
#include "runtime/metrics.h"
#include "../support/backend_scope.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

TEST(LazyExecution, OpsRecordUntilRead) {
  Tensor a = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = from_vector(std::vector<float>{10, 20, 30}, {3});
  Tensor c = a * b + 1.0;
  EXPECT_TRUE(c.impl()->has_pending_ir());
  EXPECT_EQ(c.ir_value()->op(), "aten::add");
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{11, 41, 91, 41, 101, 181}));
  EXPECT_FALSE(c.impl()->has_pending_ir());
}

TEST(LazyExecution, SameGraphHitsTheCache) {
  Tensor w = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  auto step = [&](float lr) {
    Tensor lr_t = scalar_tensor(lr);
    w.set_data(w - w * lr_t);
    lazy::mark_step();
  };
  step(0.5f);
  int64_t cached = runtime::counter_value("CachedCompile");
  int64_t uncached = runtime::counter_value("UncachedCompile");
  step(0.25f);
  step(0.125f);
  EXPECT_EQ(runtime::counter_value("CachedCompile"), cached + 2);
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), uncached);
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{1 * 0.5f * 0.75f * 0.875f, 2 * 0.5f * 0.75f * 0.875f,
                                                      3 * 0.5f * 0.75f * 0.875f, 4 * 0.5f * 0.75f * 0.875f}));
}

TEST(LazyExecution, SharedInputIsNotConfusedWithTwoInputs) {
  // a*a and a*b have the same ops and shapes; the hash must tell them apart.
  Tensor a = from_vector(std::vector<float>{2, 3}, {2});
  Tensor b = from_vector(std::vector<float>{5, 7}, {2});
  EXPECT_EQ((a * a).to_vector<float>(), (std::vector<float>{4, 9}));
  EXPECT_EQ((a * b).to_vector<float>(), (std::vector<float>{10, 21}));
}

TEST(LazyExecution, BackwardOfMatmul) {
  Tensor x = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  Tensor w = from_vector(std::vector<float>{1, 0, 0, 2}, {2, 2});
  w.requires_grad_();
  Tensor loss = sum(matmul(x, w));
  loss.backward();
  // d/dw sum(x @ w) = x^T @ ones
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{4, 4, 6, 6}));
  EXPECT_FLOAT_EQ(loss.item(), 1 + 4 + 3 + 8);
}

// A tensor updated by the graph gives its old buffer to the executable; a value
// anybody else can still read (another tensor's value, a scalar the caller keeps) does not.
TEST(LazyExecution, OnlyBuffersNobodyElseCanReadAreDonated) {
  Tensor w = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  Tensor lr = scalar_tensor(0.5f);
  w.set_data(w - w * lr);
  lazy::GraphSignature sig = lazy::graph_signature({w.ir_value().get()});
  ASSERT_EQ(sig.parameters.size(), 2u);
  std::vector<bool> donated = lazy::donatable_parameters(sig);
  for (size_t i = 0; i < sig.parameters.size(); ++i) {
    const bool is_w = sig.parameters[i]->shape() == Shape{2, 2};
    EXPECT_EQ(donated[i], is_w) << "parameter " << i;  // lr's tensor still holds its value
  }

  Tensor v = from_vector(std::vector<float>{1, 2}, {2});
  Tensor snapshot = v.detach();  // still reads the old value after the update
  v.set_data(v * 2.0);
  lazy::GraphSignature sig2 = lazy::graph_signature({v.ir_value().get()});
  // v's old value (the snapshot reads it) and the number 2 (device data that the
  // scalar cache keeps for the next graph): neither is donated.
  ASSERT_EQ(sig2.parameters.size(), 2u);
  EXPECT_EQ(lazy::donatable_parameters(sig2), (std::vector<bool>{false, false}));
  lazy::mark_step();
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{2, 4}));
  EXPECT_EQ(snapshot.to_vector<float>(), (std::vector<float>{1, 2}));
}

// mark_step() returns with the outputs pending; an execution that fails (an
// index out of range, found only when the gather runs) reports at the next
// synchronising call, naming the execution; its outputs rethrow when read;
// values from before are intact and the next step runs normally.
TEST(AsyncExecution, FailureReachesTheNextSyncAndPoisonsNothingBefore) {
  Tensor good = from_vector(std::vector<float>{1, 2}, {2}) * 2.0;
  lazy::mark_step();
  Tensor table = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  Tensor bad = index_select(table, 0, from_vector(std::vector<int64_t>{7}, {1})) + 1.0;
  lazy::mark_step();
  EXPECT_FALSE(bad.impl()->has_pending_ir());  // a pending device value, not IR
  try {
    lazy::wait_device_ops();
    FAIL() << "expected the failed execution to be reported";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[mark_step] execution "), std::string::npos) << what;
    EXPECT_NE(what.find("failed"), std::string::npos) << what;
    EXPECT_NE(what.find("out of range"), std::string::npos) << what;
  }
  EXPECT_THROW(bad.to_vector<float>(), Error);                   // its output stays poisoned
  EXPECT_THROW((bad * 2.0).to_vector<float>(), Error);           // and so does what is computed from it
  EXPECT_EQ(good.to_vector<float>(), (std::vector<float>{2, 4}));  // the step before is intact
  lazy::wait_device_ops();                                       // reported once: no second throw
  Tensor next = good + 1.0;
  lazy::mark_step();
  EXPECT_EQ(next.to_vector<float>(), (std::vector<float>{3, 5}));
}

// One recorded step: w <- w - w * sum(table[row]) / 8, then mark_step. A row
// outside [0, 2) fails when the graph runs (index_select's bounds check).
struct UpdateStep {
  Tensor table = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  Tensor w = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  void operator()(int64_t row) {
    Tensor picked = index_select(table, 0, from_vector(std::vector<int64_t>{row}, {1}));
    w.set_data(w - w * (sum(picked) * 0.125));
    lazy::mark_step();
  }
};

// A step recorded whole (forward, loss, update) fails at run time when its
// index is out of range: the tensor it updates in place keeps its value from
// before the step (its storage was not reused yet), the error says so, and the
// next step goes on from it. The cpu backend donates the tensor's storage to
// the step and writes the update over it; the interpreter copies.
TEST(AsyncExecution, AFailedStepKeepsTheTensorsItUpdatesInPlace) {
  for (const std::string backend : {"interpreter", "cpu"}) {
    SCOPED_TRACE(backend);
    testing::BackendScope scope(backend);
    UpdateStep step;
    Tensor& w = step.w;
    step(0);  // w * (1 - 3/8)
    EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{0.625f, 1.25f, 1.875f, 2.5f}));
    step(7);
    try {
      lazy::wait_device_ops();
      FAIL() << "expected the failed execution to be reported";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("out of range"), std::string::npos) << what;
      EXPECT_NE(what.find("the tensors it updates in place (parameters, optimizer state) keep their values from before it"), std::string::npos)
          << what;
    }
    EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{0.625f, 1.25f, 1.875f, 2.5f}));
    step(1);  // w * (1 - 7/8)
    EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{0.078125f, 0.15625f, 0.234375f, 0.3125f}));
  }
}

// The next step's mark_step reports a failed step, after launching its own
// graph: that step runs (it is not dropped, nor merged into a later graph).
TEST(AsyncExecution, TheStepAfterAFailedOneRunsAndReportsTheFailure) {
  UpdateStep step;
  Tensor& w = step.w;
  step(0);  // w * (1 - 3/8)
  step(7);  // fails on the device; mark_step returns before it runs
  try {
    step(1);  // w * (1 - 7/8), launched; then the failure of the step before is reported
    lazy::wait_device_ops();
    FAIL() << "expected the failed execution to be reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 7 is out of range"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(w.impl()->has_pending_ir());
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{0.078125f, 0.15625f, 0.234375f, 0.3125f}));
}

// An update the graph runs before the failing op has overwritten its tensor's
// storage (donated, updated in place): that tensor is lost, and the error says so.
TEST(AsyncExecution, AnUpdateThatRanBeforeTheFailureIsLostAndNamed) {
  testing::CpuBackendScope cpu;
  Tensor v = from_vector(std::vector<float>{1, 2}, {1, 2});
  v.set_data(v + 1.0);
  // The index is read from v's new value through a dot (which no fusion
  // recomputes), so the update runs first: index 7.
  Tensor index = (matmul(v, from_vector(std::vector<float>{0, 0}, {2, 1})) + 7.0).to(DType::kInt64).reshape({1});
  Tensor table = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  Tensor bad = index_select(table, 0, index) + 1.0;
  lazy::mark_step();
  try {
    lazy::wait_device_ops();
    FAIL() << "expected the failed execution to be reported";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the tensors it updates in place had been overwritten before it failed and are lost: load a checkpoint"), std::string::npos) << what;
  }
  EXPECT_THROW(v.to_vector<float>(), Error);
  EXPECT_THROW(bad.to_vector<float>(), Error);
}

// A view of a tensor that the step updates in place is an output of the same
// graph: the update must not be written over the storage the view shows (the
// cpu backend donates the old value's storage to the update).
TEST(LazyExecution, AViewOfATensorUpdatedInPlaceKeepsTheOldValue) {
  testing::CpuBackendScope cpu;
  for (bool view_first : {false, true}) {
    SCOPED_TRACE(view_first ? "view recorded first" : "update recorded first");
    Tensor w = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
    Tensor v;
    if (view_first) v = w.view({8});
    w.set_data(w * 2.0 - 1.0);
    if (!view_first) v = w.view({8});  // the new value's view: shows the update
    lazy::mark_step();
    EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15}));
    EXPECT_EQ(v.to_vector<float>(), view_first ? (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}) : (std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15}));
  }
}

// mark_step() returns while the execution runs (tens of milliseconds of
// matmuls here); reading right away waits for it, in TransferFromDeviceTime,
// and gets the exact value.
Tensor slow_graph() {
  Tensor y = zeros({768, 768});
  for (int i = 0; i < 12; ++i) y = matmul(y + 1.0, ones({768, 768})) * (1.0 / 768.0);
  return y;
}

int64_t samples(const char* metric) { return runtime::metric_data(metric) ? runtime::metric_data(metric)->total_samples : 0; }

TEST(AsyncExecution, MarkStepReturnsBeforeTheExecutionEnds) {
  Tensor y = slow_graph();
  lazy::mark_step();
  const bool pending = !y.ir_value()->async_data()->ready();
  const int64_t reads = samples("TransferFromDeviceTime");
  std::vector<float> v = y.to_vector<float>();
  EXPECT_TRUE(pending) << "the execution had finished before mark_step returned";
  EXPECT_EQ(samples("TransferFromDeviceTime"), reads + 1);
  ASSERT_EQ(v.size(), 768u * 768u);
  EXPECT_FLOAT_EQ(v[0], 12.0f);  // each round: (y + 1) summed over 768 columns / 768 = y + 1
  EXPECT_EQ(v[0], v.back());
}

// One execution in flight: the next mark_step waits for the device (DeviceLockWait).
TEST(AsyncExecution, TheNextMarkStepWaitsForTheDevice) {
  Tensor y = slow_graph();
  lazy::mark_step();
  const bool pending = !y.ir_value()->async_data()->ready();
  const int64_t locks = samples("DeviceLockWait");
  Tensor z = from_vector(std::vector<float>{1, 2}, {2}) + 1.0;
  lazy::mark_step();
  EXPECT_TRUE(pending);
  EXPECT_TRUE(y.ir_value()->async_data()->ready());  // finished before z's execution could start
  EXPECT_EQ(samples("DeviceLockWait"), locks + 1);
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{2, 3}));
}

TEST(LazyExecution, ShapeErrorNamesOpAndCaller) {
  Tensor a = zeros({2, 3});
  Tensor b = zeros({4, 5});
  try {
    matmul(a, b);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[aten::matmul]"), std::string::npos) << m;
    EXPECT_NE(m.find("lazy_execution_test.cpp"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace lazytrain

namespace lazytrain {
namespace {

TEST(LazyExecution, IrDumpListsNodesInPostOrder) {
  Tensor a = from_vector(std::vector<float>{1, 2}, {2});
  Tensor b = exp(a * 2.5 + 1.0);
  std::string ir = lazy::dump_ir({b.ir_value().get()});
  // 2.5 is device data (a number that may change between steps), 1 a constant.
  EXPECT_EQ(ir,
            "IR {\n"
            "  %0 = f32[2]{0} xla::device_data(), device=cpu:0\n"
            "  %1 = f32[] xla::device_data(), device=cpu:0\n"
            "  %2 = f32[2]{0} aten::mul(%0, %1)\n"
            "  %3 = f32[] prim::Constant(), value=1\n"
            "  %4 = f32[2]{0} aten::add(%2, %3)\n"
            "  %5 = f32[2]{0} aten::exp(%4)\n"
            "  %5 = ROOT.output(0)\n"
            "}\n");
}

TEST(LazyExecution, MarkStepMaterialisesEveryLiveTensorInOneGraph) {
  Tensor a = from_vector(std::vector<float>{1, 2}, {2});
  Tensor b = a + 1.0;
  Tensor c = a * 3.0;
  int64_t marks = runtime::counter_value("MarkStep");
  int64_t executions = runtime::metric_data("ExecuteTime") ? runtime::metric_data("ExecuteTime")->total_samples : 0;
  lazy::mark_step();
  EXPECT_FALSE(b.impl()->has_pending_ir());
  EXPECT_FALSE(c.impl()->has_pending_ir());
  EXPECT_EQ(runtime::counter_value("MarkStep"), marks + 1);
  lazy::wait_device_ops();  // mark_step only enqueued the execution
  ASSERT_TRUE(runtime::metric_data("ExecuteTime"));
  EXPECT_EQ(runtime::metric_data("ExecuteTime")->total_samples, executions + 1);
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{2, 3}));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{3, 6}));
}

TEST(LazyExecution, AttributesEnterTheHash) {
  // Same ops and shapes, different attribute (softmax's dim): two graphs.
  Tensor a = from_vector(std::vector<float>{0, 0, 0, std::log(3.0f)}, {2, 2});
  int64_t uncached = runtime::counter_value("UncachedCompile");
  std::vector<float> by_column = softmax(a, 0).to_vector<float>();
  std::vector<float> by_row = softmax(a, 1).to_vector<float>();
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), uncached + 2);
  EXPECT_NEAR(by_column[0], 0.5f, 1e-6);
  EXPECT_NEAR(by_column[1], 0.25f, 1e-6);
  EXPECT_NEAR(by_row[2], 0.25f, 1e-6);
  EXPECT_NEAR(by_row[3], 0.75f, 1e-6);
  // Constants (the special scalars 0 and ±1) are attributes too: x*1 and x*-1 differ.
  EXPECT_EQ((a * -1.0).to_vector<float>()[3], -std::log(3.0f));
  EXPECT_EQ((a * 1.0).to_vector<float>()[3], std::log(3.0f));
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), uncached + 4);
}

TEST(LazyExecution, HloOfTheLastGraphIsXlaText) {
  Tensor a = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  Tensor b = matmul(a, a.t()) + 0.25;
  b.to_vector<float>();
  std::string hlo = lazy::last_compiled_hlo();
  EXPECT_NE(hlo.find("HloModule SyncTensorsGraph"), std::string::npos) << hlo;
  EXPECT_NE(hlo.find("dot("), std::string::npos) << hlo;
  EXPECT_NE(hlo.find("lhs_contracting_dims={1}, rhs_batch_dims={}, rhs_contracting_dims={1}"), std::string::npos) << hlo;
  EXPECT_NE(hlo.find("ROOT %tuple"), std::string::npos) << hlo;
}

}  // namespace
}  // namespace lazytrain
