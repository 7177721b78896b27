// The interpreter backend on hand-built HLO: dot through oneDNN (plain,
// transposed and batched operands), reduce over every kind of dimension set,
// gather/scatter, iota and rng-bit-generator.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../support/test_buffers.h"
#include "backend/registry.h"
#include "core/error.h"
#include "core/half.h"
#include "hlo/hlo_builder.h"

namespace lazytrain::backend {
namespace {

using hlo::ComparisonDirection;
using hlo::DotDimensionNumbers;
using hlo::HloBuilder;
using hlo::HloModule;
using hlo::HloOpcode;
using hlo::ReduceKind;
using runtime::Buffer;
using testing::buffer;
using testing::values;

Buffer f32(const Shape& s, const std::vector<float>& v) { return buffer(s, DType::kFloat32, v); }
Buffer s64(const Shape& s, const std::vector<int64_t>& v) { return buffer(s, DType::kInt64, v); }
Buffer s32(const Shape& s, const std::vector<int32_t>& v) { return buffer(s, DType::kInt32, v); }

std::vector<Buffer> run(HloModule module, const std::vector<Buffer>& args) {
  return make_compiler("interpreter")->compile(std::move(module))->execute(args);
}

// Row-major [rows, cols] matrix with small integer values (exact in f32 products and sums).
std::vector<float> int_matrix(int64_t rows, int64_t cols, int salt) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows * cols; ++i) v[i] = static_cast<float>((i * 7 + salt * 3) % 11 - 5);
  return v;
}

std::vector<float> transposed(const std::vector<float>& v, int64_t rows, int64_t cols) {
  std::vector<float> t(v.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = v[i * cols + j];
  return t;
}

// Reference [m, k] @ [k, n] in double.
std::vector<float> naive_mm(const std::vector<float>& a, const std::vector<float>& b, int64_t m, int64_t k, int64_t n) {
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += static_cast<double>(a[i * k + p]) * b[p * n + j];
      c[i * n + j] = static_cast<float>(s);
    }
  return c;
}

// ---- dot ----

TEST(InterpreterDot, PlainMatmul) {
  HloBuilder b("dot");
  int a = b.parameter({2, 3}, DType::kFloat32);
  int w = b.parameter({3, 2}, DType::kFloat32);
  HloModule m = b.build({b.dot(a, w, {{}, {}, {1}, {0}})});
  auto out = run(std::move(m), {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3, 2}, {7, 8, 9, 10, 11, 12})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{58, 64, 139, 154}));
}

TEST(InterpreterDot, TransposedOperandsAsStoredLayouts) {
  // lhs stored [k, m] (contracting dim 0), rhs stored [n, k] (contracting dim 1).
  const int64_t m = 5, k = 7, n = 3;
  std::vector<float> a = int_matrix(m, k, 1), w = int_matrix(k, n, 2);
  std::vector<float> expected = naive_mm(a, w, m, k, n);
  for (bool lhs_t : {false, true}) {
    for (bool rhs_t : {false, true}) {
      HloBuilder b("dot_t");
      int pa = b.parameter(lhs_t ? Shape{k, m} : Shape{m, k}, DType::kFloat32);
      int pw = b.parameter(rhs_t ? Shape{n, k} : Shape{k, n}, DType::kFloat32);
      DotDimensionNumbers dims{{}, {}, {lhs_t ? 0 : 1}, {rhs_t ? 1 : 0}};
      int d = b.dot(pa, pw, dims);
      ASSERT_EQ(b.shape(d), (Shape{m, n}));
      auto out = run(b.build({d}), {f32(b.shape(pa), lhs_t ? transposed(a, m, k) : a), f32(b.shape(pw), rhs_t ? transposed(w, k, n) : w)});
      EXPECT_EQ(values<float>(out[0]), expected) << "lhs_t=" << lhs_t << " rhs_t=" << rhs_t;
    }
  }
}

