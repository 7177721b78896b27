// tensor/view.h in C++: slice_scatter against a hand-placed expectation, writes
// through a view chain reaching the base, versions and stale views, and the
// autograd of a write (the Python suite compares the same against torch:
// tests/python/test_views_inplace_torch.py).
#include <gtest/gtest.h>

#include <numeric>

#include "core/error.h"
#include "tensor/tensor.h"
#include "tensor/view.h"

namespace lazytrain {
namespace {

Tensor iota12() {
  std::vector<float> v(12);
  std::iota(v.begin(), v.end(), 0.0f);
  return from_vector(v, {3, 4});
}

ViewStep slice_step(int64_t dim, int64_t start, int64_t end, int64_t step) {
  ViewStep s;
  s.kind = ViewStep::Kind::kSlice;
  s.ints = {dim, start, end, step};
  return s;
}

TEST(SliceScatter, PlacesSrcAtEveryStepAndKeepsTheRest) {
  // Columns 1 and 3 of a [3, 4] take src; the others keep x.
  Tensor out = slice_scatter(iota12(), full({3, 2}, -1.0), 1, 1, 4, 2);
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{0, -1, 2, -1, 4, -1, 6, -1, 8, -1, 10, -1}));
  // A step that runs past the end (rows 0 and 2 of 3) and an empty slice.
  Tensor rows = slice_scatter(iota12(), full({2, 4}, 7.0), 0, 0, 3, 2);
  EXPECT_EQ(rows.to_vector<float>(), (std::vector<float>{7, 7, 7, 7, 4, 5, 6, 7, 7, 7, 7, 7}));
  EXPECT_EQ(slice_scatter(iota12(), zeros({3, 0}), 1, 2, 2).to_vector<float>(), iota12().to_vector<float>());
  EXPECT_THROW(slice_scatter(iota12(), zeros({3, 3}), 1, 0, 2), Error);
}

TEST(Views, AWriteThroughAChainReachesTheBaseAndStaleViewsFollow) {
  Tensor base = iota12();
  Tensor column = make_view(base, slice(base, 1, 2, 3), slice_step(1, 2, 3, 1));  // base[:, 2:3]
  ViewStep flat;
  flat.shape = {3};
  Tensor v = make_view(column, reshape(column, {3}), flat);
  Tensor row = make_view(base, slice(base, 0, 1, 2), slice_step(0, 1, 2, 1));  // base[1:2], taken before the write
  inplace_update(v, add(v, 100.0), "add_");
  EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{0, 1, 102, 3, 4, 5, 106, 7, 8, 9, 110, 11}));
  EXPECT_EQ(row.to_vector<float>(), (std::vector<float>{4, 5, 106, 7}));
  EXPECT_EQ(version(*base.impl()), 1u);
  EXPECT_EQ(version(*row.impl()), 1u);
}

TEST(Views, DetachedAliasesSeeWritesAndKeepNoHistory) {
  Tensor x = iota12();
  x.requires_grad_(true);
  Tensor y = mul(x, 2.0);
  Tensor alias = detach_alias(y);
  EXPECT_FALSE(alias.requires_grad());
  inplace_update(alias, full({3, 4}, 1.0), "fill_", InplaceCast::kAny);
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(12, 1.0f));
}

TEST(Views, AutogradFollowsAWriteIntoAResult) {
  Tensor x = from_vector(std::vector<float>{1, 2, 3}, {3});
  x.requires_grad_(true);
  Tensor y = mul(x, 2.0);
  inplace_update(y, mul(clone(y), 3.0), "mul_");
  sum(y).backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{6, 6, 6}));
}

TEST(Views, TorchsErrors) {
  Tensor leaf = zeros({2});
  leaf.requires_grad_(true);
  EXPECT_THROW(inplace_update(leaf, add(clone(leaf), 1.0), "add_"), Error);
  {
    NoGradGuard no_grad;  // optimizers write leaves this way
    inplace_update(leaf, add(clone(leaf), 1.0), "add_");
  }
  EXPECT_EQ(leaf.to_vector<float>(), (std::vector<float>{1, 1}));
  Tensor ints = arange(0, 3);
  EXPECT_THROW(inplace_update(ints, mul(to_dtype(ints, DType::kFloat32), 0.5), "mul_"), Error);
  EXPECT_THROW(inplace_update(zeros({3}), zeros({2, 3}), "add_"), Error);
  // A saved input changed before backward.
  Tensor w = from_vector(std::vector<float>{1, 2}, {2});
  w.requires_grad_(true);
  Tensor h = mul(w, 1.0);
  Tensor z = mul(h, h);
  inplace_update(h, add(clone(h), 1.0), "add_");
  EXPECT_THROW(sum(z).backward(), Error);
}

}  // namespace
}  // namespace lazytrain
