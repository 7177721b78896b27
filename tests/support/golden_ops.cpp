#include "golden_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.h"

namespace lazytrain::testing {

namespace {

using json = nlohmann::json;
using Args = GoldenArgs;

const std::string kGoldenDir = std::string(LAZYTRAIN_SOURCE_DIR) + "/tests/golden";

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

// The Python number the generator passed for `v` beside tensor x
// (tools/make_golden_ops.py scalar()): an integral value beside an integer or
// bool tensor as a Python int, any other as a Python float.
Scalar scalar(const Tensor& x, const json& v) {
  const double d = num(v);
  if (!is_floating_point(x.dtype()) && d == std::floor(d)) return Scalar(static_cast<int64_t>(d));
  return Scalar(d);
}

DType dtype_from_torch_name(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (torch_name(static_cast<DType>(i)) == name) return static_cast<DType>(i);
  }
  throw Error("[ops golden] unknown dtype '" + name + "'");
}

DType dtype_attr(const json& attrs, DType fallback) {
  return attrs.contains("dtype") ? dtype_from_torch_name(attrs["dtype"].get<std::string>()) : fallback;
}

template <typename T>
std::vector<T> values_of(const train::TensorRecord& r) {
  std::vector<T> v(r.data.size() / sizeof(T));
  std::memcpy(v.data(), r.data.data(), v.size() * sizeof(T));
  return v;
}

// The pieces of split/chunk as one tensor: each flattened, concatenated in order
// (the generator's flat_cat), so one case checks every piece and its gradient.
Tensor flat_cat(const std::vector<Tensor>& parts) {
  std::vector<Tensor> flat;
  for (const Tensor& p : parts) flat.push_back(reshape(p, {-1}));
  return cat(flat, 0);
}

}  // namespace

