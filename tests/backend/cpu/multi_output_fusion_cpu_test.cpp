// AdamW on the cpu backend with multi-output fusion (issue 33 item 8): the
// update of each parameter (its clipped gradient, both moments and the new
// value) is one generated kernel writing every result, and the values are
// those of the cpu pipeline without the pass bit for bit (and the
// interpreter's within rounding: the cpu backend's norm reduction and
// vectorized kernels round differently from the interpreter's with or
// without the pass).
#include <gtest/gtest.h>

#include <cmath>

#include "../../support/backend_scope.h"
#include "backend/registry.h"
#include "hlo/hlo_instruction.h"
#include "lazy/lazy_api.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "runtime/metrics.h"

namespace lazytrain {
namespace {

const std::vector<Shape> kShapes = {{96, 40}, {40}, {40}};  // a weight, its bias, a LayerNorm weight

std::vector<float> wave(int64_t n, double phase, double scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(scale * std::sin(phase + 0.37 * static_cast<double>(i)));
  return v;
}

// Every parameter, first moment and second moment after three steps of AdamW
// (weight decay on the weight, gradients clipped to norm 1) on `backend`.
// The cpu backend, with or without the multi-output-fusion pass, for a scope.
class CpuScope {
 public:
  explicit CpuScope(bool multi_output_fusion) : previous_(lazy::compiler().name()) {
    backend::CompilerOptions options = backend::CompilerOptions::from_environment();
    options.multi_output_fusion = multi_output_fusion;
    lazy::set_compiler(backend::make_compiler("cpu", options));
  }
  ~CpuScope() { lazy::set_compiler(backend::make_compiler(previous_)); }
  CpuScope(const CpuScope&) = delete;
  CpuScope& operator=(const CpuScope&) = delete;

 private:
  std::string previous_;
};

std::vector<std::vector<float>> adamw_steps() {
  std::vector<Tensor> params;
  for (size_t i = 0; i < kShapes.size(); ++i) params.push_back(from_vector(wave(numel(kShapes[i]), static_cast<double>(i), 0.5), kShapes[i]).requires_grad_());
  optim::AdamW opt({{{params[0]}, 0.01}, {{params[1], params[2]}, 0.0}}, {1e-2, 0.9, 0.999, 1e-8, 0.0});
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < params.size(); ++i) {
      params[i].set_grad(from_vector(wave(numel(kShapes[i]), 10.0 * step + static_cast<double>(i), 2.0), kShapes[i]));
    }
    optim::clip_grad_norm_(params, 1.0);
    opt.step();
    lazy::mark_step();
  }
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < params.size(); ++i) {
    const size_t group = i == 0 ? 0 : 1, index = i == 0 ? 0 : i - 1;
    out.push_back(params[i].to_vector<float>());
    out.push_back(opt.exp_avg(group, index).to_vector<float>());
    out.push_back(opt.exp_avg_sq(group, index).to_vector<float>());
  }
  return out;
}

TEST(CpuMultiOutputFusion, AdamWUpdateOfEachParameterIsOneKernelWithTheSameValues) {
  std::vector<std::vector<float>> interpreted, without, actual;
  {
    testing::InterpreterScope scope;
    interpreted = adamw_steps();
  }
  {
    CpuScope scope(false);
    without = adamw_steps();
  }
  const int64_t fallbacks = runtime::counter_value("InterpreterFallback");
  CpuScope scope(true);
  actual = adamw_steps();
  EXPECT_EQ(runtime::counter_value("InterpreterFallback"), fallbacks);
  ASSERT_EQ(actual.size(), without.size());
  for (size_t k = 0; k < without.size(); ++k) {
    ASSERT_EQ(actual[k].size(), without[k].size());
    for (size_t i = 0; i < without[k].size(); ++i) {
      ASSERT_EQ(actual[k][i], without[k][i]) << "array " << k << " element " << i;
      ASSERT_NEAR(actual[k][i], interpreted[k][i], 1e-5 * std::abs(interpreted[k][i]) + 1e-9) << "array " << k << " element " << i;
    }
  }

  // The step's graph: per parameter, one loop fusion of its element count,
  // writing its new value and both moments (and the clipped gradient, which
  // the step returns too).
  const hlo::HloModule* step = nullptr;
  for (const auto& e : lazy::cached_executables()) {
    const hlo::HloModule& m = e->module();
    if (std::any_of(m.instructions.begin(), m.instructions.end(), [](const hlo::HloInstruction& in) { return hlo::is_multi_output_fusion(in); })) {
      step = &m;
    }
  }
  ASSERT_NE(step, nullptr);
  std::map<int64_t, std::vector<const hlo::HloInstruction*>> loop_fusions;  // by element count
  for (const hlo::HloInstruction& in : step->instructions) {
    if (in.opcode == hlo::HloOpcode::kFusion && in.fusion_kind == hlo::FusionKind::kLoop) {
      loop_fusions[numel(hlo::fusion_outputs(in)[0]->shape)].push_back(&in);
    }
  }
  ASSERT_EQ(loop_fusions[96 * 40].size(), 1u) << step->to_string();
  ASSERT_EQ(loop_fusions[40].size(), 2u) << step->to_string();
  for (const hlo::HloInstruction* f : {loop_fusions[96 * 40][0], loop_fusions[40][0], loop_fusions[40][1]}) {
    EXPECT_EQ(hlo::fusion_outputs(*f).size(), 4u) << step->to_string();  // p', m', v' and the clipped gradient
  }
}

}  // namespace
}  // namespace lazytrain
