// Numbers given to ops (the `double` and `Scalar` arguments of tensor/ops.h) follow
// PyTorch/XLA's rule: 0 and ±1 are constants, every other value is device data,
// so a number that changes between steps compiles once. ScalarSweep runs every
// scalar-taking function of ops.h with two values and checks one compile and
// the values; a coverage check fails when ops.h gains one without a case here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "../support/ops_header.h"
#include "../support/backend_scope.h"
#include "backend/compiler.h"
#include "backend/cpu/cpu_pipeline.h"
#include "lazy/graph_lowering.h"
#include "lazy/lazy_api.h"
#include "runtime/metrics.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

const std::vector<float> kX = {0.25f, -1.5f, 2.0f, 3.5f};
Tensor x_tensor() { return from_vector(kX, {4}); }
Tensor y_tensor() { return from_vector(std::vector<float>{1.0f, 2.0f, -0.5f, 4.0f}, {4}); }
const std::vector<float> kY = {1.0f, 2.0f, -0.5f, 4.0f};
Tensor mask_tensor() { return gt(from_vector(std::vector<float>{1, 0, 1, 0}, {4}), 0.5); }

std::vector<float> values_of(const Tensor& t) { return to_dtype(t, DType::kFloat32).to_vector<float>(); }

// Elementwise expectation f(x_i, y_i, v).
std::vector<float> each(const std::function<double(double, double)>& f) {
  std::vector<float> out;
  for (size_t i = 0; i < kX.size(); ++i) out.push_back(static_cast<float>(f(kX[i], kY[i])));
  return out;
}

struct ScalarCase {
  std::function<Tensor(double v)> run;
  // Expected values for v; empty function: `check` decides.
  std::function<std::vector<float>(double v)> expected;
  std::function<void(double v, const std::vector<float>& got)> check;
};

