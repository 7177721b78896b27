#include "backend/onednn_matmul.h"

#include <cstring>
#include <memory>
#include <unordered_map>
#include <oneapi/dnnl/dnnl.hpp>

#include "core/error.h"

namespace lazytrain::backend {

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
    default: throw Error("[" + in.name() + "] dot supports f32, bf16 and f16, got " + xla_name(t));
  }
}

}  // namespace

struct OneDnnMatmul::Impl {
  MatmulEpilogue epilogue;
  int64_t m = 0, n = 0, k = 0;
  dnnl::memory::desc a_md, b_md, c_md, bias_md, residual_md, scratchpad_md;
  dnnl::matmul primitive;
};

OneDnnMatmul::OneDnnMatmul(const Shape& lhs, const hlo::HloInstruction& dot, MatmulEpilogue epilogue) : impl_(std::make_unique<Impl>()) {
  const size_t nb = dot.dot.lhs_batch_dimensions.size();
  int64_t batch = 1;
  for (size_t i = 0; i < nb; ++i) batch *= lhs[i];
  const bool lhs_t = dot.dot.lhs_contracting_dimensions[0] == static_cast<int64_t>(nb);      // stored [k, m]
  const bool rhs_t = dot.dot.rhs_contracting_dimensions[0] == static_cast<int64_t>(nb + 1);  // stored [n, k]
  Impl& p = *impl_;
  p.epilogue = epilogue;
  p.m = dot.shape[nb];
  p.n = dot.shape[nb + 1];
  p.k = lhs[static_cast<size_t>(dot.dot.lhs_contracting_dimensions[0])];
  if (p.m * p.n == 0 || p.k == 0) return;  // run() fills the output itself
  using dims = dnnl::memory::dims;
  const int64_t m = p.m, n = p.n, k = p.k;
  const auto dt = dnnl_type(dot.dtype, dot);
  p.a_md = dnnl::memory::desc({batch, m, k}, dt, lhs_t ? dims{m * k, 1, m} : dims{m * k, k, 1});
  p.b_md = dnnl::memory::desc({batch, k, n}, dt, rhs_t ? dims{k * n, 1, k} : dims{k * n, n, 1});
  p.c_md = dnnl::memory::desc({batch, m, n}, dt, dims{m * n, n, 1});
  dnnl::primitive_attr attr;
  // Our scratchpad per run: one primitive serves every device's execution
  // thread at once, and oneDNN's library scratchpad is shared between
  // primitives and bound to a thread (DNNL_ENABLE_CONCURRENT_EXEC=OFF).
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (epilogue.residual) {
    p.residual_md = p.c_md;
    dnnl::post_ops ops;
    ops.append_binary(dnnl::algorithm::binary_add, p.residual_md);
    attr.set_post_ops(ops);
  }
  if (epilogue.bias) p.bias_md = dnnl::memory::desc({1, 1, n}, dt, dims{n, n, 1});
  dnnl::matmul::primitive_desc pd =
      epilogue.bias ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(p.a_md, p.b_md, p.bias_md, p.c_md), attr, cpu_engine())
                    : dnnl::matmul::primitive_desc(dnnl::matmul::desc(p.a_md, p.b_md, p.c_md), attr, cpu_engine());
  p.scratchpad_md = pd.scratchpad_desc();
  p.primitive = dnnl::matmul(pd);
}

OneDnnMatmul::~OneDnnMatmul() = default;

void OneDnnMatmul::run(const runtime::Buffer& lhs, const runtime::Buffer& rhs, const runtime::Buffer* bias, const runtime::Buffer* residual,
                       runtime::Buffer& out) const {
  const Impl& p = *impl_;
  check((bias != nullptr) == p.epilogue.bias && (residual != nullptr) == p.epilogue.residual, "OneDnnMatmul",
        "epilogue operands do not match the primitive");
  if (p.m * p.n == 0) return;
  if (p.k == 0) {
    // An empty sum: zeros, plus the epilogue (not reached from the passes, kept exact anyway).
    check(!p.epilogue.bias && !p.epilogue.residual, "OneDnnMatmul", "an epilogue on a dot with no contracting elements");
    std::memset(out.raw(), 0, static_cast<size_t>(out.nbytes()));
    return;
  }
  dnnl::memory a(p.a_md, cpu_engine(), lhs.raw()), b(p.b_md, cpu_engine(), rhs.raw()), c(p.c_md, cpu_engine(), out.raw());
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}};
  if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(p.bias_md, cpu_engine(), bias->raw()));
  if (residual) args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, dnnl::memory(p.residual_md, cpu_engine(), residual->raw()));
  // The scratchpad of this run alone (thread-safe: runs never share one).
  const size_t scratchpad_bytes = p.scratchpad_md.get_size();
  std::unique_ptr<uint8_t[]> scratchpad;
  if (scratchpad_bytes > 0) {
    scratchpad = std::make_unique_for_overwrite<uint8_t[]>(scratchpad_bytes);
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(p.scratchpad_md, cpu_engine(), scratchpad.get()));
  }
  dnnl::stream stream(cpu_engine());
  p.primitive.execute(stream, args);
  stream.wait();
}

}  // namespace lazytrain::backend
