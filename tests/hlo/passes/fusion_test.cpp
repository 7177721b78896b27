// InstructionFusion: which instructions end up in which fusion (kLoop / kInput),
// what is duplicated into consumers and what is not. Values are compared through
// the interpreter (which runs fused HLO) before and after. The backend rules
// are the CPU's (CpuInstructionFusion).
#include "hlo/passes/fusion.h"

#include "backend/cpu/cpu_fusion.h"

#include <gtest/gtest.h>

#include "../../support/hlo_pass_test_util.h"
#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {
namespace {

using namespace testing;

bool run_and_compare(HloModule& m, bool expect_changed = true) { return run_pass_and_compare<backend::cpu::CpuInstructionFusion>(m, expect_changed, 1e-6); }

std::vector<const HloInstruction*> fusions(const HloModule& m) {
  std::vector<const HloInstruction*> out;
  for (const HloInstruction& in : m.instructions) {
    if (in.opcode == HloOpcode::kFusion) out.push_back(&in);
  }
  return out;
}

TEST(Fusion, ElementwiseChainBecomesOneLoopFusion) {
  HloBuilder b("chain");
  int x = b.parameter({4, 8}, DType::kFloat32);
  int y = b.parameter({8}, DType::kFloat32);
  int biased = b.binary(HloOpcode::kAdd, x, b.broadcast(y, {4, 8}, {1}));
  int out = b.unary(HloOpcode::kTanh, b.binary(HloOpcode::kMultiply, biased, biased));
  HloModule m = b.build({out});
  run_and_compare(m);
  auto f = fusions(m);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->fusion_kind, FusionKind::kLoop);
  EXPECT_EQ(f[0]->operands.size(), 2u);  // x and y: the broadcast reads y inside the kernel
  EXPECT_EQ(count(m, HloOpcode::kAdd), 0);
  EXPECT_EQ(count(*f[0]->fused_computation, HloOpcode::kTanh), 1);
}

// A bf16 weight gradient (a dot) read by the clipping norm and the optimizer
// update: the widening convert to f32 is duplicated into both consumers, which
// read the bf16 value, instead of materialising an f32 copy. A narrowing
// convert, or a convert of a value a loop fusion computes, is not duplicated.
TEST(Fusion, WideningConvertOfADotIsDuplicatedIntoEachConsumer) {
  HloBuilder b("bf16_grad");
  int a = b.parameter({8, 16}, DType::kBFloat16);
  int w = b.parameter({16, 4}, DType::kBFloat16);
  int p = b.parameter({8, 4}, DType::kFloat32);
  int grad = b.convert(b.matmul(a, w), DType::kFloat32);
  int norm = b.reduce(b.binary(HloOpcode::kMultiply, grad, grad), {0, 1}, ReduceKind::kAdd);
  int update = b.binary(HloOpcode::kSubtract, p, b.unary(HloOpcode::kTanh, grad));
  int narrow = b.convert(b.binary(HloOpcode::kAdd, p, p), DType::kBFloat16);  // a loop fusion's value, narrowed
  int narrow_users = b.binary(HloOpcode::kMultiply, narrow, narrow);
  HloModule m = b.build({norm, update, narrow_users, b.unary(HloOpcode::kNegate, narrow)});
  run_and_compare(m);
  int widening_outside = 0, widening_inside = 0;
  for (const HloInstruction& in : m.instructions) {
    if (in.opcode == HloOpcode::kConvert && in.dtype == DType::kFloat32) ++widening_outside;
    if (in.opcode != HloOpcode::kFusion) continue;
    for (const HloInstruction& f : in.fused_computation->instructions) {
      if (f.opcode == HloOpcode::kConvert && f.dtype == DType::kFloat32) ++widening_inside;
    }
  }
  EXPECT_EQ(widening_outside, 0) << m.to_string();
  EXPECT_EQ(widening_inside, 2) << m.to_string();  // the norm's kInput fusion and the update's kLoop fusion
  // p + p is computed once: its narrowing convert stays a value of its own fusion.
  int adds = 0;
  for (const HloInstruction& in : m.instructions) {
    if (in.opcode == HloOpcode::kFusion) adds += count(*in.fused_computation, HloOpcode::kAdd);
  }
  EXPECT_EQ(adds, 1) << m.to_string();
}

TEST(Fusion, RowReductionTakesItsProducer) {
  HloBuilder b("softmax_sum");
  int x = b.parameter({16, 32}, DType::kFloat32);
  int sum = b.reduce(b.unary(HloOpcode::kExp, x), {1}, ReduceKind::kAdd);
  HloModule m = b.build({sum});
  run_and_compare(m);
  auto f = fusions(m);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->fusion_kind, FusionKind::kInput);
  EXPECT_EQ(count(m, HloOpcode::kReduce), 0);
  EXPECT_EQ(count(*f[0]->fused_computation, HloOpcode::kReduce), 1);
}