// Signature in ops.h -> the case that calls it.
const std::map<std::string, ScalarCase>& scalar_cases() {
  static const std::map<std::string, ScalarCase> cases = {
      {"full(const Shape&, double, DType)",
       {[](double v) { return full({3}, v); }, [](double v) { return std::vector<float>(3, static_cast<float>(v)); }, {}}},
      {"scalar_tensor(double, DType)", {[](double v) { return scalar_tensor(v); }, [](double v) { return std::vector<float>{static_cast<float>(v)}; }, {}}},
      {"add(const Tensor&, const Tensor&, double, Loc)",
       {[](double v) { return add(x_tensor(), y_tensor(), v); }, [](double v) { return each([v](double x, double y) { return x + v * y; }); }, {}}},
      {"sub(const Tensor&, const Tensor&, double, Loc)",
       {[](double v) { return sub(x_tensor(), y_tensor(), v); }, [](double v) { return each([v](double x, double y) { return x - v * y; }); }, {}}},
      {"add(const Tensor&, Scalar, Loc)", {[](double v) { return add(x_tensor(), v); }, [](double v) { return each([v](double x, double) { return x + v; }); }, {}}},
      {"sub(const Tensor&, Scalar, Loc)", {[](double v) { return sub(x_tensor(), v); }, [](double v) { return each([v](double x, double) { return x - v; }); }, {}}},
      {"mul(const Tensor&, Scalar, Loc)", {[](double v) { return mul(x_tensor(), v); }, [](double v) { return each([v](double x, double) { return x * v; }); }, {}}},
      {"div(const Tensor&, Scalar, Loc)", {[](double v) { return div(x_tensor(), v); }, [](double v) { return each([v](double x, double) { return x / v; }); }, {}}},
      {"pow(const Tensor&, Scalar, Loc)",
       {[](double v) { return pow(abs(x_tensor()), v); }, [](double v) { return each([v](double x, double) { return std::pow(std::fabs(x), v); }); }, {}}},
      {"eq(const Tensor&, Scalar, Loc)", {[](double v) { return eq(x_tensor(), v); }, [](double v) { return each([v](double x, double) { return x == v; }); }, {}}},
      {"ne(const Tensor&, Scalar, Loc)", {[](double v) { return ne(x_tensor(), v); }, [](double v) { return each([v](double x, double) { return x != v; }); }, {}}},
      {"lt(const Tensor&, Scalar, Loc)", {[](double v) { return lt(x_tensor(), v); }, [](double v) { return each([v](double x, double) { return x < v; }); }, {}}},
      {"gt(const Tensor&, Scalar, Loc)", {[](double v) { return gt(x_tensor(), v); }, [](double v) { return each([v](double x, double) { return x > v; }); }, {}}},
      {"le(const Tensor&, Scalar, Loc)", {[](double v) { return le(x_tensor(), v); }, [](double v) { return each([v](double x, double) { return x <= v; }); }, {}}},
      {"ge(const Tensor&, Scalar, Loc)", {[](double v) { return ge(x_tensor(), v); }, [](double v) { return each([v](double x, double) { return x >= v; }); }, {}}},
      {"wrap_scalar(Scalar, const Tensor&)",
       {[](double v) { return add(x_tensor(), wrap_scalar(v, x_tensor())); }, [](double v) { return each([v](double x, double) { return x + v; }); }, {}}},
      {"where(const Tensor&, const Tensor&, Scalar, Loc)",
       {[](double v) { return where(mask_tensor(), x_tensor(), v); },
        [](double v) { return std::vector<float>{kX[0], static_cast<float>(v), kX[2], static_cast<float>(v)}; }, {}}},
      {"where(const Tensor&, Scalar, const Tensor&, Loc)",
       {[](double v) { return where(mask_tensor(), v, x_tensor()); },
        [](double v) { return std::vector<float>{static_cast<float>(v), kX[1], static_cast<float>(v), kX[3]}; }, {}}},
      {"where(const Tensor&, Scalar, Scalar, Loc)",
       {[](double v) { return where(mask_tensor(), v, -v); },
        [](double v) { return std::vector<float>{static_cast<float>(v), static_cast<float>(-v), static_cast<float>(v), static_cast<float>(-v)}; }, {}}},
      {"masked_fill(const Tensor&, const Tensor&, double, Loc)",
       {[](double v) { return masked_fill(x_tensor(), mask_tensor(), v); },
        [](double v) { return std::vector<float>{static_cast<float>(v), kX[1], static_cast<float>(v), kX[3]}; }, {}}},
      {"layer_norm(const Tensor&, const Shape&, const Tensor&, const Tensor&, double, Loc)",
       {[](double v) { return layer_norm(x_tensor(), {4}, y_tensor(), Tensor(), v); },
        [](double eps) {
          double mean = 0, var = 0;
          for (float x : kX) mean += x / 4.0;
          for (float x : kX) var += (x - mean) * (x - mean) / 4.0;
          return each([&](double x, double y) { return (x - mean) / std::sqrt(var + eps) * y; });
        },
        {}}},
      {"dropout(const Tensor&, double, bool, Loc)",
       {[](double p) { return dropout(full({4096}, 2.0), p, true); }, {},
        [](double p, const std::vector<float>& got) {
          // Every element is 0 or 2/(1-p), and about a fraction p are zero.
          const float kept = static_cast<float>(2.0 / (1.0 - p));
          double zeros = 0;
          for (float g : got) {
            ASSERT_TRUE(g == 0.0f || std::fabs(g - kept) < 1e-5f * kept) << g << " with p=" << p;
            zeros += g == 0.0f;
          }
          EXPECT_NEAR(zeros / static_cast<double>(got.size()), p, 0.05);
        }}},
      {"clamp(const Tensor&, std::optional<double>, std::optional<double>, Loc)",
       {[](double v) { return clamp(x_tensor(), -v, v); }, [](double v) { return each([v](double x, double) { return std::min(std::max(x, -v), v); }); }, {}}},
      {"rms_norm(const Tensor&, const Shape&, const Tensor&, std::optional<double>, Loc)",
       {[](double v) { return rms_norm(x_tensor(), {4}, y_tensor(), v); },
        [](double eps) {
          double ms = 0;
          for (float x : kX) ms += x * x / 4.0;
          return each([&](double x, double y) { return x / std::sqrt(ms + eps) * y; });
        },
        {}}},
      // The scale: q = k = v = x as [2, 2] (L = S = E = 2).
      {"scaled_dot_product_attention(const Tensor&, const Tensor&, const Tensor&, const Tensor&, double, bool, std::optional<double>, Loc)",
       {[](double v) {
          Tensor x = reshape(x_tensor(), {2, 2});
          return scaled_dot_product_attention(x, x, x, Tensor(), 0.0, false, v);
        },
        [](double scale) {
          std::vector<float> out;
          for (int i = 0; i < 2; ++i) {
            double s[2], total = 0;
            for (int j = 0; j < 2; ++j) {
              s[j] = std::exp(scale * (kX[2 * i] * kX[2 * j] + kX[2 * i + 1] * kX[2 * j + 1]));
              total += s[j];
            }
            for (int e = 0; e < 2; ++e) out.push_back(static_cast<float>((s[0] * kX[e] + s[1] * kX[2 + e]) / total));
          }
          return out;
        },
        {}}},
      {"operator+(TensorOperand, Scalar)", {[](double v) { return x_tensor() + v; }, [](double v) { return each([v](double x, double) { return x + v; }); }, {}}},
      {"operator-(TensorOperand, Scalar)", {[](double v) { return x_tensor() - v; }, [](double v) { return each([v](double x, double) { return x - v; }); }, {}}},
      {"operator*(TensorOperand, Scalar)", {[](double v) { return x_tensor() * v; }, [](double v) { return each([v](double x, double) { return x * v; }); }, {}}},
      {"operator/(TensorOperand, Scalar)", {[](double v) { return x_tensor() / v; }, [](double v) { return each([v](double x, double) { return x / v; }); }, {}}},
      {"operator+(Scalar, TensorOperand)", {[](double v) { return v + x_tensor(); }, [](double v) { return each([v](double x, double) { return v + x; }); }, {}}},
      {"operator-(Scalar, TensorOperand)", {[](double v) { return v - x_tensor(); }, [](double v) { return each([v](double x, double) { return v - x; }); }, {}}},
      {"operator*(Scalar, TensorOperand)", {[](double v) { return v * x_tensor(); }, [](double v) { return each([v](double x, double) { return v * x; }); }, {}}},
  };
  return cases;
}