TEST(InterpreterDot, BatchedWithTransposedOperandsFromMatmulFolding) {
  // q @ k^T as attention computes it: the builder folds the transpose into the dot.
  const int64_t batch = 3, m = 4, k = 6, n = 5;
  HloBuilder b("attn");
  int q = b.parameter({batch, m, k}, DType::kFloat32);
  int kk = b.parameter({batch, n, k}, DType::kFloat32);
  int d = b.matmul(q, b.transpose(kk, {0, 2, 1}));
  HloModule mod = b.build({d});
  ASSERT_EQ(mod.at(2).opcode, HloOpcode::kDot);
  ASSERT_EQ(mod.at(2).dot.rhs_contracting_dimensions, (std::vector<int64_t>{2}));
  std::vector<float> qv, kv, expected;
  for (int64_t i = 0; i < batch; ++i) {
    std::vector<float> qi = int_matrix(m, k, static_cast<int>(i)), ki = int_matrix(n, k, static_cast<int>(i) + 5);
    std::vector<float> ei = naive_mm(qi, transposed(ki, n, k), m, k, n);
    qv.insert(qv.end(), qi.begin(), qi.end());
    kv.insert(kv.end(), ki.begin(), ki.end());
    expected.insert(expected.end(), ei.begin(), ei.end());
  }
  auto out = run(std::move(mod), {f32({batch, m, k}, qv), f32({batch, n, k}, kv)});
  EXPECT_EQ(out[0].shape(), (Shape{batch, m, n}));
  EXPECT_EQ(values<float>(out[0]), expected);
}

TEST(InterpreterDot, LargerRandomTransposedLhsMatchesReference) {
  const int64_t m = 37, k = 129, n = 29;
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(m * k), w(k * n);
  for (float& x : a) x = u(gen);
  for (float& x : w) x = u(gen);
  std::vector<float> expected = naive_mm(a, w, m, k, n);
  HloBuilder b("big");
  int pa = b.parameter({k, m}, DType::kFloat32);
  int pw = b.parameter({k, n}, DType::kFloat32);
  auto out = run(b.build({b.dot(pa, pw, {{}, {}, {0}, {0}})}), {f32({k, m}, transposed(a, m, k)), f32({k, n}, w)});
  std::vector<float> got = values<float>(out[0]);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-4f * (1.0f + std::fabs(expected[i]))) << i;
}

TEST(InterpreterDot, RejectsIntegerOperands) {
  HloBuilder b("idot");
  int a = b.parameter({2, 2}, DType::kInt32);
  int w = b.parameter({2, 2}, DType::kInt32);
  HloModule m = b.build({b.dot(a, w, {{}, {}, {1}, {0}})});
  EXPECT_THROW(run(std::move(m), {s32({2, 2}, {1, 2, 3, 4}), s32({2, 2}, {1, 0, 0, 1})}), Error);
}

// ---- reduce ----

// x[i, j, l] = 100 i + 10 j + l over [2, 3, 4].
std::vector<float> cube() {
  std::vector<float> v;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int l = 0; l < 4; ++l) v.push_back(static_cast<float>(100 * i + 10 * j + l));
  return v;
}

std::vector<float> reduce_cube(const std::vector<int64_t>& dims, ReduceKind kind, const std::vector<float>& x) {
  HloBuilder b("reduce");
  int p = b.parameter({2, 3, 4}, DType::kFloat32);
  return values<float>(run(b.build({b.reduce(p, dims, kind)}), {f32({2, 3, 4}, x)})[0]);
}

TEST(InterpreterReduce, SumOverMiddleDimension) {
  // sum_j (100 i + 10 j + l) = 300 i + 30 + 3 l
  EXPECT_EQ(reduce_cube({1}, ReduceKind::kAdd, cube()), (std::vector<float>{30, 33, 36, 39, 330, 333, 336, 339}));
}

TEST(InterpreterReduce, MaxAndMinOverMiddleDimension) {
  std::vector<float> x = cube();
  for (float& v : x) v = -v;  // all negative but the first: the max init must be -inf, not 0
  EXPECT_EQ(reduce_cube({1}, ReduceKind::kMax, x), (std::vector<float>{-0.0f, -1, -2, -3, -100, -101, -102, -103}));
  EXPECT_EQ(reduce_cube({1}, ReduceKind::kMin, x), (std::vector<float>{-20, -21, -22, -23, -120, -121, -122, -123}));
}

