// The golden op cases (tests/golden/ops.json + ops.safetensors, made by
// tools/make_golden_ops.py) as a library, so that more than one test can run
// them: the op table (case op name -> the tensor/ops.h call), the case data and
// the comparison with PyTorch's values.
//
// tests/tensor/ops_golden_test.cpp runs every case on the default backend and
// checks (OpsCoverage) that this table covers every function of ops.h.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "train/safetensors.h"

namespace lazytrain::testing {

using GoldenArgs = std::vector<Tensor>;
using GoldenOpFn = std::function<Tensor(const GoldenArgs& in, const nlohmann::json& attrs)>;

struct GoldenOp {
  std::string signature;  // the ops.h overload it calls
  GoldenOpFn fn;
};

// Op name of a case -> the call.
const std::map<std::string, GoldenOp>& golden_op_table();

struct GoldenOpsData {
  nlohmann::json cases = nlohmann::json::array();
  std::map<std::string, train::TensorRecord> tensors;
  std::string error;  // non-empty when loading failed
};

// Loaded once.
const GoldenOpsData& golden_ops_data();
std::vector<std::string> golden_case_names();
const nlohmann::json& golden_case(const std::string& name);
const train::TensorRecord& golden_record(const std::string& name);
Tensor golden_tensor(const std::string& name);

// The tolerances of tests/tensor/ops_golden_test.cpp.
inline constexpr double kGoldenRtol = 1e-4;
inline constexpr double kGoldenAtol = 1e-5;

// Same shape and dtype; integers and bools exactly; floats within
// max(atol, rtol * |e|), atol = 1e-5 scaled down (to 1e-8 at least) for tensors
// whose largest value is below 1. Reports through gtest EXPECT/ASSERT.
void expect_matches_golden(const std::string& what, const Tensor& actual, const train::TensorRecord& expected);

}  // namespace lazytrain::testing
