// compile(fn) (tensor/compile.h): traced once per signature, replayed after.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "lazy/lazy_api.h"
#include "runtime/metrics.h"
#include "tensor/autograd.h"
#include "tensor/compile.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

TEST(Compile, TracesOncePerSignatureAndReplaysTheExecutable) {
  Tensor w = from_vector(std::vector<float>{1, 2, 3}, {3});
  CompiledFunction f = compile([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * w + 1.0}; });
  const std::vector<float> out1 = f({from_vector(std::vector<float>{1, 1, 1}, {3})})[0].to_vector<float>();
  EXPECT_EQ(out1, (std::vector<float>{2, 3, 4}));
  const int64_t compiles = runtime::counter_value("UncachedCompile");
  // Another value, same signature: the function is not called again.
  EXPECT_EQ(f({from_vector(std::vector<float>{2, 0, -1}, {3})})[0].to_vector<float>(), (std::vector<float>{3, 1, -2}));
  // A captured tensor's new value is read at each call, not the traced one.
  w.set_data(from_vector(std::vector<float>{10, 10, 10}, {3}));
  EXPECT_EQ(f({from_vector(std::vector<float>{1, 2, 3}, {3})})[0].to_vector<float>(), (std::vector<float>{11, 21, 31}));
  EXPECT_EQ(f.trace_count(), 1);
  EXPECT_EQ(f.graph_count(), 1u);
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), compiles);
  // A new shape traces again.
  Tensor v = from_vector(std::vector<float>{1, 2, 3, 4}, {4});
  CompiledFunction g = compile([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(in[0] * in[0])}; });
  EXPECT_FLOAT_EQ(static_cast<float>(g({v})[0].item()), 30.0f);
  EXPECT_FLOAT_EQ(static_cast<float>(g({from_vector(std::vector<float>{1, 1}, {2})})[0].item()), 2.0f);
  EXPECT_EQ(g.trace_count(), 2);
}

TEST(Compile, InPlaceUpdatesOfCapturedTensorsAreReplayed) {
  // An SGD step on a captured weight: the update is an output of the graph.
  Tensor w = from_vector(std::vector<float>{1, 2}, {2});
  CompiledFunction step = compile([&](const std::vector<Tensor>& in) {
    Tensor loss = sum(w * in[0]);
    w.set_data(w - in[0] * 0.5);  // d loss / d w = x
    return std::vector<Tensor>{loss};
  });
  Tensor x = from_vector(std::vector<float>{1, 1}, {2});
  EXPECT_FLOAT_EQ(static_cast<float>(step({x})[0].item()), 3.0f);
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{0.5f, 1.5f}));
  EXPECT_FLOAT_EQ(static_cast<float>(step({x})[0].item()), 2.0f);
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{0.0f, 1.0f}));
  EXPECT_EQ(step.trace_count(), 1);
}

TEST(Compile, StaticArgumentsAreGuarded) {
  CompiledFunction scale = compile([](const std::vector<Tensor>& in, const std::vector<int64_t>& k) {
    return std::vector<Tensor>{in[0] * static_cast<double>(k[0])};
  });
  Tensor x = from_vector(std::vector<float>{1, 2}, {2});
  EXPECT_EQ(scale({x}, {3})[0].to_vector<float>(), (std::vector<float>{3, 6}));
  EXPECT_EQ(scale({x}, {5})[0].to_vector<float>(), (std::vector<float>{5, 10}));
  EXPECT_EQ(scale({x}, {3})[0].to_vector<float>(), (std::vector<float>{3, 6}));
  EXPECT_EQ(scale.trace_count(), 2);
}

// PyTorch/XLA issue #7622: a function whose input shape changes every call.
TEST(Compile, MaxDifferentGraphsRaisesOnTheFourthShapeNamingTheInput) {
  CompileOptions options;
  options.name = "forward";
  options.max_different_graphs = 3;
  CompiledFunction f = compile([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[1] * 2.0}; }, options);
  Tensor fixed = zeros({2});
  for (int64_t n = 1; n <= 3; ++n) f({fixed, zeros({4, n})});
  f({fixed, zeros({4, 2})});  // a signature seen before: fine
  try {
    f({fixed, zeros({4, 7})});
    FAIL() << "a fourth graph was allowed";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "[compile] forward would compile graph 4, more than max_different_graphs=3: input 1 changed from f32[4, 2] to f32[4, 7] "
              "(dimension 1: 2 -> 7)");
  }
  EXPECT_EQ(f.graph_count(), 3u);
}

TEST(Compile, AFunctionThatReadsAValueIsRefused) {
  CompiledFunction f = compile([](const std::vector<Tensor>& in) {
    Tensor y = in[0] + 1.0;
    (void)y.item();
    return std::vector<Tensor>{y};
  });
  try {
    f({from_vector(std::vector<float>{1}, {1})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ran a graph while being traced"), std::string::npos) << e.what();
  }
}

TEST(Compile, ATensorLeftAliveInsideIsRefusedByName) {
  Tensor w = from_vector(std::vector<float>{1, 2}, {2});
  w.requires_grad_();
  CompiledFunction f = compile([&](const std::vector<Tensor>& in) {
    Tensor loss = sum(w * in[0]);
    loss.backward();  // leaves w.grad() alive
    return std::vector<Tensor>{loss.detach()};
  });
  try {
    f({from_vector(std::vector<float>{1, 1}, {2})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("leaves a tensor it computed alive"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f32[2]"), std::string::npos) << e.what();
  }
}

// torch.compile keeps autograd: the output's backward reaches the inputs and
// the parameters the function reads (d/dx sum(3 x^2 w) = 6 x w, d/dw = 3 x^2).
TEST(Compile, OutputsBackpropagateToInputsAndCapturedParameters) {
  Tensor w = from_vector(std::vector<float>{1, 2}, {2});
  w.requires_grad_();
  CompiledFunction f = compile([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(in[0] * in[0] * 3.0 * w)}; });
  for (int call = 0; call < 2; ++call) {  // the trace, then a replay
    Tensor x = from_vector(std::vector<float>{1, -2}, {2});
    x.requires_grad_();
    w.set_grad(Tensor());
    Tensor out = f({x})[0];
    ASSERT_TRUE(out.requires_grad());
    EXPECT_EQ(out.impl()->grad_fn->name, "CompiledFunctionBackward");
    out.backward();
    EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{6, -24}));
    EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{3, 12}));
  }
  EXPECT_EQ(f.trace_count(), 1);
  // Without grad mode, or nothing requiring grad, the outputs have no history.
  EXPECT_FALSE(compile([](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(in[0])}; })({from_vector(std::vector<float>{1}, {1})})[0]
                   .requires_grad());
}

}  // namespace
}  // namespace lazytrain