TEST(Fusion, ColumnReductionTakesItsProducer) {
  HloBuilder b("bias_grad");
  int g = b.parameter({16, 32}, DType::kFloat32);
  int sum = b.reduce(b.binary(HloOpcode::kMultiply, g, g), {0}, ReduceKind::kAdd);
  HloModule m = b.build({sum});
  run_and_compare(m);
  auto f = fusions(m);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->fusion_kind, FusionKind::kInput);
}

TEST(Fusion, MiddleDimensionReductionStaysOutside) {
  HloBuilder b("middle");
  int x = b.parameter({4, 5, 6}, DType::kFloat32);
  int sum = b.reduce(b.unary(HloOpcode::kExp, b.binary(HloOpcode::kAdd, x, x)), {1}, ReduceKind::kAdd);
  HloModule m = b.build({sum});
  run_and_compare(m);
  EXPECT_EQ(count(m, HloOpcode::kReduce), 1);
  ASSERT_EQ(fusions(m).size(), 1u);
  EXPECT_EQ(fusions(m)[0]->fusion_kind, FusionKind::kLoop);
}

TEST(Fusion, MasksMadeFromIotaAreDuplicatedIntoEachConsumer) {
  HloBuilder b("mask");
  int x = b.parameter({8, 8}, DType::kFloat32);
  int y = b.parameter({8, 8}, DType::kFloat32);
  int mask = b.compare(b.iota({8, 8}, DType::kInt32, 0), b.iota({8, 8}, DType::kInt32, 1), ComparisonDirection::kGe);
  int zero = b.full(0.0, {8, 8}, DType::kFloat32);
  int a = b.unary(HloOpcode::kExp, b.select(mask, x, zero));
  int c = b.unary(HloOpcode::kLog, b.select(mask, y, zero));
  HloModule m = b.build({a, c});
  run_and_compare(m);
  auto f = fusions(m);
  ASSERT_EQ(f.size(), 2u);
  for (const HloInstruction* fusion : f) {
    EXPECT_EQ(count(*fusion->fused_computation, HloOpcode::kCompare), 1);
    int arrays = 0;  // the mask is recomputed, not read; the zero is a scalar
    for (int o : fusion->operands) arrays += !m.at(o).shape.empty();
    EXPECT_EQ(arrays, 1) << m.to_string();
  }
  EXPECT_EQ(count(m, HloOpcode::kCompare), 0);
}

// A value read by two fusions is computed once when it reads real arrays: the
// residual stream of a transformer (add after add) must not be recomputed by
// every backward kernel that reads it.
TEST(Fusion, ChainsReadingArraysAreNotDuplicated) {
  HloBuilder b("residual");
  int h = b.parameter({4, 16}, DType::kFloat32);
  for (int layer = 0; layer < 4; ++layer) {
    int d = b.parameter({4, 16}, DType::kFloat32);
    h = b.binary(HloOpcode::kAdd, h, d);
    h = b.binary(HloOpcode::kMultiply, h, h);
  }
  int use1 = b.unary(HloOpcode::kExp, h);
  int use2 = b.unary(HloOpcode::kTanh, h);
  HloModule m = b.build({use1, use2});
  run_and_compare(m);
  int total_adds = 0;
  for (const HloInstruction* f : fusions(m)) total_adds += count(*f->fused_computation, HloOpcode::kAdd);
  EXPECT_EQ(total_adds, 4);  // each residual add computed exactly once
  for (const HloInstruction* f : fusions(m)) {
    if (count(*f->fused_computation, HloOpcode::kExp) + count(*f->fused_computation, HloOpcode::kTanh) == 1) {
      EXPECT_EQ(f->operands.size(), 1u) << "a consumer reads the shared value, not its inputs";
    }
  }
}

// Cross-entropy over bf16 logits (after AlgebraicSimplifier moved the target's
// gather onto the bf16 array): the f32 copy of the logits and their shift by a
// row's value are a chain of cheap ops above one materialised array (the bf16
// logits, which the gather needs). Both the row reduction and the gradient
// compute the chain in their own kernels: no f32 array of the logits' shape is
// ever materialised, and the bias add is computed once.
TEST(Fusion, TheLossReadsBf16LogitsThroughAChainOfCheapOps) {
  HloBuilder b("loss");
  int h = b.parameter({8, 16}, DType::kBFloat16);
  int w = b.parameter({16, 32}, DType::kBFloat16);
  int bias = b.parameter({32}, DType::kBFloat16);
  int logits = b.binary(HloOpcode::kAdd, b.matmul(h, w), b.broadcast(bias, {8, 32}, {1}));
  int rows = b.iota({8}, DType::kInt64, 0);
  int index = b.binary(HloOpcode::kAdd, b.binary(HloOpcode::kMultiply, rows, b.full(32, {8}, DType::kInt64)), b.full(3, {8}, DType::kInt64));
  int shift = b.convert(b.reshape(b.gather(b.reshape(logits, {256, 1}), index), {8}), DType::kFloat32);
  int shifted = b.binary(HloOpcode::kSubtract, b.convert(logits, DType::kFloat32), b.broadcast(shift, {8, 32}, {0}));
  int top = b.reduce(shifted, {1}, ReduceKind::kMax);
  int grad = b.convert(b.unary(HloOpcode::kExp, b.binary(HloOpcode::kSubtract, shifted, b.broadcast(top, {8, 32}, {0}))),
                       DType::kBFloat16);
  HloModule m = b.build({top, grad});
  run_and_compare(m);
  int chains = 0, adds = 0;
  for (const HloInstruction& in : m.instructions) {
    EXPECT_FALSE(in.dtype == DType::kFloat32 && in.shape == Shape({8, 32})) << in.name() << " is materialised:\n" << m.to_string();
    if (in.opcode != HloOpcode::kFusion) continue;
    for (const HloInstruction& f : in.fused_computation->instructions) adds += f.opcode == HloOpcode::kAdd && f.dtype == DType::kBFloat16;
    chains += count(*in.fused_computation, HloOpcode::kConvert) > 0 && count(*in.fused_computation, HloOpcode::kSubtract) > 0;
  }
  EXPECT_EQ(chains, 2) << m.to_string();  // the reduction's kInput fusion and the gradient's kLoop fusion
  EXPECT_EQ(adds, 1) << m.to_string();    // the bias add, materialised once (the gather reads it)
}