TEST(InterpreterReduce, OuterDimensionsAroundAKeptMiddle) {
  // dims {0, 2}: neither a prefix nor a suffix. sum_{i,l} = 8 * (50 + 10 j + 1.5) = 412 + 80 j
  EXPECT_EQ(reduce_cube({0, 2}, ReduceKind::kAdd, cube()), (std::vector<float>{412, 492, 572}));
}

TEST(InterpreterReduce, PrefixSuffixAndAll) {
  // dims {0}: 100 + 20 j + 2 l
  std::vector<float> prefix;
  for (int j = 0; j < 3; ++j)
    for (int l = 0; l < 4; ++l) prefix.push_back(static_cast<float>(100 + 20 * j + 2 * l));
  EXPECT_EQ(reduce_cube({0}, ReduceKind::kAdd, cube()), prefix);
  // dims {1, 2}: 12 * 100 i + 4 * 30 + 3 * 6
  EXPECT_EQ(reduce_cube({1, 2}, ReduceKind::kAdd, cube()), (std::vector<float>{138, 1338}));
  EXPECT_EQ(reduce_cube({0, 1, 2}, ReduceKind::kAdd, cube()), (std::vector<float>{1476}));
  EXPECT_EQ(reduce_cube({2}, ReduceKind::kMax, cube()), (std::vector<float>{3, 13, 23, 103, 113, 123}));
}

TEST(InterpreterReduce, ProductAndIntegerAndPred) {
  HloBuilder b("reduce_types");
  int f = b.parameter({2, 3}, DType::kFloat32);
  int i = b.parameter({2, 3}, DType::kInt64);
  int p = b.parameter({2, 3}, DType::kBool);
  HloModule m = b.build({b.reduce(f, {1}, ReduceKind::kMul), b.reduce(i, {0}, ReduceKind::kMax), b.reduce(i, {0, 1}, ReduceKind::kAdd),
                         b.reduce(p, {1}, ReduceKind::kMax), b.reduce(p, {1}, ReduceKind::kMin)});
  Buffer pred = buffer<uint8_t>({2, 3}, DType::kBool, {0, 0, 0, 1, 1, 0});
  auto out = run(std::move(m), {f32({2, 3}, {1, 2, 3, -1, 0.5f, 4}), s64({2, 3}, {-7, -8, -9, -10, 5, -3}), pred});
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{6, -2}));
  EXPECT_EQ(values<int64_t>(out[1]), (std::vector<int64_t>{-7, 5, -3}));
  EXPECT_EQ(values<int64_t>(out[2]), (std::vector<int64_t>{-32}));
  EXPECT_EQ(values<uint8_t>(out[3]), (std::vector<uint8_t>{0, 1}));  // any
  EXPECT_EQ(values<uint8_t>(out[4]), (std::vector<uint8_t>{0, 0}));  // all
}

TEST(InterpreterReduce, LongSumIsAccurate) {
  // 2^20 values of 0.1: a naive float accumulator drifts by ~1%; the interpreter sums in double.
  const int64_t n = 1 << 20;
  HloBuilder b("long");
  int p = b.parameter({4, n / 4}, DType::kFloat32);
  auto out = run(b.build({b.reduce(p, {0, 1}, ReduceKind::kAdd)}), {f32({4, n / 4}, std::vector<float>(n, 0.1f))});
  EXPECT_NEAR(values<float>(out[0])[0], 0.1 * n, 0.1 * n * 1e-6);
}

// ---- gather / scatter ----

TEST(InterpreterGather, RowsByIndexTensor) {
  HloBuilder b("gather");
  int x = b.parameter({4, 2}, DType::kFloat32);
  int idx = b.parameter({2, 3}, DType::kInt64);
  int idx32 = b.parameter({2}, DType::kInt32);
  HloModule m = b.build({b.gather(x, idx), b.gather(x, idx32)});
  auto out = run(std::move(m), {f32({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31}), s64({2, 3}, {3, 0, 3, 1, 1, 2}), s32({2}, {2, 0})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{30, 31, 0, 1, 30, 31, 10, 11, 10, 11, 20, 21}));
  EXPECT_EQ(values<float>(out[1]), (std::vector<float>{20, 21, 0, 1}));
}

