// The CPU backend's fast kernels against the reference that no longer shares
// them: the FlashAttention-2 kernel (kernels/attention.h) against attention by
// its formula in double (hlo/evaluator/attention.h), and oneDNN's dots
// (kernels/onednn_matmul.h) against the evaluator's plain f32 loop, on the
// shapes where blocked kernels go wrong: ragged edge blocks, causal masks with
// more or fewer queries than keys, masks broadcast over heads, rows with every
// key masked, dropout, transposed operands and batches, f32, bf16 and f16.
// The suite names put these under ctest's avx2_fallback.attention
// (AttentionKernel.*) and avx2_fallback.bf16 (*Bf16*), which rerun them on the
// kernels' AVX2 paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../support/hlo_pass_test_util.h"
#include "backend/registry.h"
#include "core/half.h"
#include "hlo/custom_call.h"
#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {
namespace {

using runtime::Buffer;

enum class MaskKind { kNone, kPred, kFloat };

struct AttentionCase {
  std::string name;
  Shape batch;  // q's leading dims
  int64_t L, S, E, Ev;
  bool causal = false;
  MaskKind mask = MaskKind::kNone;
  Shape mask_batch;  // the mask's leading dims (each 1 or the batch's)
  bool mask_rows = true;  // false: one mask row for every query ([..., 1, S], a key-padding mask)
  float dropout_p = 0;
};

AttentionCase make_case(std::string name, Shape batch, int64_t L, int64_t S, int64_t E, int64_t Ev, bool causal = false) {
  AttentionCase c;
  c.name = std::move(name);
  c.batch = std::move(batch);
  c.L = L, c.S = S, c.E = E, c.Ev = Ev;
  c.causal = causal;
  return c;
}

Shape with(Shape leading, std::initializer_list<int64_t> last) {
  leading.insert(leading.end(), last.begin(), last.end());
  return leading;
}

std::string sdpa_config(const AttentionCase& c) {
  return CustomCallConfig::format({{"is_causal", c.causal ? 1.0 : 0.0},
                                   {"has_mask", c.mask != MaskKind::kNone ? 1.0 : 0.0},
                                   {"has_dropout", c.dropout_p > 0 ? 1.0 : 0.0}});
}

// forward and backward of `c` with operands of `dtype`; arguments q, k, v, dout, [mask], [seed].
HloModule attention_module(const AttentionCase& c, DType dtype) {
  HloBuilder b("attention");
  const int q = b.parameter(with(c.batch, {c.L, c.E}), dtype);
  const int k = b.parameter(with(c.batch, {c.S, c.E}), dtype);
  const int v = b.parameter(with(c.batch, {c.S, c.Ev}), dtype);
  const int dout = b.parameter(with(c.batch, {c.L, c.Ev}), dtype);
  const int scale = b.scalar(1.0 / std::sqrt(static_cast<double>(c.E)), DType::kFloat32);
  std::vector<int> extra;
  if (c.mask != MaskKind::kNone) {
    extra.push_back(b.parameter(with(c.mask_batch, {c.mask_rows ? c.L : 1, c.S}), c.mask == MaskKind::kPred ? DType::kBool : DType::kFloat32));
  }
  if (c.dropout_p > 0) {
    extra.push_back(b.scalar(c.dropout_p, DType::kFloat32));
    extra.push_back(b.parameter({}, DType::kInt64));
  }
  std::vector<int> fwd_operands = {q, k, v, scale};
  fwd_operands.insert(fwd_operands.end(), extra.begin(), extra.end());
  const int fwd = b.custom_call(fwd_operands, kSdpaForwardTarget, sdpa_config(c));
  std::vector<int> bwd_operands = {q, k, v, scale, fwd, dout};
  bwd_operands.insert(bwd_operands.end(), extra.begin(), extra.end());
  const int bwd = b.custom_call(bwd_operands, kSdpaBackwardTarget, sdpa_config(c));
  return b.build({fwd, bwd});
}

// Normal q, k, v, dout (times 2: scores of a few units, softmax far from
// uniform); pred masks keep 70% of keys and mask every key of query 3; f32
// masks are 0 or -3.4e38 (torch.finfo(float32).min, as Hugging Face's padding
// masks), never a whole row.
std::vector<Buffer> attention_arguments(const HloModule& m, const AttentionCase& c, uint32_t seed) {
  std::vector<Buffer> args = testing::random_arguments(m, seed);
  std::mt19937 gen(seed + 1);
  std::uniform_real_distribution<float> u(0, 1);
  for (size_t a = 0; a < 4; ++a) {
    Buffer& x = args[a];
    for (int64_t i = 0; i < x.numel(); ++i) {
      switch (x.dtype()) {
        case DType::kFloat32: x.data<float>()[i] *= 2; break;
        case DType::kBFloat16: x.data<BFloat16>()[i] = BFloat16(2 * static_cast<float>(x.data<BFloat16>()[i])); break;
        default: x.data<Half>()[i] = static_cast<Half>(2 * static_cast<float>(x.data<Half>()[i])); break;
      }
    }
  }
  if (c.mask != MaskKind::kNone) {
    Buffer& mask = args[4];
    const int64_t rows = c.mask_rows ? c.L : 1;
    for (int64_t i = 0; i < mask.numel(); ++i) {
      const int64_t row = i / c.S % rows, col = i % c.S;
      const bool keep = c.mask == MaskKind::kPred ? (c.mask_rows && row == 3 ? false : u(gen) < 0.7f) : col % 5 != 4;
      if (c.mask == MaskKind::kPred) mask.data<uint8_t>()[i] = keep;
      else mask.data<float>()[i] = keep ? 0.0f : std::numeric_limits<float>::lowest();
    }
  }
  if (c.dropout_p > 0) args.back().data<int64_t>()[0] = 1234567;
  return args;
}

std::vector<AttentionCase> attention_cases() {
  std::vector<AttentionCase> cases;
  cases.push_back(make_case("ragged_blocks", {2, 3}, 40, 70, 16, 8));
  cases.push_back(make_case("causal_more_queries_than_keys", {2}, 130, 97, 64, 64, true));
  cases.push_back(make_case("causal_fewer_queries_than_keys", {3}, 20, 150, 8, 24, true));
  AttentionCase pred = make_case("pred_mask_over_heads_one_row_all_masked", {2, 4}, 33, 75, 32, 32);
  pred.mask = MaskKind::kPred;
  pred.mask_batch = {2, 1};
  cases.push_back(pred);
  AttentionCase padding = make_case("f32_key_padding_mask_causal", {2, 2}, 65, 65, 16, 16, true);
  padding.mask = MaskKind::kFloat;
  padding.mask_batch = {2, 1};
  padding.mask_rows = false;
  cases.push_back(padding);
  AttentionCase dropout = make_case("causal_dropout", {2, 2}, 48, 48, 32, 32, true);
  dropout.dropout_p = 0.2f;
  cases.push_back(dropout);
  return cases;
}

// The kernel adds in f32 (block products with FMA, online softmax rescaled per
// block of 64 keys); the reference in double. Outputs, logsumexps and
// gradients are sums of up to ~150 terms of a few units each, so they agree
// to a few f32 roundings of those sums: atol 2e-5, rtol 1e-4 (measured: within
// 0.6 of it). A wrong mask, edge block or dropout decision moves values by
// 1e-2 or more.
void expect_close(const Buffer& want, const Buffer& got, const std::string& what) {
  ASSERT_EQ(want.shape(), got.shape()) << what;
  double worst = 0;
  int64_t worst_at = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double e = want.data<float>()[i], a = got.data<float>()[i];
    if (e == a || (std::isnan(e) && std::isnan(a))) continue;
    const double excess = std::fabs(a - e) - (2e-5 + 1e-4 * std::fabs(e));
    if (!(excess <= worst)) worst = std::isnan(excess) ? INFINITY : excess, worst_at = i;
  }
  EXPECT_EQ(worst_at, -1) << what << ": element " << worst_at << " is " << (worst_at >= 0 ? got.data<float>()[worst_at] : 0.0f)
                          << " on the cpu backend, " << (worst_at >= 0 ? want.data<float>()[worst_at] : 0.0f) << " on the reference";
}

