// OneDnnMatmul (the dot of both backends): every operand layout, with and
// without the bias/residual epilogue, for a wide f32 rhs (repacked into
// oneDNN's layout before each run) and a narrow one (read in place). The
// operands are small integers, so every sum is exact in f32 whatever order
// oneDNN adds in, and the results are compared exactly with a plain loop.
#include "backend/onednn_matmul.h"

#include <gtest/gtest.h>

#include <vector>

#include "hlo/hlo_builder.h"

namespace lazytrain::backend {
namespace {

using runtime::Buffer;

// Integer values in [-3, 3], different for each (seed, i).
Buffer small_integers(const Shape& shape, int seed) {
  Buffer b(shape, DType::kFloat32);
  for (int64_t i = 0; i < b.numel(); ++i) b.data<float>()[i] = static_cast<float>((i * 7 + seed * 13 + (i / 5) * 3) % 7 - 3);
  return b;
}

struct Case {
  int64_t m, k, n;
  bool lhs_t, rhs_t, epilogue;
};

void check_case(const Case& c) {
  const Shape lhs_shape = c.lhs_t ? Shape{c.k, c.m} : Shape{c.m, c.k};
  const Shape rhs_shape = c.rhs_t ? Shape{c.n, c.k} : Shape{c.k, c.n};
  hlo::HloBuilder b("dot");
  int x = b.parameter(lhs_shape, DType::kFloat32);
  int y = b.parameter(rhs_shape, DType::kFloat32);
  hlo::HloModule module = b.build({b.dot(x, y, {{}, {}, {c.lhs_t ? 0 : 1}, {c.rhs_t ? 1 : 0}})});
  const hlo::HloInstruction& dot = module.at(module.at(module.root).operands[0]);
  OneDnnMatmul matmul(lhs_shape, dot, MatmulEpilogue{c.epilogue, c.epilogue});
  EXPECT_EQ(matmul.repacks_rhs(), !c.rhs_t && c.n > 1024);

  const Buffer lhs = small_integers(lhs_shape, 1), rhs = small_integers(rhs_shape, 2);
  const Buffer bias = small_integers({c.n}, 3), residual = small_integers({c.m, c.n}, 4);
  Buffer out({c.m, c.n}, DType::kFloat32);
  matmul.run(lhs, rhs, c.epilogue ? &bias : nullptr, c.epilogue ? &residual : nullptr, out);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      float want = c.epilogue ? bias.data<float>()[j] + residual.data<float>()[i * c.n + j] : 0.0f;
      for (int64_t p = 0; p < c.k; ++p) {
        const float a = lhs.data<float>()[c.lhs_t ? p * c.m + i : i * c.k + p];
        const float w = rhs.data<float>()[c.rhs_t ? j * c.k + p : p * c.n + j];
        want += a * w;
      }
      ASSERT_EQ(out.data<float>()[i * c.n + j], want) << "m=" << c.m << " k=" << c.k << " n=" << c.n << " lhs_t=" << c.lhs_t
                                                      << " rhs_t=" << c.rhs_t << " epilogue=" << c.epilogue << " at (" << i << ", " << j << ")";
    }
  }
}

TEST(OneDnnMatmul, EveryLayoutAndEpilogueIsExactForWideAndNarrowRhs) {
  for (int64_t n : {48, 1200}) {
    for (int layout = 0; layout < 4; ++layout) {
      for (bool epilogue : {false, true}) check_case({37, 45, n, (layout & 1) != 0, (layout & 2) != 0, epilogue});
    }
  }
}

}  // namespace
}  // namespace lazytrain::backend
