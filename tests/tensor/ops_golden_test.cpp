// Golden test of every tensor op, forward and backward, against PyTorch (ggml's
// test-backend-ops style: one table of cases).
//
// The cases, their inputs and PyTorch's results come from tools/make_golden_ops.py:
//   tests/golden/ops.json          the case table: name, op, attrs, inputs (dtype, shape, grad)
//   tests/golden/ops.safetensors   "<case>.in<i>", "<case>.out", "<case>.r", "<case>.grad<i>"
// Each case runs `op` on the inputs, compares the output, then runs
// sum(out * r).backward() and compares every differentiable input's grad().
// Regenerate the data: /usr/bin/python3 tools/make_golden_ops.py
//
// kOps below maps each op name of the table to the overload of tensor/ops.h it
// calls; OpsCoverage checks that every function declared in ops.h is called by
// at least one case, so a new op cannot land without a golden case.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "lazy/lazy_api.h"
#include "../support/golden_ops.h"
#include "../support/ops_header.h"
#include "tensor/tensor.h"
#include "train/safetensors.h"

namespace lazytrain {
namespace {

using json = nlohmann::json;

const std::string kOpsHeader = std::string(LAZYTRAIN_SOURCE_DIR) + "/src/tensor/ops.h";

// The case table, data and comparison live in tests/support/golden_ops.h (the
// CPU backend's differential test runs the same cases).
using testing::GoldenArgs;
using Args = GoldenArgs;
const std::map<std::string, testing::GoldenOp>& ops_table() { return testing::golden_op_table(); }
const testing::GoldenOpsData& golden() { return testing::golden_ops_data(); }
const train::TensorRecord& record_of(const std::string& name) { return testing::golden_record(name); }
Tensor tensor_of(const train::TensorRecord& r) { return from_buffer(r.data.data(), r.shape, dtype_from_safetensors_name(r.dtype)); }
std::vector<std::string> case_names() { return testing::golden_case_names(); }
const json& case_by_name(const std::string& name) { return testing::golden_case(name); }
void expect_matches(const std::string& what, const Tensor& actual, const train::TensorRecord& expected) {
  testing::expect_matches_golden(what, actual, expected);
}

// Functions of ops.h that no golden case can check against PyTorch, and the
// test of this file that covers each instead.
const std::map<std::string, std::string>& not_golden() {
  static const std::map<std::string, std::string> m = {
      {"rand(const Shape&, DType)", "OpsRandom.RandIsUniformInUnitInterval (PyTorch's generator differs)"},
      {"randn(const Shape&, DType)", "OpsRandom.RandnHasStandardMoments (PyTorch's generator differs)"},
      {"manual_seed(uint64_t)", "OpsRandom.ManualSeedRepeatsTheStream"},
      {"host_randn(int64_t)", "OpsRandom.HostRandnIsSeededStandardNormal (std::mt19937_64, not PyTorch's generator)"},
      {"get_rng_state()", "OpsRandom.RngStateRestoresBothStreams (generator state, no values to compare)"},
      {"set_rng_state(const RngState&)", "OpsRandom.RngStateRestoresBothStreams"},
      // Data-dependent shapes: the golden cases hold no host-synchronising ops.
      {"nonzero(const Tensor&, Loc)", "ExecutionModes.DataDependentShapesSyncInLazyModeAndWorkEagerly (values and gradient in each mode)"},
      {"masked_select(const Tensor&, const Tensor&, Loc)", "ExecutionModes.DataDependentShapesSyncInLazyModeAndWorkEagerly"},
      // Added after the golden file (torch 1.13): checked against torch 2.13's values in
      // tests/tensor/reductions_test.cpp and against torch in tests/python/test_reductions_torch.py.
      {"amin(const Tensor&, std::vector<int64_t>, bool, Loc)", "Reductions.AminIsExactForBoolAndInt64Limits, Reductions.AminGradientIsSharedBetweenTies"},
      {"argmin(const Tensor&, int64_t, bool, Loc)", "Reductions.ArgmaxAndArgminTakeTheFirstNan"},
      {"prod(const Tensor&, std::vector<int64_t>, bool, Loc)", "Reductions.ProdValuesDtypesAndGradientAtZeros"},
      {"any(const Tensor&, std::vector<int64_t>, bool, Loc)", "Reductions.AnyAndAllCountNanAsTrue"},
      {"all(const Tensor&, std::vector<int64_t>, bool, Loc)", "Reductions.AnyAndAllCountNanAsTrue"},
      // XLA's, not a PyTorch op (torch 1.13 has none to compare with).
      {"optimization_barrier(const Tensor&, const Tensor&, Loc)",
       "OptimizationBarrier.PassesXAndItsGradient, GradientCheckpointing.RecomputationRunsEveryLayersForwardAgain"},
      // Added after the golden file (made by torch 1.13, which this machine lacks): checked
      // against torch 2.13's values in tests/tensor/type_promotion_test.cpp and, over every
      // dtype pair, in tests/python/test_type_promotion.py.
      {"wrap_scalar(Scalar, const Tensor&)", "TypePromotion.ScalarOperandsPromoteByKind"},
      {"pow(const Tensor&, const Tensor&, Loc)", "TypePromotion.PowOfTensorsAndIntegerPowers"},
      {"floor_divide(const Tensor&, const Tensor&, Loc)", "TypePromotion.FloorDivideAndRemainderRoundDown"},
      {"remainder(const Tensor&, const Tensor&, Loc)", "TypePromotion.FloorDivideAndRemainderRoundDown"},
      {"bitwise_and(const Tensor&, const Tensor&, Loc)", "TypePromotion.BitwiseOnIntegersLogicalOnBool"},
      {"bitwise_or(const Tensor&, const Tensor&, Loc)", "TypePromotion.BitwiseOnIntegersLogicalOnBool"},
      {"bitwise_xor(const Tensor&, const Tensor&, Loc)", "TypePromotion.BitwiseOnIntegersLogicalOnBool"},
      {"bitwise_not(const Tensor&, Loc)", "TypePromotion.BitwiseOnIntegersLogicalOnBool"},
      {"le(const Tensor&, Scalar, Loc)", "TypePromotion.ScalarOperandsPromoteByKind"},
      {"ge(const Tensor&, Scalar, Loc)", "TypePromotion.ScalarOperandsPromoteByKind"},
      {"where(const Tensor&, const Tensor&, Scalar, Loc)", "TypePromotion.WhereWithNumbers"},
      {"where(const Tensor&, Scalar, const Tensor&, Loc)", "TypePromotion.WhereWithNumbers"},
      {"where(const Tensor&, Scalar, Scalar, Loc)", "TypePromotion.WhereWithNumbers"},
  };
  return m;
}

// ---- the golden test ----

TEST(OpsGoldenFiles, Load) {
  ASSERT_EQ(golden().error, "") << "regenerate with: /usr/bin/python3 tools/make_golden_ops.py";
  EXPECT_GT(golden().cases.size(), 100u);
}

class OpsGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(OpsGolden, ForwardBackward) {
  const json& c = case_by_name(GetParam());
  const std::string name = c["name"].get<std::string>();
  const std::string op = c["op"].get<std::string>();
  const json& attrs = c["attrs"];
  auto it = ops_table().find(op);
  ASSERT_NE(it, ops_table().end()) << "op '" << op << "' of case " << name << " has no entry in ops_table()";