using testing::InterpreterScope;

TEST(ScalarOperand, EveryScalarTakingOpOfOpsHeaderHasASweepCase) {
  std::set<std::string> declared = testing::declared_functions(testing::ops_header_path());
  ASSERT_GT(declared.size(), 80u);
  size_t taking_double = 0;
  for (const std::string& sig : declared) {
    if (sig.find("double") == std::string::npos && sig.find("Scalar") == std::string::npos) continue;
    ++taking_double;
    EXPECT_TRUE(scalar_cases().count(sig)) << sig << " takes a number but has no case in scalar_cases() of " << __FILE__;
  }
  EXPECT_EQ(taking_double, scalar_cases().size()) << "a case names a signature ops.h no longer declares";
}

class ScalarSweep : public ::testing::TestWithParam<std::string> {};

TEST_P(ScalarSweep, TwoValuesCompileOnce) {
  InterpreterScope interpreter;
  const ScalarCase& c = scalar_cases().at(GetParam());
  int64_t compiles = runtime::counter_value("UncachedCompile");
  for (double v : {0.3, 0.7}) {
    const std::vector<float> got = values_of(c.run(v));
    if (c.expected) {
      const std::vector<float> want = c.expected(v);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << "v=" << v << " i=" << i;
    } else {
      c.check(v, got);
    }
    // The first value compiles the graph (none for scalar_tensor: a read of device
    // data); the second reuses it (values_of's cast for bool results included).
    if (v == 0.3) {
      EXPECT_LE(runtime::counter_value("UncachedCompile"), compiles + 1);
      compiles = runtime::counter_value("UncachedCompile");
    }
  }
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), compiles) << GetParam() << " recompiled for a new value";
}

INSTANTIATE_TEST_SUITE_P(Ops, ScalarSweep, ::testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (const auto& [sig, c] : scalar_cases()) names.push_back(sig);
                           return names;
                         }()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name;
                           for (char ch : info.param) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return name + "_" + std::to_string(info.index);
                         });

