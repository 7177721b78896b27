// What the golden cases of the newer ops cannot show: the pieces of split and
// chunk, topk's two results, errors naming the op, and scaled_dot_product_attention
// with dropout (PyTorch's stream differs): its weights, checked through v = I,
// and its gradients against the same dropped weights computed by composite ops;
// the dropout seed is device data, so a second step hits the compile cache.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "../support/backend_scope.h"
#include "core/error.h"
#include "lazy/lazy_api.h"
#include "runtime/metrics.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

std::vector<Shape> shapes(const std::vector<Tensor>& parts) {
  std::vector<Shape> out;
  for (const Tensor& p : parts) out.push_back(p.shape());
  return out;
}

void expect_error(const std::function<void()>& f, const std::string& op) {
  try {
    f();
    ADD_FAILURE() << "no error, expected one naming " << op;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[" + op + "]"), std::string::npos) << e.what();
  }
}

TEST(OpsSplit, PiecesFollowTorchsSizes) {
  Tensor x = zeros({5, 6});
  EXPECT_EQ(shapes(split(x, 2)), (std::vector<Shape>{{2, 6}, {2, 6}, {1, 6}}));
  EXPECT_EQ(shapes(x.split(std::vector<int64_t>{1, 0, 5}, 1)), (std::vector<Shape>{{5, 1}, {5, 0}, {5, 5}}));
  EXPECT_EQ(shapes(chunk(x, 3)), (std::vector<Shape>{{2, 6}, {2, 6}, {1, 6}}));
  EXPECT_EQ(shapes(x.chunk(4, 1)), (std::vector<Shape>{{5, 2}, {5, 2}, {5, 2}}));  // fewer pieces, as torch
  EXPECT_EQ(shapes(chunk(zeros({0, 2}), 3)), (std::vector<Shape>{{0, 2}, {0, 2}, {0, 2}}));
  EXPECT_EQ(shapes(split(zeros({0, 2}), 4)), (std::vector<Shape>{{0, 2}}));
  expect_error([&] { split(x, 0); }, "aten::split");
  expect_error([&] { split(x, std::vector<int64_t>{2, 2}); }, "aten::split_with_sizes");
  expect_error([&] { chunk(x, 0); }, "aten::chunk");
}

TEST(OpsTopK, ValuesAndInt64Indices) {
  Tensor x = from_vector(std::vector<float>{3, -1, 7, 0, 2, 9, -4, 5}, {2, 4});
  x.requires_grad_();
  auto [values, indices] = x.topk(2);
  EXPECT_EQ(indices.dtype(), DType::kInt64);
  EXPECT_EQ(values.to_vector<float>(), (std::vector<float>{7, 3, 9, 5}));
  EXPECT_EQ(indices.to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 1, 3}));
  sum(values).backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{1, 0, 1, 0, 0, 1, 0, 1}));
  auto [low, low_at] = topk(x.detach(), 1, 0, false);
  EXPECT_EQ(low.to_vector<float>(), (std::vector<float>{2, -1, -4, 0}));
  expect_error([&] { topk(x, 5); }, "aten::topk");
}

TEST(OpsIndex, ErrorsNameTheOp) {
  Tensor x = zeros({3, 4});
  expect_error([&] { gather(x, 1, zeros({3, 4}, DType::kFloat32)); }, "aten::gather");  // int32 and int64 indices are torch's
  expect_error([&] { gather(x, 1, zeros({4, 4}, DType::kInt64)); }, "aten::gather");
  expect_error([&] { scatter_add(x, 0, zeros({2, 4}, DType::kInt64), zeros({1, 4})); }, "aten::scatter_add");
  expect_error([&] { clamp(x, std::nullopt, std::nullopt); }, "aten::clamp");
  expect_error([&] { tril(zeros({3})); }, "aten::tril");
  expect_error([&] { stack({zeros({2}), zeros({3})}); }, "aten::stack");
  // An index outside [0, size(dim)) fails when the graph runs, even where its flat position would exist.
  Tensor bad = from_vector(std::vector<int64_t>{0, 4, 1}, {1, 3});
  EXPECT_THROW(gather(x, 1, bad).to_vector<float>(), Error);
}

TEST(OpsAttention, ErrorsNameTheOp) {
  Tensor q = zeros({2, 3, 4}), k = zeros({2, 5, 4}), v = zeros({2, 5, 6});
  const std::string op = "aten::scaled_dot_product_attention";
  expect_error([&] { scaled_dot_product_attention(q, zeros({2, 5, 3}), v); }, op);
  expect_error([&] { scaled_dot_product_attention(q, k, zeros({3, 5, 6})); }, op);
  expect_error([&] { scaled_dot_product_attention(q, k, v, zeros({4, 5})); }, op);
  expect_error([&] { scaled_dot_product_attention(q, k, v, zeros({3, 5}, DType::kBool), 0.0, true); }, op);
  expect_error([&] { scaled_dot_product_attention(q, k, v, Tensor(), 1.0); }, op);
}

