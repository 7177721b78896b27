// dot through oneDNN's matmul primitive (AVX-512 / AMX kernels where the CPU has them).
#include <cstring>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>

#include "backend/interpreter/kernels.h"
#include "core/error.h"

namespace lazytrain::backend::interpreter {

namespace {

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::memory::data_type dnnl_type(DType t, const hlo::HloInstruction& in) {
  switch (t) {
    case DType::kFloat32: return dnnl::memory::data_type::f32;
    case DType::kBFloat16: return dnnl::memory::data_type::bf16;
    case DType::kFloat16: return dnnl::memory::data_type::f16;
    default: throw Error("[interpreter " + in.name() + "] dot supports f32, bf16 and f16, got " + xla_name(t));
  }
}

// Primitives are costly to create; reuse one per (shapes, strides, dtype).
struct PrimitiveCache {
  std::mutex mutex;
  std::map<std::vector<int64_t>, dnnl::matmul> entries;
};

}  // namespace

Buffer eval_dot(const hlo::HloInstruction& in, const Operands& args) {
  const Buffer& lhs = *args[0];
  const Buffer& rhs = *args[1];
  const size_t nb = in.dot.lhs_batch_dimensions.size();
  int64_t batch = 1;
  for (size_t i = 0; i < nb; ++i) batch *= lhs.shape()[i];
  const bool lhs_t = in.dot.lhs_contracting_dimensions[0] == static_cast<int64_t>(nb);   // stored [k, m]
  const bool rhs_t = in.dot.rhs_contracting_dimensions[0] == static_cast<int64_t>(nb + 1);  // stored [n, k]
  const int64_t m = in.shape[nb], n = in.shape[nb + 1];
  const int64_t k = lhs.shape()[in.dot.lhs_contracting_dimensions[0]];
  Buffer out(in.shape, in.dtype);
  if (m * n == 0) return out;
  if (k == 0) {
    std::memset(out.raw(), 0, static_cast<size_t>(out.nbytes()));
    return out;
  }
  using dims = dnnl::memory::dims;
  dims a_dims = {batch, m, k}, b_dims = {batch, k, n}, c_dims = {batch, m, n};
  dims a_strides = lhs_t ? dims{m * k, 1, m} : dims{m * k, k, 1};
  dims b_strides = rhs_t ? dims{k * n, 1, k} : dims{k * n, n, 1};
  dims c_strides = {m * n, n, 1};
  auto dt = dnnl_type(in.dtype, in);
  dnnl::memory::desc a_md(a_dims, dt, a_strides), b_md(b_dims, dt, b_strides), c_md(c_dims, dt, c_strides);

  static PrimitiveCache cache;
  std::vector<int64_t> key = {batch, m, n, k, lhs_t, rhs_t, static_cast<int64_t>(in.dtype)};
  dnnl::matmul primitive;
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.entries.find(key);
    if (it == cache.entries.end()) {
      dnnl::matmul::desc desc(a_md, b_md, c_md);
      dnnl::matmul::primitive_desc pd(desc, cpu_engine());
      it = cache.entries.emplace(key, dnnl::matmul(pd)).first;
    }
    primitive = it->second;
  }
  dnnl::memory a_mem(a_md, cpu_engine(), lhs.raw()), b_mem(b_md, cpu_engine(), rhs.raw()), c_mem(c_md, cpu_engine(), out.raw());
  dnnl::stream stream(cpu_engine());
  primitive.execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
  stream.wait();
  return out;
}

}  // namespace lazytrain::backend::interpreter