// A hand-written schedule: the number changes every step, the graph does not.
// The first step also computes ones() for w and g (they are pending IR until
// then, as in PyTorch/XLA), so it is a graph of its own; every later step is one
// cached graph.
TEST(ScalarOperand, ChangingLearningRateCompilesOnce) {
  InterpreterScope interpreter;
  Tensor w = ones({4}), g = ones({4});
  const int64_t compiles = runtime::counter_value("UncachedCompile");
  const int64_t hits = runtime::counter_value("CachedCompile");
  for (int s = 1; s <= 10; ++s) {
    w = w - g * (0.01 * s);
    lazy::mark_step();
  }
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), compiles + 2);  // step 1 (with ones()), step 2
  EXPECT_EQ(runtime::counter_value("CachedCompile"), hits + 8);        // steps 3..10
  for (float v : w.to_vector<float>()) EXPECT_NEAR(v, 1.0 - 0.55, 1e-6);
  // With w and g already on the device, the loop is the graph of steps 2..10: no compile.
  Tensor w2 = from_vector(std::vector<float>{1, 1, 1, 1}, {4}), g2 = from_vector(std::vector<float>{1, 1, 1, 1}, {4});
  const int64_t before = runtime::counter_value("UncachedCompile");
  for (int s = 1; s <= 10; ++s) {
    w2 = w2 - g2 * (0.02 * s);
    lazy::mark_step();
  }
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), before);
  for (float v : w2.to_vector<float>()) EXPECT_NEAR(v, 1.0 - 1.1, 1e-6);
}

// 0 and ±1 stay constants (in the hash, visible to the simplifier); others are data.
TEST(ScalarOperand, SpecialValuesStayConstants) {
  Tensor a = from_vector(std::vector<float>{1, 2}, {2});
  EXPECT_EQ(lazy::dump_ir({(a * 1.0).ir_value().get()}),
            "IR {\n"
            "  %0 = f32[2]{0} xla::device_data(), device=cpu:0\n"
            "  %1 = f32[] prim::Constant(), value=1\n"
            "  %2 = f32[2]{0} aten::mul(%0, %1)\n"
            "  %2 = ROOT.output(0)\n"
            "}\n");
  for (double special : {0.0, 1.0, -1.0}) {
    EXPECT_EQ((a + special).ir_value()->operand(1)->op(), "prim::Constant") << special;
  }
  for (double other : {0.5, 2.0, -2.0, 1e-12, std::nan("")}) {
    EXPECT_TRUE((a + other).ir_value()->operand(1)->is_device_data()) << other;
  }
  // x * 1 + 0 simplifies away: after the passes no multiply or add is left.
  Tensor y = a * 1.0 + 0.0;
  hlo::HloModule m = lazy::lower_graph(lazy::graph_signature({y.ir_value().get()}), "special");
  for (const auto& pass : backend::cpu::cpu_pass_pipeline()) pass->run(m);
  const std::string text = m.to_string();
  EXPECT_EQ(text.find("multiply"), std::string::npos) << text;
  EXPECT_EQ(text.find(" add("), std::string::npos) << text;
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 2}));
}

// 0.0 and -0.0 compare equal but are different constants: graphs that differ only in
// the sign of a zero hash apart (the graph cache served one the other's executable).
TEST(ScalarOperand, SignedZerosAreDifferentGraphs) {
  Tensor a = from_vector(std::vector<float>{1, 2}, {2});
  for (int round = 0; round < 2; ++round) {
    const Tensor one = from_vector(std::vector<float>{1, 1}, {2});
    const std::vector<float> negative = div(one, a * -0.0).to_vector<float>();
    const std::vector<float> positive = div(one, a * 0.0).to_vector<float>();
    for (float v : negative) EXPECT_EQ(v, -INFINITY) << round;
    for (float v : positive) EXPECT_EQ(v, INFINITY) << round;
  }
}

// One device-data node per (value, dtype): a value used twice is one graph parameter.
TEST(ScalarOperand, EqualValuesShareOneParameter) {
  Tensor a = from_vector(std::vector<float>{1, 2}, {2});
  Tensor b = a * 0.5 + a * 0.5;
  lazy::GraphSignature sig = lazy::graph_signature({b.ir_value().get()});
  EXPECT_EQ(sig.parameters.size(), 2u);  // a and 0.5
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{1, 2}));
  // The cached value is never donated (another graph may read it again).
  Tensor c = a * 0.5;
  EXPECT_EQ(lazy::donatable_parameters(lazy::graph_signature({c.ir_value().get()})), (std::vector<bool>{false, false}));
}

}  // namespace
}  // namespace lazytrain
