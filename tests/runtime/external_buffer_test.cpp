// External buffers (runtime/buffer.h): memory the runtime does not own, aliased
// by a zero-copy import (DLPack). The runtime only reads it: never in place,
// never as a donated argument, and a graph passing it through hands out a
// copy; reads see what the owner wrote since.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "hlo/hlo_builder.h"
#include "lazy/lazy_api.h"
#include "runtime/transfer.h"
#include "../support/backend_scope.h"
#include "../support/kernel_isas.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

using runtime::Buffer;

// 64-byte aligned host memory of `n` floats 0, 1, 2, ..., owned by the test as
// a producer's array is, with a flag set when the last Buffer releases it.
struct HostArray {
  explicit HostArray(size_t n) : n(n), data(static_cast<float*>(std::aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64))) {
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<float>(i);
  }
  ~HostArray() { std::free(data); }
  // The owner a Buffer holds: releasing it sets `released`.
  std::shared_ptr<void> owner() {
    return std::shared_ptr<void>(this, [flag = released](void*) { *flag = true; });
  }
  Buffer alias(const Shape& shape) {
    return runtime::alias_host_memory(data, static_cast<int64_t>(n * sizeof(float)), shape, DType::kFloat32, runtime::current_device(), owner());
  }
  size_t n;
  float* data;
  std::shared_ptr<bool> released = std::make_shared<bool>(false);
};

TEST(ExternalBuffer, AliasesTheBytesIsNeverWritableAndReleasesItsOwner) {
  HostArray host(8);
  {
    Buffer b = host.alias({2, 4});
    EXPECT_EQ(b.raw(), host.data);
    EXPECT_TRUE(b.is_external());
    EXPECT_FALSE(b.writable());
    EXPECT_FALSE(b.unique());  // the only Buffer, yet not the runtime's to overwrite
    // Everything sharing the storage is external too.
    EXPECT_FALSE(b.reshaped({8}).writable());
    EXPECT_FALSE(b.view(16, {4}, DType::kFloat32).writable());
    EXPECT_EQ(b.view(16, {4}, DType::kFloat32).data<float>()[0], 4.0f);
    host.data[1] = 42.0f;  // the owner writes: reads see it
    EXPECT_EQ(b.data<float>()[1], 42.0f);
    // A copy is the runtime's own.
    Buffer c = runtime::copy_buffer(b);
    EXPECT_NE(c.raw(), b.raw());
    EXPECT_TRUE(c.unique());
    EXPECT_TRUE(c.writable());
    EXPECT_EQ(c.data<float>()[1], 42.0f);
    EXPECT_FALSE(*host.released);
  }
  EXPECT_TRUE(*host.released);
  EXPECT_TRUE(Buffer({2}, DType::kFloat32).writable());
}

TEST(ExternalBuffer, RefusesMisalignedMemoryAndWrongSizes) {
  HostArray host(32);
  auto misaligned = [&] {
    return runtime::alias_host_memory(host.data + 1, 16, {4}, DType::kFloat32, runtime::current_device(), host.owner());
  };
  EXPECT_THROW(misaligned(), Error);
  EXPECT_THROW(runtime::alias_host_memory(host.data, 12, {4}, DType::kFloat32, runtime::current_device(), host.owner()), Error);
  EXPECT_THROW(runtime::alias_host_memory(host.data, 0, {0}, DType::kFloat32, runtime::current_device(), host.owner()), Error);
}

// A strided host array copied onto the device row-major (a transposed view,
// and a negative stride).
TEST(ExternalBuffer, StridedTransferGathersRowMajor) {
  const std::vector<float> m = {0, 1, 2, 3, 4, 5};  // [2, 3]
  Buffer t = runtime::transfer_strided_to_device(m.data(), {3, 2}, {4, 12}, DType::kFloat32, runtime::current_device());
  EXPECT_EQ(std::vector<float>(t.data<float>(), t.data<float>() + 6), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  Buffer r = runtime::transfer_strided_to_device(m.data() + 5, {6}, {-4}, DType::kFloat32, runtime::current_device());
  EXPECT_EQ(std::vector<float>(r.data<float>(), r.data<float>() + 6), (std::vector<float>{5, 4, 3, 2, 1, 0}));
}

// The CPU backend writes an elementwise output over a donated argument it
// reads last (backend/cpu CpuInPlace): never over an external one.
TEST(ExternalBuffer, TheCpuBackendNeverWritesOverADonatedExternalArgument) {
  hlo::HloBuilder b("update");
  int p = b.parameter({4, 8}, DType::kFloat32);
  int g = b.parameter({4, 8}, DType::kFloat32);
  hlo::HloModule m = b.build({b.binary(hlo::HloOpcode::kSubtract, p, b.unary(hlo::HloOpcode::kTanh, g))});
  auto cpu = testing::cpu_compiler_for("")->compile(std::move(m));
  HostArray host(32);
  Buffer grad({4, 8}, DType::kFloat32);
  for (int i = 0; i < 32; ++i) grad.data<float>()[i] = 0.5f;
  std::vector<Buffer> out = cpu->execute({host.alias({4, 8}), grad}, {true, false});
  EXPECT_NE(out[0].raw(), host.data);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(host.data[i], static_cast<float>(i)) << i;  // untouched
    EXPECT_NEAR(out[0].data<float>()[i], static_cast<float>(i) - std::tanh(0.5f), 1e-6f) << i;
  }
}

// A tensor over external memory updated in place (an optimizer's step): the
// graph would donate its old value, but the update goes to new storage; each
// execution reads the bytes the owner wrote last.
TEST(ExternalBuffer, ALazyInPlaceUpdateLeavesTheOwnersMemoryAlone) {
  for (const std::string backend : {"interpreter", "cpu"}) {
    SCOPED_TRACE(backend);
    testing::BackendScope scope(backend);
    HostArray host(4);
    Tensor w(lazy::make_device_data(host.alias({4})));
    w.set_data(w * 2.0);
    lazy::mark_step();
    EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{0, 2, 4, 6}));
    EXPECT_EQ(std::vector<float>(host.data, host.data + 4), (std::vector<float>{0, 1, 2, 3}));
    lazy::wait_device_ops();  // the execution let go of its arguments
    EXPECT_TRUE(*host.released);  // w holds its new value only

    HostArray x_host(4);
    Tensor x(lazy::make_device_data(x_host.alias({4})));
    EXPECT_EQ((x + 1.0).to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
    x_host.data[0] = 10.0f;  // the owner writes between two executions
    EXPECT_EQ((x + 1.0).to_vector<float>(), (std::vector<float>{11, 2, 3, 4}));
  }
}

// A graph that passes an external input through (a reshape) gives its output
// storage of its own: the new tensor keeps its value when the owner writes.
TEST(ExternalBuffer, AnOutputThatPassesAnExternalInputThroughIsACopy) {
  testing::CpuBackendScope scope;
  HostArray host(6);
  Tensor x(lazy::make_device_data(host.alias({6})));
  Tensor y = x.reshape({2, 3});
  lazy::mark_step();
  const Buffer yb = y.impl()->buffer();
  EXPECT_FALSE(yb.is_external());
  EXPECT_NE(yb.raw(), host.data);
  host.data[0] = 7.0f;
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

}  // namespace
}  // namespace lazytrain
