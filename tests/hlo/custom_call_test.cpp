// custom-call (hlo/custom_call.h): shape rules and the verifier, XLA-style text,
// serialization, CSE (merges only equal target and backend_config), constant
// folding through the evaluator's kernel, and the CPU backend against the
// interpreter on the attention kernel (forward, backward, masks, dropout).
#include "hlo/custom_call.h"

#include <gtest/gtest.h>

#include <cmath>

#include "../support/hlo_pass_test_util.h"
#include "backend/registry.h"
#include "core/error.h"
#include "hlo/hlo_builder.h"
#include "hlo/hlo_serialization.h"
#include "hlo/passes/constant_folding.h"
#include "hlo/passes/cse.h"

namespace lazytrain::hlo {
namespace {

using runtime::Buffer;
using namespace testing;

std::string sdpa_config(bool causal, bool mask, bool dropout) {
  return CustomCallConfig::format({{"is_causal", causal ? 1.0 : 0.0}, {"has_mask", mask ? 1.0 : 0.0}, {"has_dropout", dropout ? 1.0 : 0.0}});
}

TEST(CustomCall, ConfigRoundTripsNumbersExactly) {
  const std::string text = CustomCallConfig::format({{"scale", 1.0 / std::sqrt(8.0)}, {"k", 3}});
  EXPECT_EQ(text.substr(0, 6), "scale=");
  EXPECT_EQ(text.substr(text.size() - 4), ",k=3");
  CustomCallConfig c(text);
  EXPECT_EQ(c.number("scale"), 1.0 / std::sqrt(8.0));
  EXPECT_EQ(c.number("k"), 3.0);
  EXPECT_THROW(c.number("missing"), Error);
  EXPECT_THROW(CustomCallConfig("scale"), Error);
  EXPECT_THROW(CustomCallConfig("scale=abc"), Error);
}

TEST(CustomCall, ShapeRulesAndVerifier) {
  HloBuilder b("attention");
  int q = b.parameter({2, 3, 5, 4}, DType::kFloat32);
  int k = b.parameter({2, 3, 6, 4}, DType::kFloat32);
  int v = b.parameter({2, 3, 6, 7}, DType::kFloat32);
  int scale = b.scalar(0.5, DType::kFloat32);
  int fwd = b.custom_call({q, k, v, scale}, kSdpaForwardTarget, sdpa_config(false, false, false));
  EXPECT_EQ(b.shape(fwd), (Shape{2, 3, 5, 8}));
  EXPECT_EQ(b.dtype(fwd), DType::kFloat32);
  int top = b.custom_call({v}, kTopKTarget, CustomCallConfig::format({{"k", 2}, {"dim", 3}, {"largest", 1}}));
  EXPECT_EQ(b.shape(top), (Shape{2, 3, 6, 2}));
  EXPECT_EQ(b.dtype(top), DType::kInt64);
  EXPECT_THROW(b.custom_call({q, k, scale}, kSdpaForwardTarget, sdpa_config(false, false, false)), Error);     // missing v
  EXPECT_THROW(b.custom_call({q, v, k, scale}, kSdpaForwardTarget, sdpa_config(false, false, false)), Error);  // E differs
  EXPECT_THROW(b.custom_call({q, k, v, scale}, kSdpaForwardTarget, sdpa_config(false, true, false)), Error);  // no mask operand
  EXPECT_THROW(b.custom_call({q, k, v}, "no$such$target", ""), Error);
  EXPECT_THROW(b.custom_call({v}, kTopKTarget, CustomCallConfig::format({{"k", 9}, {"dim", 3}, {"largest", 1}})), Error);
  HloModule m = b.build({fwd, top});
  verify(m);
  // The verifier checks the stored shape against the target's rule.
  HloModule bad = m;
  bad.instructions[static_cast<size_t>(fwd)].shape = {2, 3, 5, 7};
  EXPECT_THROW(verify(bad), Error);
}

TEST(CustomCall, PrintsAndSerializesTargetAndConfig) {
  HloBuilder b("topk");
  int x = b.parameter({4, 6}, DType::kFloat32);
  HloModule m = b.build({b.custom_call({x}, kTopKTarget, CustomCallConfig::format({{"k", 2}, {"dim", 1}, {"largest", 0}}))});
  const std::string text = m.to_string();
  EXPECT_NE(text.find("%custom-call.1 = s64[4,2]{1,0} custom-call(f32[4,6]{1,0} %parameter.0), custom_call_target=\"__lazytrain$topk\", "
                      "backend_config=\"k=2,dim=1,largest=0\""),
            std::string::npos)
      << text;
  HloModule back = deserialize_module(serialize_module(m));
  EXPECT_EQ(back.to_string(), text);
  EXPECT_EQ(back.at(1).custom_call_target, kTopKTarget);
}

TEST(CustomCall, CseMergesOnlyEqualTargetAndConfig) {
  HloBuilder b("cse");
  int x = b.parameter({3, 8}, DType::kFloat32);
  auto topk = [&](double k, double largest) {
    return b.custom_call({x}, kTopKTarget, CustomCallConfig::format({{"k", k}, {"dim", 1}, {"largest", largest}}));
  };
  HloModule m = b.build({topk(3, 1), topk(3, 1), topk(3, 0), topk(2, 1)});
  run_pass_and_compare<Cse>(m);
  EXPECT_EQ(count(m, HloOpcode::kCustomCall), 3);
  EXPECT_EQ(m.at(m.root).operands[0], m.at(m.root).operands[1]);
}

TEST(CustomCall, ConstantFoldingUsesTheEvaluatorsKernel) {
  HloBuilder b("fold");
  Literal lit({2, 4}, DType::kFloat32);
  const float values[] = {3, -1, 7, 0, 2, 9, -4, 9};
  for (int i = 0; i < 8; ++i) lit.data<float>()[i] = values[i];
  int x = b.constant(lit);
  HloModule m = b.build({b.custom_call({x}, kTopKTarget, CustomCallConfig::format({{"k", 3}, {"dim", 1}, {"largest", 1}}))});
  run_pass_and_compare<ConstantFolding>(m);
  ASSERT_EQ(count(m, HloOpcode::kCustomCall), 0);
  const Literal& folded = output(m, 0).literal;
  const int64_t expected[] = {2, 0, 3, 1, 3, 0};  // ties keep the lower index first
  for (int i = 0; i < 6; ++i) EXPECT_EQ(folded.data<int64_t>()[i], expected[i]) << i;
}

// The attention kernel's forward and backward on the CPU backend against the
// interpreter, which computes attention by its formula in double
// (hlo/evaluator/attention.h). The kernel adds in f32, in blocks, with online
// softmax's rescaling: each value within a few f32 roundings of the sums it is
// made of (|terms| up to about 1 here: rtol 1e-5, atol 1e-6); dropout's
// decisions are the same hash on both, so a dropped weight cannot hide here.
void expect_cpu_matches_interpreter(const HloModule& m, const std::vector<Buffer>& args) {
  backend::CompilerOptions options;
  auto cpu = backend::make_compiler("cpu", options)->compile(m);
  auto interpreter = backend::make_compiler("interpreter", options)->compile(m);
  const std::vector<Buffer> want = interpreter->execute(args), got = cpu->execute(args);
  ASSERT_EQ(want.size(), got.size());
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(want[k].shape(), got[k].shape());
    for (int64_t i = 0; i < want[k].numel(); ++i) {
      const double e = want[k].data<float>()[i], a = got[k].data<float>()[i];
      if (std::isnan(e) && std::isnan(a)) continue;
      ASSERT_LE(std::fabs(a - e), 1e-6 + 1e-5 * std::fabs(e)) << "output " << k << " element " << i << ": " << a << " vs " << e;
    }
  }
}

TEST(CustomCall, AttentionOnTheCpuBackendMatchesTheInterpreter) {
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    const bool causal = variant == 1, mask = variant == 2, dropout = variant == 3;
    HloBuilder b("sdpa");
    int q = b.parameter({2, 40, 8}, DType::kFloat32);
    int k = b.parameter({2, 70, 8}, DType::kFloat32);
    int v = b.parameter({2, 70, 5}, DType::kFloat32);
    int dout = b.parameter({2, 40, 5}, DType::kFloat32);
    int scale = b.scalar(0.3, DType::kFloat32);
    std::vector<int> extra;
    if (mask) extra.push_back(b.parameter({1, 40, 70}, DType::kFloat32));
    if (dropout) {
      extra.push_back(b.scalar(0.25, DType::kFloat32));
      extra.push_back(b.parameter({}, DType::kInt64));
    }
    const std::string config = sdpa_config(causal, mask, dropout);
    std::vector<int> fwd_operands = {q, k, v, scale};
    fwd_operands.insert(fwd_operands.end(), extra.begin(), extra.end());
    int fwd = b.custom_call(fwd_operands, kSdpaForwardTarget, config);
    std::vector<int> bwd_operands = {q, k, v, scale, fwd, dout};
    bwd_operands.insert(bwd_operands.end(), extra.begin(), extra.end());
    int bwd = b.custom_call(bwd_operands, kSdpaBackwardTarget, config);
    HloModule m = b.build({fwd, bwd});
    expect_cpu_matches_interpreter(m, random_arguments(m, 17 + variant));
  }
}

}  // namespace
}  // namespace lazytrain::hlo