// Dropout inside the kernel, seen through v = I (then out is the dropped
// weights themselves): each weight is 0 or softmax / (1 - p), about p of them
// 0; the gradients equal those of the composite softmax(q k^T s) * M @ v with
// the same multipliers M.
void check_attention_dropout() {
  manual_seed(3);
  const int64_t H = 4, L = 16, S = 32, E = 4;
  const double p = 0.4, scale = 0.5;
  Tensor q = randn({1, H, L, E}).detach(), k = randn({1, H, S, E}).detach();
  std::vector<float> eye(static_cast<size_t>(H * S * S), 0.0f);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t s = 0; s < S; ++s) eye[static_cast<size_t>((h * S + s) * S + s)] = 1.0f;
  Tensor v = from_vector(eye, {1, H, S, S});
  Tensor r = randn({1, H, L, S}).detach();
  q.requires_grad_();
  k.requires_grad_();
  v.requires_grad_();
  Tensor out = scaled_dot_product_attention(q, k, v, Tensor(), p, false, scale);
  sum(mul(out, r)).backward();
  const std::vector<float> dropped = out.to_vector<float>();
  const std::vector<float> weights = softmax(mul(matmul(q.detach(), transpose(k.detach(), -1, -2)), scale), -1).to_vector<float>();
  std::vector<float> multiplier(dropped.size());
  int64_t zeros_count = 0;
  for (size_t i = 0; i < dropped.size(); ++i) {
    multiplier[i] = dropped[i] == 0.0f ? 0.0f : static_cast<float>(1.0 / (1.0 - p));
    zeros_count += dropped[i] == 0.0f;
    EXPECT_NEAR(dropped[i], weights[i] * multiplier[i], 1e-5 + 1e-4 * weights[i] * multiplier[i]) << i;
  }
  EXPECT_NEAR(static_cast<double>(zeros_count) / static_cast<double>(dropped.size()), p, 0.05);

  Tensor q2 = q.detach(), k2 = k.detach(), v2 = v.detach();
  q2.requires_grad_();
  k2.requires_grad_();
  v2.requires_grad_();
  Tensor m = from_vector(multiplier, {1, H, L, S});
  Tensor composite = matmul(mul(softmax(mul(matmul(q2, transpose(k2, -1, -2)), scale), -1), m), v2);
  sum(mul(composite, r)).backward();
  auto expect_close = [](const Tensor& a, const Tensor& b, const char* what) {
    std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-4 + 1e-4 * std::fabs(y[i])) << what << " " << i;
  };
  expect_close(q.grad(), q2.grad(), "dq");
  expect_close(k.grad(), k2.grad(), "dk");
  expect_close(v.grad(), v2.grad(), "dv");
}

TEST(OpsAttention, DropoutInTheKernelOnTheInterpreter) {
  testing::InterpreterScope interpreter;
  check_attention_dropout();
}

TEST(OpsAttention, DropoutInTheKernelOnTheCpuBackend) {
  testing::CpuBackendScope cpu;
  check_attention_dropout();
}

TEST(OpsAttention, DropoutSeedIsDeviceDataSoStepsHitTheCache) {
  Tensor q = randn({1, 2, 8, 4}), k = randn({1, 2, 8, 4}), v = randn({1, 2, 8, 4});
  lazy::mark_step();  // q, k, v become device data: every step below is one graph
  std::vector<std::vector<float>> outs;
  int64_t cached = 0, uncached = 0;
  for (int step = 0; step < 3; ++step) {
    Tensor out = scaled_dot_product_attention(q, k, v, Tensor(), 0.5);
    lazy::mark_step();
    outs.push_back(out.to_vector<float>());
    if (step == 0) {
      cached = runtime::counter_value("CachedCompile");
      uncached = runtime::counter_value("UncachedCompile");
    }
  }
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), uncached);
  EXPECT_GE(runtime::counter_value("CachedCompile"), cached + 2);
  EXPECT_NE(outs[1], outs[2]);  // a new seed each step
}

TEST(OpsAttention, Bf16AccumulatesInFloat) {
  manual_seed(5);
  Tensor q = randn({2, 2, 40, 16}), k = randn({2, 2, 70, 16}), v = randn({2, 2, 70, 8});
  Tensor mask = gt(randn({2, 1, 40, 70}), -1.0);
  Tensor ref = scaled_dot_product_attention(to_dtype(to_dtype(q, DType::kBFloat16), DType::kFloat32),
                                            to_dtype(to_dtype(k, DType::kBFloat16), DType::kFloat32),
                                            to_dtype(to_dtype(v, DType::kBFloat16), DType::kFloat32), mask);
  Tensor out = scaled_dot_product_attention(to_dtype(q, DType::kBFloat16), to_dtype(k, DType::kBFloat16), to_dtype(v, DType::kBFloat16), mask);
  EXPECT_EQ(out.dtype(), DType::kBFloat16);
  std::vector<float> a = to_dtype(out, DType::kFloat32).to_vector<float>(), b = ref.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-2 * (1 + std::fabs(b[i]))) << i;  // one bf16 rounding of the output
}

}  // namespace
}  // namespace lazytrain
