// Tensor hooks, retain_grad and autograd::grad (tensor/autograd_hooks.h); the
// expected values are torch's for the same graphs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "tensor/autograd_hooks.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

TEST(AutogradHooks, HooksReplaceGradientsAndRetainGradSeesTheResult) {
  Tensor x = from_vector(std::vector<float>{1, 2, 3}, {3});
  x.requires_grad_();
  Tensor y = x * 2.0;
  autograd::retain_grad(y);
  std::vector<std::string> order;
  const int64_t removed = autograd::register_hook(y, [&](const Tensor&) { order.push_back("removed"); return Tensor(); });
  autograd::register_hook(y, [&](const Tensor& g) { order.push_back("y"); return g * 10.0; });
  autograd::register_hook(x, [&](const Tensor&) { order.push_back("x"); return Tensor(); });
  autograd::remove_hook(removed);
  sum(y * y).backward();
  EXPECT_EQ(order, (std::vector<std::string>{"y", "x"}));
  EXPECT_EQ(y.grad().to_vector<float>(), (std::vector<float>{40, 80, 120}));
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{80, 160, 240}));
  EXPECT_TRUE(autograd::retains_grad(y));
  EXPECT_THROW(autograd::register_hook(from_vector(std::vector<float>{1}, {1}), [](const Tensor& g) { return g; }), Error);
}

TEST(AutogradHooks, GradCapturesInputsWithoutTouchingLeaves) {
  Tensor x = from_vector(std::vector<float>{1, 2}, {2});
  x.requires_grad_();
  Tensor unused = from_vector(std::vector<float>{1}, {1});
  unused.requires_grad_();
  Tensor h = x * x;
  Tensor out = sum(h * 3.0);
  std::vector<Tensor> g = autograd::grad({out}, {x, h, unused}, {}, /*retain_graph=*/true, /*allow_unused=*/true);
  EXPECT_EQ(g[0].to_vector<float>(), (std::vector<float>{6, 12}));
  EXPECT_EQ(g[1].to_vector<float>(), (std::vector<float>{3, 3}));
  EXPECT_FALSE(g[2].defined());
  EXPECT_FALSE(x.grad().defined());
  try {
    autograd::grad({out}, {x, unused}, {}, false, false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("appears to not have been used in the graph"), std::string::npos) << e.what();
  }
  // retain_graph kept it once; the graph is freed now.
  EXPECT_THROW(autograd::grad({out}, {x}, {}, false, false), Error);
}

}  // namespace
}  // namespace lazytrain