const std::map<std::string, GoldenOp>& golden_op_table() {
  static const std::map<std::string, GoldenOp> table = {
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
                         const Literal b = in[0].to_literal();
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
      {"add_scalar", {"add(const Tensor&, Scalar, Loc)", [](const Args& in, const json& a) { return add(in[0], scalar(in[0], a["value"])); }}},
      {"sub_scalar", {"sub(const Tensor&, Scalar, Loc)", [](const Args& in, const json& a) { return sub(in[0], scalar(in[0], a["value"])); }}},
      {"mul_scalar", {"mul(const Tensor&, Scalar, Loc)", [](const Args& in, const json& a) { return mul(in[0], scalar(in[0], a["value"])); }}},
      {"div_scalar", {"div(const Tensor&, Scalar, Loc)", [](const Args& in, const json& a) { return div(in[0], scalar(in[0], a["value"])); }}},
      {"pow", {"pow(const Tensor&, Scalar, Loc)", [](const Args& in, const json& a) { return pow(in[0], num(a["exponent"])); }}},
      {"neg", {"neg(const Tensor&, Loc)", [](const Args& in, const json&) { return neg(in[0]); }}},
      {"exp", {"exp(const Tensor&, Loc)", [](const Args& in, const json&) { return exp(in[0]); }}},
      {"log", {"log(const Tensor&, Loc)", [](const Args& in, const json&) { return log(in[0]); }}},
      {"sqrt", {"sqrt(const Tensor&, Loc)", [](const Args& in, const json&) { return sqrt(in[0]); }}},
      {"rsqrt", {"rsqrt(const Tensor&, Loc)", [](const Args& in, const json&) { return rsqrt(in[0]); }}},
      {"tanh", {"tanh(const Tensor&, Loc)", [](const Args& in, const json&) { return tanh(in[0]); }}},
      {"erf", {"erf(const Tensor&, Loc)", [](const Args& in, const json&) { return erf(in[0]); }}},
      {"abs", {"abs(const Tensor&, Loc)", [](const Args& in, const json&) { return abs(in[0]); }}},
      {"relu", {"relu(const Tensor&, Loc)", [](const Args& in, const json&) { return relu(in[0]); }}},
      {"gelu", {"gelu(const Tensor&, const std::string&, Loc)", [](const Args& in, const json&) { return gelu(in[0]); }}},
      {"gelu_tanh", {"gelu(const Tensor&, const std::string&, Loc)", [](const Args& in, const json&) { return gelu(in[0], "tanh"); }}},
      {"sigmoid", {"sigmoid(const Tensor&, Loc)", [](const Args& in, const json&) { return sigmoid(in[0]); }}},
      {"silu", {"silu(const Tensor&, Loc)", [](const Args& in, const json&) { return silu(in[0]); }}},
      {"sin", {"sin(const Tensor&, Loc)", [](const Args& in, const json&) { return sin(in[0]); }}},
      {"cos", {"cos(const Tensor&, Loc)", [](const Args& in, const json&) { return cos(in[0]); }}},
      {"clamp", {"clamp(const Tensor&, std::optional<double>, std::optional<double>, Loc)",
                 [](const Args& in, const json& a) {
                   std::optional<double> lo, hi;
                   if (a.contains("min")) lo = num(a["min"]);
                   if (a.contains("max")) hi = num(a["max"]);
                   return clamp(in[0], lo, hi);
                 }}},
      {"eq", {"eq(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return eq(in[0], in[1]); }}},
      {"ne", {"ne(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return ne(in[0], in[1]); }}},
      {"lt", {"lt(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return lt(in[0], in[1]); }}},
      {"le", {"le(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return le(in[0], in[1]); }}},
      {"gt", {"gt(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return gt(in[0], in[1]); }}},
      {"ge", {"ge(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return ge(in[0], in[1]); }}},
      {"eq_scalar", {"eq(const Tensor&, Scalar, Loc)", [](const Args& in, const json& a) { return eq(in[0], scalar(in[0], a["value"])); }}},
      {"ne_scalar", {"ne(const Tensor&, Scalar, Loc)", [](const Args& in, const json& a) { return ne(in[0], scalar(in[0], a["value"])); }}},
      {"lt_scalar", {"lt(const Tensor&, Scalar, Loc)", [](const Args& in, const json& a) { return lt(in[0], scalar(in[0], a["value"])); }}},
      {"gt_scalar", {"gt(const Tensor&, Scalar, Loc)", [](const Args& in, const json& a) { return gt(in[0], scalar(in[0], a["value"])); }}},
      {"logical_and", {"logical_and(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return logical_and(in[0], in[1]); }}},
      {"logical_or", {"logical_or(const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return logical_or(in[0], in[1]); }}},
      {"logical_not", {"logical_not(const Tensor&, Loc)", [](const Args& in, const json&) { return logical_not(in[0]); }}},
      {"where", {"where(const Tensor&, const Tensor&, const Tensor&, Loc)", [](const Args& in, const json&) { return where(in[0], in[1], in[2]); }}},
      {"masked_fill", {"masked_fill(const Tensor&, const Tensor&, double, Loc)",
                       [](const Args& in, const json& a) { return masked_fill(in[0], in[1], num(a["value"])); }}},
      {"to_dtype", {"to_dtype(const Tensor&, DType, Loc)",
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
      {"cumsum", {"cumsum(const Tensor&, int64_t, Loc)", [](const Args& in, const json& a) { return cumsum(in[0], a["dim"].get<int64_t>()); }}},
      {"topk", {"topk(const Tensor&, int64_t, int64_t, bool, bool, Loc)",
                [](const Args& in, const json& a) {
                  return std::get<0>(topk(in[0], a["k"].get<int64_t>(), a.value("dim", int64_t{-1}), a.value("largest", true)));
                }}},
      {"topk_indices", {"topk(const Tensor&, int64_t, int64_t, bool, bool, Loc)",
                        [](const Args& in, const json& a) {
                          return std::get<1>(topk(in[0], a["k"].get<int64_t>(), a.value("dim", int64_t{-1}), a.value("largest", true)));
                        }}},
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
      {"stack", {"stack(const std::vector<Tensor>&, int64_t, Loc)", [](const Args& in, const json& a) { return stack(in, a["dim"].get<int64_t>()); }}},
      {"split", {"split(const Tensor&, int64_t, int64_t, Loc)",
                 [](const Args& in, const json& a) { return flat_cat(split(in[0], a["split_size"].get<int64_t>(), a["dim"].get<int64_t>())); }}},
      {"split_sections", {"split(const Tensor&, const std::vector<int64_t>&, int64_t, Loc)",
                          [](const Args& in, const json& a) {
                            return flat_cat(split(in[0], a["sections"].get<std::vector<int64_t>>(), a["dim"].get<int64_t>()));
                          }}},
      {"chunk", {"chunk(const Tensor&, int64_t, int64_t, Loc)",
                 [](const Args& in, const json& a) { return flat_cat(chunk(in[0], a["chunks"].get<int64_t>(), a["dim"].get<int64_t>())); }}},
      {"tril", {"tril(const Tensor&, int64_t, Loc)", [](const Args& in, const json& a) { return tril(in[0], a.value("diagonal", int64_t{0})); }}},
      {"triu", {"triu(const Tensor&, int64_t, Loc)", [](const Args& in, const json& a) { return triu(in[0], a.value("diagonal", int64_t{0})); }}},
      {"repeat_interleave", {"repeat_interleave(const Tensor&, int64_t, std::optional<int64_t>, Loc)",
                             [](const Args& in, const json& a) {
                               std::optional<int64_t> dim;
                               if (a.contains("dim")) dim = a["dim"].get<int64_t>();
                               return repeat_interleave(in[0], a["repeats"].get<int64_t>(), dim);
                             }}},
      {"gather", {"gather(const Tensor&, int64_t, const Tensor&, Loc)", [](const Args& in, const json& a) { return gather(in[0], a["dim"].get<int64_t>(), in[1]); }}},
      {"scatter_add", {"scatter_add(const Tensor&, int64_t, const Tensor&, const Tensor&, Loc)",
                       [](const Args& in, const json& a) { return scatter_add(in[0], a["dim"].get<int64_t>(), in[1], in[2]); }}},
      // nn functions
      {"rms_norm", {"rms_norm(const Tensor&, const Shape&, const Tensor&, std::optional<double>, Loc)",
                    [](const Args& in, const json& a) {
                      std::optional<double> eps;
                      if (a.contains("eps")) eps = num(a["eps"]);
                      return rms_norm(in[0], shape_attr(a["normalized_shape"]), in.size() > 1 ? in[1] : Tensor(), eps);
                    }}},
      {"sdpa", {"scaled_dot_product_attention(const Tensor&, const Tensor&, const Tensor&, const Tensor&, double, bool, std::optional<double>, Loc)",
                [](const Args& in, const json& a) {
                  std::optional<double> scale;
                  if (a.contains("scale")) scale = num(a["scale"]);
                  return scaled_dot_product_attention(in[0], in[1], in[2], in.size() > 3 ? in[3] : Tensor(), 0.0, a.value("is_causal", false), scale);
                }}},
      {"embedding", {"embedding(const Tensor&, const Tensor&, int64_t, Loc)",
                     [](const Args& in, const json& a) { return embedding(in[0], in[1], a.value("padding_idx", int64_t{-1})); }}},
      {"softmax", {"softmax(const Tensor&, int64_t, Loc)", [](const Args& in, const json& a) { return softmax(in[0], a["dim"].get<int64_t>()); }}},
      {"logsumexp", {"logsumexp(const Tensor&, std::vector<int64_t>, bool, Loc)",
                     [](const Args& in, const json& a) { return logsumexp(in[0], a["dims"].get<std::vector<int64_t>>(), a["keepdim"].get<bool>()); }}},
      {"log_softmax", {"log_softmax(const Tensor&, int64_t, Loc)",
                       [](const Args& in, const json& a) { return log_softmax(in[0], a["dim"].get<int64_t>()); }}},
      {"layer_norm", {"layer_norm(const Tensor&, const Shape&, const Tensor&, const Tensor&, double, Loc)",
                      [](const Args& in, const json& a) {
                        Tensor w = in.size() > 1 ? in[1] : Tensor(), b = in.size() > 2 ? in[2] : Tensor();
                        return layer_norm(in[0], shape_attr(a["normalized_shape"]), w, b, num(a["eps"]));
                      }}},
      {"dropout", {"dropout(const Tensor&, double, bool, Loc)",
                   [](const Args& in, const json& a) { return dropout(in[0], num(a["p"]), a["training"].get<bool>()); }}},
      {"cross_entropy", {"cross_entropy(const Tensor&, const Tensor&, int64_t, Loc)",
                         [](const Args& in, const json& a) { return cross_entropy(in[0], in[1], a.value("ignore_index", int64_t{-100})); }}},
      {"linear", {"linear(const Tensor&, const Tensor&, const Tensor&, Loc)",
                  [](const Args& in, const json&) { return linear(in[0], in[1], in.size() > 2 ? in[2] : Tensor()); }}},
      // operators
      {"op_add", {"operator+(TensorOperand, const Tensor&)", [](const Args& in, const json&) { return in[0] + in[1]; }}},
      {"op_sub", {"operator-(TensorOperand, const Tensor&)", [](const Args& in, const json&) { return in[0] - in[1]; }}},
      {"op_mul", {"operator*(TensorOperand, const Tensor&)", [](const Args& in, const json&) { return in[0] * in[1]; }}},
      {"op_div", {"operator/(TensorOperand, const Tensor&)", [](const Args& in, const json&) { return in[0] / in[1]; }}},
      {"op_add_scalar", {"operator+(TensorOperand, Scalar)", [](const Args& in, const json& a) { return in[0] + scalar(in[0], a["value"]); }}},
      {"op_sub_scalar", {"operator-(TensorOperand, Scalar)", [](const Args& in, const json& a) { return in[0] - scalar(in[0], a["value"]); }}},
      {"op_mul_scalar", {"operator*(TensorOperand, Scalar)", [](const Args& in, const json& a) { return in[0] * scalar(in[0], a["value"]); }}},
      {"op_div_scalar", {"operator/(TensorOperand, Scalar)", [](const Args& in, const json& a) { return in[0] / scalar(in[0], a["value"]); }}},
      {"op_radd_scalar", {"operator+(Scalar, TensorOperand)", [](const Args& in, const json& a) { return scalar(in[0], a["value"]) + in[0]; }}},
      {"op_rsub_scalar", {"operator-(Scalar, TensorOperand)", [](const Args& in, const json& a) { return scalar(in[0], a["value"]) - in[0]; }}},
      {"op_rmul_scalar", {"operator*(Scalar, TensorOperand)", [](const Args& in, const json& a) { return scalar(in[0], a["value"]) * in[0]; }}},
      {"op_neg", {"operator-(TensorOperand)", [](const Args& in, const json&) { return -in[0]; }}},
  };
  return table;
}

const GoldenOpsData& golden_ops_data() {
  static const GoldenOpsData data = [] {
    GoldenOpsData d;
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

std::vector<std::string> golden_case_names() {
  std::vector<std::string> names;
  for (const json& c : golden_ops_data().cases) names.push_back(c["name"].get<std::string>());
  return names;
}

const json& golden_case(const std::string& name) {
  for (const json& c : golden_ops_data().cases) {
    if (c["name"] == name) return c;
  }
  throw Error("[ops golden] no case " + name);
}

const train::TensorRecord& golden_record(const std::string& name) {
  auto it = golden_ops_data().tensors.find(name);
  if (it == golden_ops_data().tensors.end()) throw Error("[ops golden] tensor '" + name + "' is missing from ops.safetensors");
  return it->second;
}

Tensor golden_tensor(const std::string& name) {
  const train::TensorRecord& r = golden_record(name);
  return from_buffer(r.data.data(), r.shape, dtype_from_safetensors_name(r.dtype));
}

void expect_matches_golden(const std::string& what, const Tensor& actual, const train::TensorRecord& expected) {
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
    const double atol = kGoldenAtol * std::clamp(max_abs, 1e-3, 1.0);
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double av = a[i], ev = e[i];
      if (std::isnan(ev) || std::isinf(ev)) {
        if (!(std::isnan(ev) ? std::isnan(av) : av == ev)) fail(i, std::to_string(av), std::to_string(ev));
        continue;
      }
      const double err = std::fabs(av - ev);
      worst = std::max(worst, err / std::max(atol, kGoldenRtol * std::fabs(ev)));
      if (!(err <= std::max(atol, kGoldenRtol * std::fabs(ev)))) {
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

}  // namespace lazytrain::testing