  // Inputs: leaves, the differentiable ones requiring grad.
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < c["inputs"].size(); ++i) {
    Tensor t = tensor_of(record_of(name + ".in" + std::to_string(i)));
    if (c["inputs"][i]["grad"].get<bool>()) t.requires_grad_();
    inputs.push_back(t);
  }
  Args args;
  if (attrs.contains("args")) {
    for (const json& k : attrs["args"]) args.push_back(inputs.at(k.get<size_t>()));
  } else {
    args = inputs;
  }

  Tensor out = it->second.fn(args, attrs);
  const train::TensorRecord& expected_out = record_of(name + ".out");

  if (!c["backward"].get<bool>()) {
    expect_matches(name + " forward", out, expected_out);
    return;
  }

  // Forward and backward land in one graph: sync the output and every gradient together.
  ASSERT_TRUE(out.requires_grad()) << name << ": the output of " << op << " does not require grad (no gradient rule recorded)";
  Tensor r = tensor_of(record_of(name + ".r"));
  sum(mul(out, r)).backward();
  std::vector<lazy::LazyTensor*> pending = {out.impl().get()};
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].grad().defined()) pending.push_back(inputs[i].grad().impl().get());
  }
  lazy::sync(pending);

  expect_matches(name + " forward", out, expected_out);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string what = name + " grad of input " + std::to_string(i);
    if (c["inputs"][i]["grad"].get<bool>()) {
      ASSERT_TRUE(inputs[i].grad().defined()) << what << ": no gradient";
      expect_matches(what, inputs[i].grad(), record_of(name + ".grad" + std::to_string(i)));
    } else {
      EXPECT_FALSE(inputs[i].grad().defined()) << what << ": got a gradient for an input that does not require one";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, OpsGolden, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// ---- coverage: every function of ops.h is exercised by a golden case ----

TEST(OpsCoverage, EveryFunctionOfOpsHeaderHasAGoldenCase) {
  ASSERT_EQ(golden().error, "");
  std::set<std::string> declared = testing::declared_functions(kOpsHeader);
  ASSERT_GT(declared.size(), 80u) << "parsing " << kOpsHeader << " found too few declarations";

  std::set<std::string> covered;
  std::set<std::string> used_ops;
  for (const json& c : golden().cases) {
    const std::string op = c["op"].get<std::string>();
    auto it = ops_table().find(op);
    ASSERT_NE(it, ops_table().end()) << "case " << c["name"] << " uses op '" << op << "' missing from ops_table()";
    covered.insert(it->second.signature);
    used_ops.insert(op);
  }
  for (const std::string& sig : declared) {
    EXPECT_TRUE(covered.count(sig) || not_golden().count(sig))
        << sig << " is declared in src/tensor/ops.h but no golden case calls it: add a case to tools/make_golden_ops.py "
        << "and an entry to ops_table() in " << __FILE__;
  }
  for (const auto& [op, entry] : ops_table()) {
    EXPECT_TRUE(declared.count(entry.signature)) << "ops_table()[\"" << op << "\"] calls " << entry.signature
                                                 << ", which src/tensor/ops.h no longer declares";
    EXPECT_TRUE(used_ops.count(op)) << "ops_table()[\"" << op << "\"] is used by no golden case";
  }
  for (const auto& [sig, test] : not_golden()) {
    EXPECT_TRUE(declared.count(sig)) << sig << " is listed as not golden but ops.h no longer declares it";
  }
}

TEST(OpsErrors, GeluNamesTheApproximationsItKnows) {
  try {
    gelu(ones({2}), "erf");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aten::gelu"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("approximate must be 'none' or 'tanh', got 'erf'"), std::string::npos) << e.what();
  }
}

// A bf16 GELU is computed in float and rounded once, as PyTorch's kernels do:
// forward and gradient within one bf16 ULP of double precision on a grid over
// [-4, 6] (rounding after every op was off by up to 40% near x = -3). Below -4,
// 1 + erf(x/√2) cancels in float itself, in PyTorch's kernel too.
TEST(OpsBf16, GeluIsComputedInFloatAndRoundedOnce) {
  std::vector<float> grid;
  for (int i = 0; i <= 80; ++i) grid.push_back(static_cast<float>(BFloat16(-4.0f + 0.125f * static_cast<float>(i))));
  const int64_t n = static_cast<int64_t>(grid.size());
  // |got - want| within one bf16 ULP at |want| (the spacing above its bf16 rounding).
  auto within_one_ulp = [](float got, double want) {
    BFloat16 above(std::fabs(static_cast<float>(want)));
    const float low = static_cast<float>(above);
    above.bits = static_cast<uint16_t>(above.bits + 1);
    return std::fabs(got - want) <= std::max<double>(static_cast<float>(above) - low, 1e-30);
  };
  for (const std::string approximate : {"none", "tanh"}) {
    Tensor x = to_dtype(from_vector(grid, {n}), DType::kBFloat16);
    x.requires_grad_();
    Tensor y = gelu(x, approximate);
    sum(to_dtype(y, DType::kFloat32)).backward();
    const std::vector<float> out = to_dtype(y, DType::kFloat32).to_vector<float>();
    const std::vector<float> grad = to_dtype(x.grad(), DType::kFloat32).to_vector<float>();
    for (int64_t i = 0; i < n; ++i) {
      const double v = grid[static_cast<size_t>(i)];
      double want, slope;
      if (approximate == "none") {
        want = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
        slope = 0.5 * (1 + std::erf(v / std::sqrt(2.0))) + v * std::exp(-0.5 * v * v) / std::sqrt(2 * M_PI);
      } else {
        const double beta = std::sqrt(2 / M_PI), kappa = 0.044715, u = std::tanh(beta * (v + kappa * v * v * v));
        want = 0.5 * v * (1 + u);
        slope = 0.5 * (1 + u) + 0.5 * v * (1 - u * u) * beta * (1 + 3 * kappa * v * v);
      }
      EXPECT_TRUE(within_one_ulp(out[static_cast<size_t>(i)], want)) << approximate << " gelu(" << v << ") = " << out[static_cast<size_t>(i)] << ", want " << want;
      EXPECT_TRUE(within_one_ulp(grad[static_cast<size_t>(i)], slope)) << approximate << " gelu'(" << v << ") = " << grad[static_cast<size_t>(i)] << ", want " << slope;
    }
  }
}

TEST(OpsCoverage, DeclarationParserNormalisesSignatures) {
  std::set<std::string> declared = testing::declared_functions(kOpsHeader);
  EXPECT_TRUE(declared.count("add(const Tensor&, const Tensor&, double, Loc)"));
  EXPECT_TRUE(declared.count("add(const Tensor&, Scalar, Loc)"));
  EXPECT_TRUE(declared.count("operator-(Scalar, TensorOperand)"));
  EXPECT_TRUE(declared.count("operator-(TensorOperand)"));
  EXPECT_TRUE(declared.count("layer_norm(const Tensor&, const Shape&, const Tensor&, const Tensor&, double, Loc)"));
  EXPECT_TRUE(declared.count("manual_seed(uint64_t)"));
  EXPECT_TRUE(declared.count("topk(const Tensor&, int64_t, int64_t, bool, bool, Loc)"));
  EXPECT_TRUE(declared.count("split(const Tensor&, const std::vector<int64_t>&, int64_t, Loc)"));
}

// ---- the ops PyTorch cannot be golden for: random numbers ----

TEST(OpsRandom, RandIsUniformInUnitInterval) {
  manual_seed(1234);
  std::vector<float> v = rand({100, 100}).to_vector<float>();
  double total = 0, below_quarter = 0;
  for (float x : v) {
    ASSERT_GE(x, 0.0f);
    ASSERT_LT(x, 1.0f);
    total += x;
    below_quarter += x < 0.25f;
  }
  EXPECT_NEAR(total / v.size(), 0.5, 0.01);
  EXPECT_NEAR(below_quarter / v.size(), 0.25, 0.015);
}

// Finite values with mean 0, variance 1 and 68.27% within one standard deviation.
void expect_standard_normal(const std::vector<float>& v) {
  double s = 0, s2 = 0, within_one = 0;
  for (float x : v) {
    ASSERT_TRUE(std::isfinite(x));
    s += x;
    s2 += static_cast<double>(x) * x;
    within_one += std::fabs(x) < 1.0f;
  }
  const double n = static_cast<double>(v.size());
  EXPECT_NEAR(s / n, 0.0, 0.03);
  EXPECT_NEAR(s2 / n - (s / n) * (s / n), 1.0, 0.04);
  EXPECT_NEAR(within_one / n, 0.6827, 0.015);
}

TEST(OpsRandom, RandnHasStandardMoments) {
  manual_seed(99);
  expect_standard_normal(randn({200, 100}).to_vector<float>());
}

TEST(OpsRandom, ManualSeedRepeatsTheStream) {
  manual_seed(7);
  std::vector<float> a1 = rand({64}).to_vector<float>();
  std::vector<float> a2 = rand({64}).to_vector<float>();
  manual_seed(7);
  std::vector<float> b1 = rand({64}).to_vector<float>();
  std::vector<float> b2 = rand({64}).to_vector<float>();
  manual_seed(8);
  std::vector<float> c1 = rand({64}).to_vector<float>();
  EXPECT_EQ(a1, b1);
  EXPECT_EQ(a2, b2);
  EXPECT_NE(a1, a2);
  EXPECT_NE(a1, c1);
}

TEST(OpsRandom, RngStateRestoresBothStreams) {
  // torch.get_rng_state / set_rng_state: the device stream (per-op seeds) and the host one continue where they were.
  manual_seed(11);
  rand({8}).to_vector<float>();
  host_randn(3);
  const RngState saved = get_rng_state();
  const std::vector<float> device_next = rand({64}).to_vector<float>();
  const std::vector<float> host_next = host_randn(6);
  manual_seed(12);
  set_rng_state(saved);
  EXPECT_EQ(rand({64}).to_vector<float>(), device_next);
  EXPECT_EQ(host_randn(6), host_next);
  EXPECT_EQ(get_rng_state().seed, 11u);
  RngState bad = saved;
  bad.host = "not a generator";
  EXPECT_THROW(set_rng_state(bad), Error);
}

TEST(OpsRandom, HostRandnIsSeededStandardNormal) {
  manual_seed(5);
  std::vector<float> a = host_randn(20001);  // odd: the last Box-Muller pair is cut in half
  manual_seed(5);
  std::vector<float> b = host_randn(20001);
  std::vector<float> c = host_randn(20001);
  ASSERT_EQ(a.size(), 20001u);
  EXPECT_EQ(a, b);
  EXPECT_NE(b, c);
  expect_standard_normal(a);
}

TEST(OpsRandom, DropoutTrainingZeroesAndRescales) {
  manual_seed(42);
  const double p = 0.25;
  Tensor x = full({50, 40}, 2.0);
  x.requires_grad_();
  Tensor y = dropout(x, p, true);
  sum(y).backward();
  std::vector<float> yv = y.to_vector<float>();
  std::vector<float> gv = x.grad().to_vector<float>();
  int64_t zeros_count = 0;
  for (size_t i = 0; i < yv.size(); ++i) {
    if (yv[i] == 0.0f) {
      ++zeros_count;
      EXPECT_EQ(gv[i], 0.0f) << i;
    } else {
      EXPECT_FLOAT_EQ(yv[i], static_cast<float>(2.0 / (1.0 - p))) << i;
      EXPECT_FLOAT_EQ(gv[i], static_cast<float>(1.0 / (1.0 - p))) << i;
    }
  }
  EXPECT_NEAR(static_cast<double>(zeros_count) / yv.size(), p, 0.03);
}

}  // namespace
}  // namespace lazytrain