TEST(InterpreterGather, IndexOutOfRangeIsAnError) {
  for (int64_t bad : {int64_t{4}, int64_t{-1}}) {
    HloBuilder b("gather");
    int x = b.parameter({4, 2}, DType::kFloat32);
    int idx = b.parameter({2}, DType::kInt64);
    try {
      run(b.build({b.gather(x, idx)}), {f32({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7}), s64({2}, {0, bad})});
      ADD_FAILURE() << "index " << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("index " + std::to_string(bad) + " is out of range for dimension 0 of size 4"), std::string::npos)
          << e.what();
    }
  }
}

TEST(InterpreterScatter, AddAccumulatesRepeatedIndicesAndLeavesArgumentsIntact) {
  HloBuilder b("scatter");
  int base = b.parameter({4, 2}, DType::kFloat32);
  int idx = b.parameter({2, 3}, DType::kInt64);
  int upd = b.parameter({2, 3, 2}, DType::kFloat32);
  HloModule m = b.build({b.scatter_add(base, idx, upd)});
  Buffer base_buf = f32({4, 2}, {1, 1, 1, 1, 1, 1, 1, 1});
  std::vector<float> updates;
  for (int i = 0; i < 12; ++i) updates.push_back(static_cast<float>(i));
  auto out = run(std::move(m), {base_buf, s64({2, 3}, {2, 0, 2, 3, 2, 0}), f32({2, 3, 2}, updates)});
  // row 0 <- updates 1 and 5: (2+10, 3+11); row 2 <- updates 0, 2, 4: (0+4+8, 1+5+9); row 3 <- update 3
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{13, 15, 1, 1, 13, 16, 7, 8}));
  EXPECT_EQ(values<float>(base_buf), std::vector<float>(8, 1.0f)) << "scatter wrote into its argument";
}

TEST(InterpreterScatter, IntegerUpdatesAndOutOfRange) {
  HloBuilder b("scatter_i");
  int base = b.parameter({3}, DType::kInt64);
  int idx = b.parameter({4}, DType::kInt32);
  int upd = b.parameter({4}, DType::kInt64);
  HloModule m = b.build({b.scatter_add(base, idx, upd)});
  auto out = run(m, {s64({3}, {0, 0, 100}), s32({4}, {2, 2, 0, 2}), s64({4}, {1, 2, 3, 4})});
  EXPECT_EQ(values<int64_t>(out[0]), (std::vector<int64_t>{3, 0, 107}));
  EXPECT_THROW(run(m, {s64({3}, {0, 0, 0}), s32({4}, {0, 3, 0, 0}), s64({4}, {1, 2, 3, 4})}), Error);
}

// ---- iota / rng-bit-generator ----