TEST(Fusion, LeavesDotsAlone) {
  HloBuilder b("dots");
  int x = b.parameter({4, 8}, DType::kFloat32);
  int w = b.parameter({8, 4}, DType::kFloat32);
  HloModule m = b.build({b.matmul(x, w)});
  run_and_compare(m, /*expect_changed=*/false);
  EXPECT_EQ(count(m, HloOpcode::kDot), 1);
}

// A lone elementwise op feeding a dot (autocast's convert of an f32 weight to
// bf16): from 65536 elements it is a loop fusion of its own, so that it runs
// as a generated, threaded kernel; a small one stays as it is.
TEST(Fusion, ALargeLoneOpIsAFusionOfItsOwn) {
  for (int64_t rows : {int64_t{8}, int64_t{512}}) {
    HloBuilder b("lone_convert");
    int x = b.parameter({4, 128}, DType::kBFloat16);
    int w = b.parameter({128, rows * 16}, DType::kFloat32);  // 1024 or 65536 elements
    HloModule m = b.build({b.matmul(x, b.convert(w, DType::kBFloat16))});
    const bool large = rows * 16 * 128 >= 65536;
    run_and_compare(m, /*expect_changed=*/large);
    auto f = fusions(m);
    ASSERT_EQ(f.size(), large ? 1u : 0u) << m.to_string();
    EXPECT_EQ(count(m, HloOpcode::kConvert), large ? 0 : 1) << m.to_string();
    if (large) {
      EXPECT_EQ(count(*f[0]->fused_computation, HloOpcode::kConvert), 1);
    }
  }
  // One the emitter would refuse (an integer division must raise on zero, as the
  // interpreter's does) is left alone: a fusion of it would only be an interpreter fallback.
  HloBuilder b("lone_integer_divide");
  int x = b.parameter({512, 128}, DType::kInt32);
  int y = b.parameter({512, 128}, DType::kInt32);
  HloModule m = b.build({b.binary(HloOpcode::kDivide, x, y)});
  backend::cpu::CpuInstructionFusion().run(m);
  EXPECT_TRUE(fusions(m).empty()) << m.to_string();
}

// Autocast's bf16 activations: elementwise chains fuse (the kernels round every
// bf16 value as the interpreter does), and so does a bf16 reduction with its
// producer (a bias gradient's column sum: accumulated in double and rounded
// once, as the interpreter's); a mixed f32 -> bf16 one does not.
TEST(Fusion, Bf16ChainsAndReductionsFuse) {
  HloBuilder b("bf16");
  int h = b.parameter({4, 8}, DType::kBFloat16);
  int x = b.parameter({4, 8}, DType::kFloat32);
  int gelu = b.binary(HloOpcode::kMultiply, h, b.unary(HloOpcode::kErf, b.binary(HloOpcode::kAdd, h, h)));
  int mixed = b.binary(HloOpcode::kAdd, b.convert(gelu, DType::kFloat32), x);
  int sum = b.reduce(b.binary(HloOpcode::kMultiply, h, h), {1}, ReduceKind::kAdd);
  int column_sum = b.reduce(b.binary(HloOpcode::kMultiply, h, h), {0}, ReduceKind::kAdd);
  HloModule m = b.build({mixed, sum, column_sum});
  run_and_compare(m);
  EXPECT_EQ(count(m, HloOpcode::kReduce), 0) << m.to_string();
  EXPECT_EQ(count(m, HloOpcode::kErf), 0);
  int input_fusions = 0;
  for (const HloInstruction* f : fusions(m)) input_fusions += f->fusion_kind == FusionKind::kInput;
  EXPECT_EQ(input_fusions, 2) << m.to_string();
}

}  // namespace
}  // namespace lazytrain::hlo