TEST(AttentionKernel, MatchesTheReferenceFormulaOnEveryShapeMaskAndDtype) {
  backend::CompilerOptions options;
  for (const AttentionCase& c : attention_cases()) {
    for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
      SCOPED_TRACE(c.name + " " + xla_name(dtype));
      const HloModule m = attention_module(c, dtype);
      const std::vector<Buffer> args = attention_arguments(m, c, 11);
      const std::vector<Buffer> want = backend::make_compiler("interpreter", options)->compile(m)->execute(args);
      const std::vector<Buffer> got = backend::make_compiler("cpu", options)->compile(m)->execute(args);
      ASSERT_EQ(want.size(), 2u);
      expect_close(want[0], got[0], "forward (out, lse)");
      expect_close(want[1], got[1], "backward (dq, dk, dv)");
    }
  }
}

// A row whose every key is masked: out 0 and lse -inf on both, and no gradient.
TEST(AttentionKernel, AFullyMaskedRowIsZeroWithMinusInfinityLseOnBoth) {
  AttentionCase c = make_case("row_masked", {1}, 8, 20, 8, 8);
  c.mask = MaskKind::kPred;
  c.mask_batch = {1};
  const HloModule m = attention_module(c, DType::kFloat32);
  const std::vector<Buffer> args = attention_arguments(m, c, 5);
  for (const char* name : {"interpreter", "cpu"}) {
    SCOPED_TRACE(name);
    const std::vector<Buffer> out = backend::make_compiler(name)->compile(m)->execute(args);
    const float* row = out[0].data<float>() + 3 * (c.Ev + 1);
    for (int64_t e = 0; e < c.Ev; ++e) EXPECT_EQ(row[e], 0.0f) << e;
    EXPECT_EQ(row[c.Ev], -std::numeric_limits<float>::infinity());
    for (int64_t e = 0; e < c.E; ++e) EXPECT_EQ(out[1].data<float>()[3 * c.E + e], 0.0f) << "dq of the masked row, " << e;
  }
}