TEST(InterpreterIota, CountsAlongTheIotaDimension) {
  HloBuilder b("iota");
  int a = b.iota({2, 3}, DType::kInt64, 0);
  int c = b.iota({2, 3}, DType::kInt64, 1);
  int f = b.iota({3, 2, 2}, DType::kFloat32, 1);
  int h = b.iota({4}, DType::kBFloat16, 0);
  auto out = run(b.build({a, c, f, h}), {});
  EXPECT_EQ(values<int64_t>(out[0]), (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(values<int64_t>(out[1]), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(values<float>(out[2]), (std::vector<float>{0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1}));
  std::vector<float> bf;
  for (BFloat16 v : values<BFloat16>(out[3])) bf.push_back(static_cast<float>(v));
  EXPECT_EQ(bf, (std::vector<float>{0, 1, 2, 3}));
}

std::vector<int32_t> rng_bits(int64_t seed, int64_t n) {
  HloBuilder b("rng");
  int s = b.parameter({}, DType::kInt64);
  return values<int32_t>(run(b.build({b.rng_bit_generator(s, {n})}), {s64({}, {seed})})[0]);
}

TEST(InterpreterRng, SameSeedSameBitsDifferentSeedDifferentBits) {
  const int64_t n = 1 << 16;  // above the parallel threshold: threads must not change the bits
  std::vector<int32_t> a = rng_bits(42, n), again = rng_bits(42, n), other = rng_bits(43, n);
  EXPECT_EQ(a, again);
  int64_t same = 0;
  for (int64_t i = 0; i < n; ++i) same += a[i] == other[i];
  EXPECT_LE(same, 4) << "seeds 42 and 43 share " << same << " of " << n << " words";
}

TEST(InterpreterRng, BitsDependOnlyOnSeedAndPosition) {
  std::vector<int32_t> longer = rng_bits(7, 1000), shorter = rng_bits(7, 100);
  EXPECT_EQ(std::vector<int32_t>(longer.begin(), longer.begin() + 100), shorter);
  // The same seed in a 2-D shape gives the same stream in row-major order.
  HloBuilder b("rng2d");
  int s = b.parameter({}, DType::kInt64);
  auto out = run(b.build({b.rng_bit_generator(s, {10, 100})}), {s64({}, {7})});
  EXPECT_EQ(values<int32_t>(out[0]), longer);
}

TEST(InterpreterRng, BitsAreBalanced) {
  std::vector<int32_t> a = rng_bits(1234, 1 << 14);
  // Every one of the 32 bit positions is set about half the time.
  for (int bit = 0; bit < 32; ++bit) {
    int64_t ones = 0;
    for (int32_t w : a) ones += (static_cast<uint32_t>(w) >> bit) & 1u;
    EXPECT_NEAR(static_cast<double>(ones) / a.size(), 0.5, 0.02) << "bit " << bit;
  }
  int64_t distinct_neighbours = 0;
  for (size_t i = 1; i < a.size(); ++i) distinct_neighbours += a[i] != a[i - 1];
  EXPECT_EQ(distinct_neighbours, static_cast<int64_t>(a.size()) - 1);
}

// ---- elementwise odds and ends the golden op test cannot reach directly ----

TEST(InterpreterElementwise, ShiftRightLogicalIsUnsigned) {
  HloBuilder b("shift");
  int x = b.parameter({3}, DType::kInt32);
  int n = b.parameter({3}, DType::kInt32);
  auto out = run(b.build({b.binary(HloOpcode::kShiftRightLogical, x, n)}), {s32({3}, {-1, -8, 256}), s32({3}, {28, 1, 40})});
  EXPECT_EQ(values<int32_t>(out[0]), (std::vector<int32_t>{15, 0x7FFFFFFC, 0}));
}

TEST(InterpreterElementwise, MaximumPropagatesNaNAndCompareIsOrdered) {
  HloBuilder b("nan");
  int x = b.parameter({3}, DType::kFloat32);
  int y = b.parameter({3}, DType::kFloat32);
  auto out = run(b.build({b.binary(HloOpcode::kMaximum, x, y), b.binary(HloOpcode::kMinimum, y, x), b.compare(x, y, ComparisonDirection::kNe)}),
                 {f32({3}, {NAN, 1, 2}), f32({3}, {0, NAN, 3})});
  std::vector<float> mx = values<float>(out[0]), mn = values<float>(out[1]);
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_TRUE(std::isnan(mx[1]));
  EXPECT_EQ(mx[2], 3.0f);
  EXPECT_TRUE(std::isnan(mn[0]));
  EXPECT_TRUE(std::isnan(mn[1]));
  EXPECT_EQ(mn[2], 2.0f);
  EXPECT_EQ(values<uint8_t>(out[2]), (std::vector<uint8_t>{1, 1, 1}));
}

TEST(InterpreterExecute, ChecksArgumentsAgainstParameters) {
  HloBuilder b("args");
  int x = b.parameter({2}, DType::kFloat32);
  auto exe = make_compiler("interpreter")->compile(b.build({b.unary(HloOpcode::kNegate, x)}));
  EXPECT_THROW(exe->execute({}), Error);
  EXPECT_THROW(exe->execute({f32({3}, {1, 2, 3})}), Error);
  EXPECT_THROW(exe->execute({s64({2}, {1, 2})}), Error);
  EXPECT_EQ(values<float>(exe->execute({f32({2}, {1, -2})})[0]), (std::vector<float>{-1, 2}));
}

}  // namespace
}  // namespace lazytrain::backend
