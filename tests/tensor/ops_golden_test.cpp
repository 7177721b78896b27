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
#include "lazy/graph_executor.h"
#include "tensor/tensor.h"
#include "train/safetensors.h"

namespace lazytrain {
namespace {

using json = nlohmann::json;

const std::string kGoldenDir = std::string(LAZYTRAIN_SOURCE_DIR) + "/tests/golden";
const std::string kOpsHeader = std::string(LAZYTRAIN_SOURCE_DIR) + "/src/tensor/ops.h";

// ---- attribute helpers ----

// A double attribute; JSON cannot hold infinities, so the generator writes "inf" / "-inf".
double num(const json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    throw Error("[ops golden] bad number attribute '" + s + "'");
  }
  return v.get<double>();
}

Shape shape_attr(const json& v) { return v.get<std::vector<int64_t>>(); }

DType dtype_from_torch_name(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (torch_name(static_cast<DType>(i)) == name) return static_cast<DType>(i);
  }
  throw Error("[ops golden] unknown dtype '" + name + "'");
}

DType dtype_attr(const json& attrs, DType fallback) {
  return attrs.contains("dtype") ? dtype_from_torch_name(attrs["dtype"].get<std::string>()) : fallback;
}

// ---- the op table ----

using Args = std::vector<Tensor>;
using OpFn = std::function<Tensor(const Args& in, const json& attrs)>;

struct Op {
  // The ops.h overload this entry calls, normalised as declared_functions() does.
  std::string signature;
  OpFn fn;
};