struct DotCase {
  std::string name;
  Shape lhs, rhs;
  DotDimensionNumbers dims;
};

std::vector<DotCase> dot_cases() {
  return {{"mk_kn", {37, 300}, {300, 1100}, {{}, {}, {1}, {0}}},
          {"km_kn_weight_gradient", {257, 64}, {257, 96}, {{}, {}, {0}, {0}}},
          {"mk_nk_linear", {100, 768}, {130, 768}, {{}, {}, {1}, {1}}},
          {"batched_attention_scores", {12, 64, 32}, {12, 32, 64}, {{0}, {0}, {2}, {1}}},
          {"batched_transposed_rhs", {6, 33, 40}, {6, 17, 40}, {{0}, {0}, {2}, {2}}}};
}

// oneDNN (tiles, rhs repacked, AMX or widened bf16) against the evaluator's
// dot, which adds each element's products in order in f32. Both accumulate in
// f32 and round once, so they differ by the order of the additions: k
// roundings of partial sums of normal products, which grow like sqrt(k), give
// about k sqrt(k) 2^-24 at most (atol below: twice that), plus, for a bf16 or
// f16 result, one unit in the last place of the output where the two f32 sums
// fall on either side of a rounding boundary (rtol: 2^-7 for bf16, 2^-10 for
// f16, an ulp just above a power of two). (f32 dots measured equal to the bit
// or within 5% of atol, bf16 and f16 within one ulp.)
void expect_dot_matches(DType dtype) {
  for (const DotCase& c : dot_cases()) {
    SCOPED_TRACE(c.name + " " + xla_name(dtype));
    HloBuilder b("dot");
    const int x = b.parameter(c.lhs, dtype), y = b.parameter(c.rhs, dtype);
    const int d = b.dot(x, y, c.dims);
    const HloModule m = b.build({d});
    const std::vector<Buffer> args = testing::random_arguments(m, 21);
    const std::vector<Buffer> want = backend::make_compiler("interpreter")->compile(m)->execute(args);
    const std::vector<Buffer> got = backend::make_compiler("cpu")->compile(m)->execute(args);
    const int64_t k = c.lhs[static_cast<size_t>(c.dims.lhs_contracting_dimensions[0])];
    const double atol = static_cast<double>(k) * std::sqrt(static_cast<double>(k)) * 0x1p-23;
    const double rtol = dtype == DType::kBFloat16 ? 0x1p-7 : dtype == DType::kFloat16 ? 0x1p-10 : 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < want[0].numel(); ++i) {
      const double e = testing::element(want[0], i), a = testing::element(got[0], i);
      if (std::fabs(a - e) > atol + rtol * std::fabs(e)) {
        if (bad++ < 3) ADD_FAILURE() << "element " << i << ": " << a << " on oneDNN, " << e << " on the reference";
      }
    }
    EXPECT_EQ(bad, 0) << "of " << want[0].numel();
  }
}

TEST(DifferentialDot, OneDnnMatchesTheReferenceLoopF32) { expect_dot_matches(DType::kFloat32); }
TEST(DifferentialDot, OneDnnMatchesTheReferenceLoopBf16) { expect_dot_matches(DType::kBFloat16); }
TEST(DifferentialDot, OneDnnMatchesTheReferenceLoopF16) { expect_dot_matches(DType::kFloat16); }

}  // namespace
}  // namespace lazytrain::hlo
