// The HLO verifier rejects malformed modules with an error that names the
// instruction and the broken rule. Each test builds a valid module with the
// builder, checks that it verifies, then breaks one thing by hand.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "hlo/hlo_builder.h"
#include "hlo/hlo_instruction.h"

namespace lazytrain::hlo {
namespace {

// Runs verify(m) and returns the error message ("" when it passes).
std::string verify_error(const HloModule& m) {
  try {
    verify(m);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

HloInstruction& find(HloModule& m, HloOpcode op) {
  for (auto& in : m.instructions) {
    if (in.opcode == op) return in;
  }
  throw Error("no " + opcode_name(op) + " in module");
}

// p0 f32[2,3] + p1 f32[2,3]
HloModule add_module() {
  HloBuilder b("add");
  int p0 = b.parameter({2, 3}, DType::kFloat32);
  int p1 = b.parameter({2, 3}, DType::kFloat32);
  return b.build({b.binary(HloOpcode::kAdd, p0, p1)});
}

TEST(HloVerifier, AcceptsValidModules) {
  EXPECT_EQ(verify_error(add_module()), "");
  HloBuilder b("mixed");
  int x = b.parameter({2, 3, 4}, DType::kFloat32);
  int w = b.parameter({4, 5}, DType::kFloat32);
  int idx = b.parameter({3}, DType::kInt64);
  int t = b.transpose(x, {1, 0, 2});
  int r = b.reduce(t, {1}, ReduceKind::kMax);
  int d = b.dot(b.reshape(x, {6, 4}), w, {{}, {}, {1}, {0}});
  int g = b.gather(w, idx);
  int s = b.slice(x, {0, 1, 0}, {2, 3, 4}, {1, 1, 2});
  EXPECT_EQ(verify_error(b.build({r, d, g, s})), "");
}

TEST(HloVerifier, RejectsOperandShapeMismatch) {
  HloModule m = add_module();
  m.instructions[1].shape = {3, 2};  // p1 becomes f32[3,2]; add still expects [2,3] operands
  std::string e = verify_error(m);
  EXPECT_TRUE(contains(e, "add.2")) << e;
  EXPECT_TRUE(contains(e, "operand shapes differ: [2, 3] vs [3, 2]")) << e;
}

TEST(HloVerifier, RejectsOperandDTypeMismatch) {
  HloModule m = add_module();
  m.instructions[1].dtype = DType::kBFloat16;
  std::string e = verify_error(m);
  EXPECT_TRUE(contains(e, "operand dtypes differ: f32 vs bf16")) << e;
}

TEST(HloVerifier, RejectsDeclaredShapeThatDisagreesWithInference) {
  HloModule m = add_module();
  find(m, HloOpcode::kAdd).shape = {6};
  std::string e = verify_error(m);
  EXPECT_TRUE(contains(e, "[hlo verifier] add.2: has f32[6], expected f32[2, 3]")) << e;
}

TEST(HloVerifier, RejectsDotContractingSizeMismatch) {
  HloBuilder b("dot");
  int a = b.parameter({2, 3}, DType::kFloat32);
  int w = b.parameter({3, 4}, DType::kFloat32);
  HloModule m = b.build({b.dot(a, w, {{}, {}, {1}, {0}})});
  ASSERT_EQ(verify_error(m), "");
  m.instructions[1].shape = {5, 4};  // k = 3 on the left, 5 on the right
  std::string e = verify_error(m);
  EXPECT_TRUE(contains(e, "dot.2")) << e;
  EXPECT_TRUE(contains(e, "dot contracting sizes differ: [2, 3] vs [5, 4]")) << e;
}

TEST(HloVerifier, RejectsDotWithNonLeadingBatchDims) {
  HloBuilder b("bdot");
  int a = b.parameter({2, 3, 4}, DType::kFloat32);
  int w = b.parameter({2, 4, 5}, DType::kFloat32);
  HloModule m = b.build({b.dot(a, w, {{0}, {0}, {2}, {1}})});
  ASSERT_EQ(verify_error(m), "");
  find(m, HloOpcode::kDot).dot.lhs_batch_dimensions = {1};
  EXPECT_TRUE(contains(verify_error(m), "batch dimensions must be the leading dimensions")) << verify_error(m);
}

TEST(HloVerifier, RejectsBroadcastDimensionsOutOfOrder) {
  HloBuilder b("bcast");
  int x = b.parameter({2, 3}, DType::kFloat32);
  HloModule m = b.build({b.broadcast(x, {2, 4, 3}, {0, 2})});
  ASSERT_EQ(verify_error(m), "");
  HloInstruction& bc = find(m, HloOpcode::kBroadcast);
  bc.dimensions = {2, 0};  // operand dim 0 -> output dim 2, dim 1 -> 0: sizes fit, order does not
  bc.shape = {3, 4, 2};
  std::string e = verify_error(m);
  EXPECT_TRUE(contains(e, "broadcast.1")) << e;
  EXPECT_TRUE(contains(e, "broadcast dimensions must increase")) << e;
  // The builder refuses the same instruction up front.
  HloBuilder b2("bcast2");
  int y = b2.parameter({2, 3}, DType::kFloat32);
  EXPECT_THROW(b2.broadcast(y, {3, 4, 2}, {2, 0}), Error);
}

TEST(HloVerifier, RejectsBroadcastSizeMismatch) {
  HloBuilder b("bcast");
  int x = b.parameter({2, 3}, DType::kFloat32);
  HloModule m = b.build({b.broadcast(x, {2, 4, 3}, {0, 2})});
  find(m, HloOpcode::kBroadcast).shape = {2, 4, 5};
  EXPECT_TRUE(contains(verify_error(m), "broadcast size mismatch at operand dimension 1")) << verify_error(m);
}

TEST(HloVerifier, RejectsUseBeforeDefinition) {
  HloModule m = add_module();
  find(m, HloOpcode::kAdd).operands[1] = 3;  // the tuple, defined after the add
  EXPECT_TRUE(contains(verify_error(m), "operand %3 is not defined before use")) << verify_error(m);
}

TEST(HloVerifier, RejectsRootThatIsNotALastTuple) {
  HloModule m = add_module();
  m.root = 2;  // the add
  EXPECT_TRUE(contains(verify_error(m), "the root must be the last instruction and a tuple")) << verify_error(m);
}

TEST(HloVerifier, RejectsParametersOutOfOrder) {
  HloModule m = add_module();
  m.instructions[0].parameter_number = 1;
  m.instructions[1].parameter_number = 0;
  EXPECT_TRUE(contains(verify_error(m), "parameters must be numbered in order")) << verify_error(m);
}

TEST(HloVerifier, RejectsBadReduceTransposeSliceSelectGather) {
  HloBuilder b("many");
  int x = b.parameter({2, 3, 4}, DType::kFloat32);
  int idx = b.parameter({5}, DType::kInt32);
  int pred = b.parameter({2, 3, 4}, DType::kBool);
  int r = b.reduce(x, {0, 2}, ReduceKind::kAdd);
  int t = b.transpose(x, {2, 0, 1});
  int s = b.slice(x, {0, 0, 0}, {2, 3, 4}, {1, 2, 1});
  int sel = b.select(pred, x, x);
  int g = b.gather(x, idx);
  const HloModule good = b.build({r, t, s, sel, g});
  ASSERT_EQ(verify_error(good), "");

  HloModule m = good;
  find(m, HloOpcode::kReduce).dimensions = {2, 0};
  EXPECT_TRUE(contains(verify_error(m), "reduce dimensions must increase")) << verify_error(m);

  m = good;
  find(m, HloOpcode::kTranspose).dimensions = {2, 0, 0};
  EXPECT_TRUE(contains(verify_error(m), "transpose dimensions are not a permutation")) << verify_error(m);

  m = good;
  find(m, HloOpcode::kSlice).slice_limits = {2, 4, 4};
  EXPECT_TRUE(contains(verify_error(m), "slice bounds out of range at dimension 1")) << verify_error(m);

  m = good;
  m.instructions[2].dtype = DType::kFloat32;  // the select predicate
  EXPECT_TRUE(contains(verify_error(m), "select predicate must be pred")) << verify_error(m);

  m = good;
  m.instructions[1].dtype = DType::kFloat32;  // the gather indices
  EXPECT_TRUE(contains(verify_error(m), "gather indices must be s32 or s64")) << verify_error(m);
}

TEST(HloVerifier, RejectsFloatOnlyUnaryOnIntegers) {
  HloBuilder b("exp");
  int x = b.parameter({3}, DType::kInt64);
  EXPECT_THROW(b.unary(HloOpcode::kExp, x), Error);
  EXPECT_NO_THROW(b.unary(HloOpcode::kNegate, x));
}

}  // namespace
}  // namespace lazytrain::hlo