const std::map<std::string, Op>& ops_table() {
  static const std::map<std::string, Op> table = {
      // creation
      {"zeros", {"zeros(const Shape&, DType)", [](const Args&, const json& a) { return zeros(shape_attr(a["shape"]), dtype_attr(a, DType::kFloat32)); }}},
      {"ones", {"ones(const Shape&, DType)", [](const Args&, const json& a) { return ones(shape_attr(a["shape"]), dtype_attr(a, DType::kFloat32)); }}},
      {"full", {"full(const Shape&, double, DType)",
                [](const Args&, const json& a) { return full(shape_attr(a["shape"]), num(a["value"]), dtype_attr(a, DType::kFloat32)); }}},
      {"arange", {"arange(int64_t, int64_t, int64_t, DType)",
                  [](const Args&, const json& a) {
                    return arange(a["start"].get<int64_t>(), a["end"].get<int64_t>(), a["step"].get<int64_t>(), dtype_attr(a, DType::kInt64));
                  }}},
      {"arange_end", {"arange(int64_t, DType)", [](const Args&, const json& a) { return arange(a["end"].get<int64_t>(), dtype_attr(a, DType::kInt64)); }}},
      {"scalar_tensor", {"scalar_tensor(double, DType)", [](const Args&, const json& a) { return scalar_tensor(num(a["value"]), dtype_attr(a, DType::kFloat32)); }}},
      {"from_vector_f32", {"from_vector(const std::vector<float>&, const Shape&)",
                           [](const Args& in, const json&) { return from_vector(in[0].to_vector<float>(), in[0].shape()); }}},
      {"from_vector_i64", {"from_vector(const std::vector<int64_t>&, const Shape&)",
                           [](const Args& in, const json&) { return from_vector(in[0].to_vector<int64_t>(), in[0].shape()); }}},
      {"from_buffer", {"from_buffer(const void*, const Shape&, DType)",
                       [](const Args& in, const json&) {
                         const runtime::Buffer& b = in[0].buffer();
                         return from_buffer(b.raw(), b.shape(), b.dtype());
                       }}},
      // elementwise
      {"add", {"add(const Tensor&, const Tensor&, double, Loc)",
               [](const Args& in, const json& a) { return a.contains("alpha") ? add(in[0], in[1], num(a["alpha"])) : add(in[0], in[1]); }}},
      {"sub", {"sub(const Tensor&, const Tensor&, double, Loc)",
               [](const Args& in, const json& a) { return a.contains("alpha") ? sub(in[0], in[1], num(a["alpha"])) : sub(in[0], in[1]); }}},
      {"mul", {"mul(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return mul(in[0], in[1]); }}},
      {"div", {"div(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return div(in[0], in[1]); }}},
      {"maximum", {"maximum(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return maximum(in[0], in[1]); }}},
      {"minimum", {"minimum(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return minimum(in[0], in[1]); }}},
      {"add_scalar", {"add(const Tensor&, double)", [](const Args& in, const json& a) { return add(in[0], num(a["value"])); }}},
      {"sub_scalar", {"sub(const Tensor&, double)", [](const Args& in, const json& a) { return sub(in[0], num(a["value"])); }}},
      {"mul_scalar", {"mul(const Tensor&, double)", [](const Args& in, const json& a) { return mul(in[0], num(a["value"])); }}},
      {"div_scalar", {"div(const Tensor&, double)", [](const Args& in, const json& a) { return div(in[0], num(a["value"])); }}},
      {"pow", {"pow(const Tensor&, double)", [](const Args& in, const json& a) { return pow(in[0], num(a["exponent"])); }}},
      {"neg", {"neg(const Tensor&)", [](const Args& in, const json&) { return neg(in[0]); }}},
      {"exp", {"exp(const Tensor&)", [](const Args& in, const json&) { return exp(in[0]); }}},
      {"log", {"log(const Tensor&)", [](const Args& in, const json&) { return log(in[0]); }}},
      {"sqrt", {"sqrt(const Tensor&)", [](const Args& in, const json&) { return sqrt(in[0]); }}},
      {"rsqrt", {"rsqrt(const Tensor&)", [](const Args& in, const json&) { return rsqrt(in[0]); }}},
      {"tanh", {"tanh(const Tensor&)", [](const Args& in, const json&) { return tanh(in[0]); }}},
      {"erf", {"erf(const Tensor&)", [](const Args& in, const json&) { return erf(in[0]); }}},
      {"abs", {"abs(const Tensor&)", [](const Args& in, const json&) { return abs(in[0]); }}},
      {"relu", {"relu(const Tensor&)", [](const Args& in, const json&) { return relu(in[0]); }}},
      {"gelu", {"gelu(const Tensor&)", [](const Args& in, const json&) { return gelu(in[0]); }}},
      {"eq", {"eq(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return eq(in[0], in[1]); }}},
      {"ne", {"ne(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return ne(in[0], in[1]); }}},
      {"lt", {"lt(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return lt(in[0], in[1]); }}},
      {"le", {"le(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return le(in[0], in[1]); }}},
      {"gt", {"gt(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return gt(in[0], in[1]); }}},
      {"ge", {"ge(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return ge(in[0], in[1]); }}},
      {"eq_scalar", {"eq(const Tensor&, double)", [](const Args& in, const json& a) { return eq(in[0], num(a["value"])); }}},
      {"ne_scalar", {"ne(const Tensor&, double)", [](const Args& in, const json& a) { return ne(in[0], num(a["value"])); }}},
      {"lt_scalar", {"lt(const Tensor&, double)", [](const Args& in, const json& a) { return lt(in[0], num(a["value"])); }}},
      {"gt_scalar", {"gt(const Tensor&, double)", [](const Args& in, const json& a) { return gt(in[0], num(a["value"])); }}},
      {"logical_and", {"logical_and(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return logical_and(in[0], in[1]); }}},
      {"logical_or", {"logical_or(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return logical_or(in[0], in[1]); }}},
      {"logical_not", {"logical_not(const Tensor&)", [](const Args& in, const json&) { return logical_not(in[0]); }}},
      {"where", {"where(const Tensor&, const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return where(in[0], in[1], in[2]); }}},
      {"masked_fill", {"masked_fill(const Tensor&, const Tensor&, double, Loc)",
                       [](const Args& in, const json& a) { return masked_fill(in[0], in[1], num(a["value"])); }}},
      {"to_dtype", {"to_dtype(const Tensor&, DType)",
                    [](const Args& in, const json& a) {
                      Tensor x = in[0];
                      for (const auto& d : a["dtypes"]) x = to_dtype(x, dtype_from_torch_name(d.get<std::string>()));
                      return x;
                    }}},
      // matmul
      {"matmul", {"matmul(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return matmul(in[0], in[1]); }}},
      // reductions
      {"sum", {"sum(const Tensor&, std::vector<int64_t>, bool, Loc)",
               [](const Args& in, const json& a) { return sum(in[0], a["dims"].get<std::vector<int64_t>>(), a["keepdim"].get<bool>()); }}},
      {"mean", {"mean(const Tensor&, std::vector<int64_t>, bool, Loc)",
                [](const Args& in, const json& a) { return mean(in[0], a["dims"].get<std::vector<int64_t>>(), a["keepdim"].get<bool>()); }}},
      {"amax", {"amax(const Tensor&, std::vector<int64_t>, bool, Loc)",
                [](const Args& in, const json& a) { return amax(in[0], a["dims"].get<std::vector<int64_t>>(), a["keepdim"].get<bool>()); }}},
      {"argmax", {"argmax(const Tensor&, int64_t, bool, Loc)",
                  [](const Args& in, const json& a) { return argmax(in[0], a["dim"].get<int64_t>(), a["keepdim"].get<bool>()); }}},
      // views and data movement
      {"reshape", {"reshape(const Tensor&, Shape, Loc)", [](const Args& in, const json& a) { return reshape(in[0], shape_attr(a["shape"])); }}},
      {"view", {"view(const Tensor&, Shape, Loc)", [](const Args& in, const json& a) { return view(in[0], shape_attr(a["shape"])); }}},
      {"transpose", {"transpose(const Tensor&, int64_t, int64_t, Loc)",
                     [](const Args& in, const json& a) { return transpose(in[0], a["dim0"].get<int64_t>(), a["dim1"].get<int64_t>()); }}},
      {"permute", {"permute(const Tensor&, const std::vector<int64_t>&, Loc)",
                   [](const Args& in, const json& a) { return permute(in[0], a["dims"].get<std::vector<int64_t>>()); }}},
      {"unsqueeze", {"unsqueeze(const Tensor&, int64_t, Loc)", [](const Args& in, const json& a) { return unsqueeze(in[0], a["dim"].get<int64_t>()); }}},
      {"squeeze", {"squeeze(const Tensor&, int64_t, Loc)", [](const Args& in, const json& a) { return squeeze(in[0], a["dim"].get<int64_t>()); }}},
      {"expand", {"expand(const Tensor&, const Shape&, Loc)", [](const Args& in, const json& a) { return expand(in[0], shape_attr(a["shape"])); }}},
      {"slice", {"slice(const Tensor&, int64_t, int64_t, int64_t, int64_t, Loc)",
                 [](const Args& in, const json& a) {
                   return slice(in[0], a["dim"].get<int64_t>(), a["start"].get<int64_t>(), a["end"].get<int64_t>(), a.value("step", int64_t{1}));
                 }}},
      {"cat", {"cat(const std::vector<Tensor>&, int64_t, Loc)", [](const Args& in, const json& a) { return cat(in, a["dim"].get<int64_t>()); }}},
      {"index_select", {"index_select(const Tensor&, int64_t, const Tensor&, Loc)",
                        [](const Args& in, const json& a) { return index_select(in[0], a["dim"].get<int64_t>(), in[1]); }}},
      // nn functions
      {"embedding", {"embedding(const Tensor&, const Tensor&, int64_t, Loc)",
                     [](const Args& in, const json& a) { return embedding(in[0], in[1], a.value("padding_idx", int64_t{-1})); }}},
      {"softmax", {"softmax(const Tensor&, int64_t, Loc)", [](const Args& in, const json& a) { return softmax(in[0], a["dim"].get<int64_t>()); }}},
      {"log_softmax", {"log_softmax(const Tensor&, int64_t, Loc)",
                       [](const Args& in, const json& a) { return log_softmax(in[0], a["dim"].get<int64_t>()); }}},
      {"layer_norm", {"layer_norm(const Tensor&, const Shape&, const Tensor&, const Tensor&, double, Loc)",
                      [](const Args& in, const json& a) {
                        Tensor w = in.size() > 1 ? in[1] : Tensor(), b = in.size() > 2 ? in[2] : Tensor();
                        return layer_norm(in[0], shape_attr(a["normalized_shape"]), w, b, num(a["eps"]));
                      }}},
      {"dropout", {"dropout(const Tensor&, double, bool)",
                   [](const Args& in, const json& a) { return dropout(in[0], num(a["p"]), a["training"].get<bool>()); }}},
      {"cross_entropy", {"cross_entropy(const Tensor&, const Tensor&, int64_t, Loc)",
                         [](const Args& in, const json& a) { return cross_entropy(in[0], in[1], a.value("ignore_index", int64_t{-100})); }}},
      {"linear", {"linear(const Tensor&, const Tensor&, const Tensor&, Loc)",
                  [](const Args& in, const json&) { return linear(in[0], in[1], in.size() > 2 ? in[2] : Tensor()); }}},
      // operators
      {"op_add", {"operator+(const Tensor&, const Tensor&)", [](const Args& in, const json&) { return in[0] + in[1]; }}},
      {"op_sub", {"operator-(const Tensor&, const Tensor&)", [](const Args& in, const json&) { return in[0] - in[1]; }}},
      {"op_mul", {"operator*(const Tensor&, const Tensor&)", [](const Args& in, const json&) { return in[0] * in[1]; }}},
      {"op_div", {"operator/(const Tensor&, const Tensor&)", [](const Args& in, const json&) { return in[0] / in[1]; }}},
      {"op_add_scalar", {"operator+(const Tensor&, double)", [](const Args& in, const json& a) { return in[0] + num(a["value"]); }}},
      {"op_sub_scalar", {"operator-(const Tensor&, double)", [](const Args& in, const json& a) { return in[0] - num(a["value"]); }}},
      {"op_mul_scalar", {"operator*(const Tensor&, double)", [](const Args& in, const json& a) { return in[0] * num(a["value"]); }}},
      {"op_div_scalar", {"operator/(const Tensor&, double)", [](const Args& in, const json& a) { return in[0] / num(a["value"]); }}},
      {"op_radd_scalar", {"operator+(double, const Tensor&)", [](const Args& in, const json& a) { return num(a["value"]) + in[0]; }}},
      {"op_rsub_scalar", {"operator-(double, const Tensor&)", [](const Args& in, const json& a) { return num(a["value"]) - in[0]; }}},
      {"op_rmul_scalar", {"operator*(double, const Tensor&)", [](const Args& in, const json& a) { return num(a["value"]) * in[0]; }}},
      {"op_neg", {"operator-(const Tensor&)", [](const Args& in, const json&) { return -in[0]; }}},
  };
  return table;
}

// Functions of ops.h that no golden case can check against PyTorch, and the
// test of this file that covers each instead.
const std::map<std::string, std::string>& not_golden() {
  static const std::map<std::string, std::string> m = {
      {"rand(const Shape&, DType)", "OpsRandom.RandIsUniformInUnitInterval (PyTorch's generator differs)"},
      {"randn(const Shape&, DType)", "OpsRandom.RandnHasStandardMoments (PyTorch's generator differs)"},
      {"manual_seed(uint64_t)", "OpsRandom.ManualSeedRepeatsTheStream"},
      {"host_randn(int64_t)", "OpsRandom.HostRandnIsSeededStandardNormal (std::mt19937_64, not PyTorch's generator)"},
  };
  return m;
}

// ---- golden data ----

struct GoldenData {
  json cases = json::array();
  std::map<std::string, train::TensorRecord> tensors;
  std::string error;  // non-empty when loading failed
};

const GoldenData& golden() {
  static const GoldenData data = [] {
    GoldenData d;
    try {
      std::ifstream f(kGoldenDir + "/ops.json");
      if (!f) throw Error("cannot open " + kGoldenDir + "/ops.json");
      d.cases = json::parse(f)["cases"];
      d.tensors = train::load_safetensors(kGoldenDir + "/ops.safetensors");
    } catch (const std::exception& e) {
      d.error = e.what();
      d.cases = json::array();
    }
    return d;
  }();
  return data;
}

const train::TensorRecord& record_of(const std::string& name) {
  auto it = golden().tensors.find(name);
  if (it == golden().tensors.end()) throw Error("[ops golden] tensor '" + name + "' is missing from ops.safetensors");
  return it->second;
}

Tensor tensor_of(const train::TensorRecord& r) { return from_buffer(r.data.data(), r.shape, dtype_from_safetensors_name(r.dtype)); }

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const json& c : golden().cases) names.push_back(c["name"].get<std::string>());
  return names;
}

const json& case_by_name(const std::string& name) {
  for (const json& c : golden().cases) {
    if (c["name"] == name) return c;
  }
  throw Error("[ops golden] no case " + name);
}

// ---- comparison ----

constexpr double kRtol = 1e-4;
constexpr double kAtol = 1e-5;

template <typename T>
std::vector<T> values_of(const train::TensorRecord& r) {
  std::vector<T> v(r.data.size() / sizeof(T));
  std::memcpy(v.data(), r.data.data(), v.size() * sizeof(T));
  return v;
}

// Compares `actual` with the golden tensor `expected`: same shape and dtype; integer
// and bool values exactly; floats within |a - e| <= max(atol, rtol * |e|), where the
// absolute tolerance for values near zero is 1e-5 scaled down for tensors whose
// largest value is below 1 (so that small gradients, ~1e-5 in cross_entropy over
// 1000 classes, are still checked), never below 1e-8.
void expect_matches(const std::string& what, const Tensor& actual, const train::TensorRecord& expected) {
  ASSERT_TRUE(actual.defined()) << what << ": undefined tensor";
  ASSERT_EQ(actual.shape(), expected.shape) << what << ": shape";
  ASSERT_EQ(safetensors_name(actual.dtype()), expected.dtype) << what << ": dtype";
  const int64_t n = actual.numel();
  int failures = 0;
  std::ostringstream report;
  auto fail = [&](int64_t i, const std::string& a, const std::string& e) {
    if (failures++ < 8) report << "\n  [" << i << "] got " << a << ", expected " << e;
  };
  if (expected.dtype == "F32") {
    std::vector<float> a = actual.to_vector<float>();
    std::vector<float> e = values_of<float>(expected);
    double max_abs = 0;
    for (float v : e) {
      if (std::isfinite(v)) max_abs = std::max(max_abs, static_cast<double>(std::fabs(v)));
    }
    const double atol = kAtol * std::clamp(max_abs, 1e-3, 1.0);
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double av = a[i], ev = e[i];
      if (std::isnan(ev) || std::isinf(ev)) {
        if (!(std::isnan(ev) ? std::isnan(av) : av == ev)) fail(i, std::to_string(av), std::to_string(ev));
        continue;
      }
      const double err = std::fabs(av - ev);
      worst = std::max(worst, err / std::max(atol, kRtol * std::fabs(ev)));
      if (!(err <= std::max(atol, kRtol * std::fabs(ev)))) {
        std::ostringstream as, es;
        as.precision(9);
        es.precision(9);
        as << av;
        es << ev;
        fail(i, as.str(), es.str());
      }
    }
    EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << n << " values differ (worst error " << worst
                           << " x tolerance)" << report.str();
  } else if (expected.dtype == "I64" || expected.dtype == "I32") {
    std::vector<int64_t> a = actual.to_vector<int64_t>();
    std::vector<int64_t> e;
    if (expected.dtype == "I64") e = values_of<int64_t>(expected);
    else for (int32_t v : values_of<int32_t>(expected)) e.push_back(v);
    for (int64_t i = 0; i < n; ++i) {
      if (a[i] != e[i]) fail(i, std::to_string(a[i]), std::to_string(e[i]));
    }
    EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << n << " values differ" << report.str();
  } else if (expected.dtype == "BOOL") {
    std::vector<uint8_t> a = actual.to_vector<uint8_t>();
    std::vector<uint8_t> e = values_of<uint8_t>(expected);
    for (int64_t i = 0; i < n; ++i) {
      if ((a[i] != 0) != (e[i] != 0)) fail(i, a[i] ? "true" : "false", e[i] ? "true" : "false");
    }
    EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << n << " values differ" << report.str();
  } else {
    FAIL() << what << ": unexpected golden dtype " << expected.dtype;
  }
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
  lazy::GraphExecutor::get().sync(pending);

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

// "name(type, type, ...)" for every function declared in ops.h: comments dropped,
// parameter names and default values removed, whitespace collapsed.
std::set<std::string> declared_functions(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw Error("cannot open " + path);
  std::string text, line;
  while (std::getline(f, line)) {
    if (auto p = line.find("//"); p != std::string::npos) line.erase(p);
    text += line + " ";
  }
  text = std::regex_replace(text, std::regex("\\s+"), " ");
  std::set<std::string> out;
  const std::regex decl("^\\s*[A-Za-z_][\\w:<>]*\\s+(operator[^\\s(]+|\\w+)\\s*\\((.*)\\)\\s*$");
  const std::regex param("^\\s*(.*?)\\s*\\b\\w+\\s*$");
  std::stringstream statements(text);
  std::string st;
  while (std::getline(statements, st, ';')) {
    std::smatch m;
    if (!std::regex_match(st, m, decl)) continue;
    const std::string fname = m[1], params = m[2];
    if (fname == "namespace" || fname == "class" || fname == "using") continue;
    // Split the parameters at top-level commas.
    std::vector<std::string> parts;
    std::string cur;
    int depth = 0;
    for (char ch : params) {
      if (ch == '(' || ch == '<' || ch == '{') ++depth;
      if (ch == ')' || ch == '>' || ch == '}') --depth;
      if (ch == ',' && depth == 0) {
        parts.push_back(cur);
        cur.clear();
      } else {
        cur += ch;
      }
    }
    if (!std::regex_match(cur, std::regex("^\\s*$"))) parts.push_back(cur);
    std::string sig = fname + "(";
    for (size_t i = 0; i < parts.size(); ++i) {
      std::string p = parts[i].substr(0, parts[i].find('='));
      std::smatch pm;
      if (std::regex_match(p, pm, param)) p = pm[1];
      sig += (i ? ", " : "") + p;
    }
    out.insert(sig + ")");
  }
  return out;
}

TEST(OpsCoverage, EveryFunctionOfOpsHeaderHasAGoldenCase) {
  ASSERT_EQ(golden().error, "");
  std::set<std::string> declared = declared_functions(kOpsHeader);
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

TEST(OpsCoverage, DeclarationParserNormalisesSignatures) {
  std::set<std::string> declared = declared_functions(kOpsHeader);
  EXPECT_TRUE(declared.count("add(const Tensor&, const Tensor&, double, Loc)"));
  EXPECT_TRUE(declared.count("add(const Tensor&, double)"));
  EXPECT_TRUE(declared.count("operator-(double, const Tensor&)"));
  EXPECT_TRUE(declared.count("operator-(const Tensor&)"));
  EXPECT_TRUE(declared.count("layer_norm(const Tensor&, const Shape&, const Tensor&, const Tensor&, double, Loc)"));
  EXPECT_TRUE(declared.count("manual_seed(uint64_t)"));
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

TEST(OpsRandom, RandnHasStandardMoments) {
  manual_seed(99);
  std::vector<float> v = randn({200, 100}).to_vector<float>();
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

TEST(OpsRandom, HostRandnIsSeededStandardNormal) {
  manual_seed(5);
  std::vector<float> a = host_randn(20001);  // odd: the last Box-Muller pair is cut in half
  manual_seed(5);
  std::vector<float> b = host_randn(20001);
  std::vector<float> c = host_randn(20001);
  ASSERT_EQ(a.size(), 20001u);
  EXPECT_EQ(a, b);
  EXPECT_NE(b, c);
  double s = 0, s2 = 0, within_one = 0;
  for (float x : a) {
    ASSERT_TRUE(std::isfinite(x));
    s += x;
    s2 += static_cast<double>(x) * x;
    within_one += std::fabs(x) < 1.0f;
  }
  const double n = static_cast<double>(a.size());
  EXPECT_NEAR(s / n, 0.0, 0.03);
  EXPECT_NEAR(s2 / n - (s / n) * (s / n), 1.0, 0.04);
  EXPECT_NEAR(within_one / n, 0.6827, 0.015);
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
