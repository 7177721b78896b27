#include "backend/onednn_matmul.h"

#include <omp.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <oneapi/dnnl/dnnl.hpp>

#include "core/env_vars.h"
#include "core/error.h"
#include "core/half.h"

namespace lazytrain::backend {

namespace {

dnnl::engine& cpu_engine() {
  static dnnl::engine engine = [] {
    // LAZYTRAIN_KERNEL_ISA=avx2 makes the process behave as on an AVX2-only
    // CPU, oneDNN included (before its first primitive; ONEDNN_MAX_CPU_ISA,
    // which oneDNN reads itself, caps it the same way).
    if (environment().kernel_isa == "avx2") {
      try {
        dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2);
      } catch (const dnnl::error&) {
        // oneDNN was used already: its ISA is fixed; the matmuls below still fall back where they must.
      }
    }
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
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

void note_widened_once(DType t) {
  static std::once_flag once;
  std::call_once(once, [t] {
    std::fprintf(stderr,
                 "note: oneDNN has no native %s matmul on this CPU (it needs AVX-512: AVX512_BF16 or AMX for bf16); %s dots are "
                 "computed as f32 matmuls of the %s values, rounded to %s once, which is slower than f32 here\n",
                 xla_name(t).c_str(), xla_name(t).c_str(), xla_name(t).c_str(), xla_name(t).c_str());
  });
}

// A copy of `b`'s elements (bf16 or f16) as f32: exact, so a matmul of the
// copies sums the same products as a native bf16/f16 matmul (which accumulates in f32).
std::unique_ptr<float[]> widen(const runtime::Buffer& b) {
  const int64_t n = b.numel();
  auto out = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(n));
  float* o = out.get();
  if (b.dtype() == DType::kBFloat16) {
    const uint16_t* in = static_cast<const uint16_t*>(b.raw());
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; ++i) o[i] = scalar_ops::bf16_to_float(in[i]);
  } else {
    const Half* in = static_cast<const Half*>(b.raw());
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<float>(in[i]);
  }
  return out;
}

// `n` f32 values rounded to nearest even into `out` (bf16 or f16).
void narrow(const float* in, int64_t n, runtime::Buffer& out) {
  if (out.dtype() == DType::kBFloat16) {
    uint16_t* o = static_cast<uint16_t*>(out.raw());
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; ++i) o[i] = scalar_ops::float_to_bf16_bits(in[i]);
  } else {
    Half* o = static_cast<Half*>(out.raw());
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Half>(in[i]);
  }
}

bool is_unimplemented(const dnnl::error& e) { return e.status == dnnl_unimplemented; }

// oneDNN's status in words, for errors that name it (never its raw message alone).
std::string dnnl_status_name(dnnl_status_t status) {
  switch (status) {
    case dnnl_out_of_memory: return "out of memory";
    case dnnl_invalid_arguments: return "invalid arguments";
    case dnnl_unimplemented: return "no implementation for this CPU";
    case dnnl_runtime_error: return "runtime error";
    default: return "oneDNN status " + std::to_string(static_cast<int>(status));
  }
}

}  // namespace

// Whether to repack rhs for oneDNN before each f32 matmul. oneDNN's brgemm
// reads a row-major rhs [k, n] in place, and for wide rows it runs at a third
// of its speed on this kind of CPU (f32, one thread: 512x768x3072 at 46-52
// GFLOP/s against 126-134 with rhs reordered to the layout it picks, reorder
// included; the same for n = 2560 and 6144, a tie at 4096, a small gain down
// to n = 1536: `bench_matmul_peak --shapes 512x768x3072 --dtypes f32 --rhs
// rowmajor|packed`, OMP_NUM_THREADS=1). These
// are a transformer's wide weights in the backward pass (g W, and the weight
// gradients x^T g). bf16 (AMX) is faster in place: not repacked. Deterministic:
// a rule on the shape, never a timing, so every run computes the same sums.
bool repack_rhs(DType t, bool rhs_transposed, int64_t batch, int64_t n) {
  return t == DType::kFloat32 && !rhs_transposed && batch == 1 && n > 1024;
}

// The primitives for one OpenMP thread count: oneDNN splits the work for the
// threads it sees at creation and asks for that many when it runs, so an
// execution on fewer threads (runtime/thread_governor.h) needs its own.
struct Primitives {
  dnnl::memory::desc scratchpad_md;
  dnnl::matmul primitive;
  // repack_rhs: rhs is reordered from b_md into packed_b_md (oneDNN's choice) before each run.
  bool packed = false;
  dnnl::memory::desc packed_b_md, pack_scratchpad_md;
  dnnl::reorder pack;
};

struct OneDnnMatmul::Impl {
  MatmulEpilogue epilogue;
  // A bf16/f16 dot oneDNN cannot multiply natively here (no AVX-512): the
  // descriptors are f32 and run() widens the operands and narrows the result.
  bool widened = false;
  int64_t m = 0, n = 0, k = 0;
  dnnl::memory::desc a_md, b_md, weights_md, c_md, bias_md, residual_md;
  dnnl::primitive_attr attr;
  mutable std::mutex mutex;
  mutable std::map<int, std::shared_ptr<const Primitives>> by_threads;  // OpenMP threads -> primitives

  // The memory descriptors and attributes for operands of type `t`.
  void describe(int64_t batch, bool lhs_t, bool rhs_t, DType t, dnnl::memory::data_type dt);

  // The primitives for the calling thread's OpenMP thread count, made at first use.
  std::shared_ptr<const Primitives> primitives() const {
    const int threads = omp_get_max_threads();
    std::lock_guard<std::mutex> lock(mutex);
    std::shared_ptr<const Primitives>& p = by_threads[threads];
    if (!p) p = make_primitives();
    return p;
  }

  std::shared_ptr<const Primitives> make_primitives() const {
    auto p = std::make_shared<Primitives>();
    dnnl::matmul::primitive_desc pd =
        epilogue.bias ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, weights_md, bias_md, c_md), attr, cpu_engine())
                      : dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, weights_md, c_md), attr, cpu_engine());
    p->scratchpad_md = pd.scratchpad_desc();
    p->primitive = dnnl::matmul(pd);
    if (pd.weights_desc() != b_md) {
      p->packed = true;
      p->packed_b_md = pd.weights_desc();
      dnnl::primitive_attr pack_attr;
      pack_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::reorder::primitive_desc pack_pd(cpu_engine(), b_md, cpu_engine(), p->packed_b_md, pack_attr);
      p->pack_scratchpad_md = pack_pd.scratchpad_desc();
      p->pack = dnnl::reorder(pack_pd);
    }
    return p;
  }
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
  const dnnl::memory::data_type native = dnnl_type(dot.dtype, dot);  // integers are refused here
  try {
    p.describe(batch, lhs_t, rhs_t, dot.dtype, native);
    p.primitives();  // for the creating thread's count now: a compile error surfaces here, not in the first run
    return;
  } catch (const dnnl::error& e) {
    if (dot.dtype == DType::kFloat32 || !is_unimplemented(e)) {
      throw Error("[" + dot.name() + "] oneDNN cannot create a " + xla_name(dot.dtype) + " matmul for [" + std::to_string(p.m) + ", " +
                  std::to_string(p.k) + "] x [" + std::to_string(p.k) + ", " + std::to_string(p.n) + "] (" + dnnl_status_name(e.status) + ")");
    }
  }
  // What a bf16 matmul computes, from f32 kernels: the same products, summed in f32, rounded once.
  note_widened_once(dot.dtype);
  p.widened = true;
  p.by_threads.clear();
  p.describe(batch, lhs_t, rhs_t, DType::kFloat32, dnnl::memory::data_type::f32);
  p.primitives();
}

void OneDnnMatmul::Impl::describe(int64_t batch, bool lhs_t, bool rhs_t, DType t, dnnl::memory::data_type dt) {
  Impl& p = *this;
  using dims = dnnl::memory::dims;
  const int64_t m = p.m, n = p.n, k = p.k;
  // Unbatched dots are described in 2-D: oneDNN lays out a repacked rhs in
  // blocks only for 2-D weights (3-D ones stay plain).
  const bool batched = batch > 1;
  auto desc = [&](int64_t rows, int64_t cols, dims strides) {
    return batched ? dnnl::memory::desc({batch, rows, cols}, dt, dims{rows * cols, strides[0], strides[1]})
                   : dnnl::memory::desc({rows, cols}, dt, strides);
  };
  p.a_md = desc(m, k, lhs_t ? dims{1, m} : dims{k, 1});
  p.b_md = desc(k, n, rhs_t ? dims{1, k} : dims{n, 1});
  p.c_md = desc(m, n, dims{n, 1});
  // Our scratchpad per run: one primitive serves every device's execution
  // thread at once, and oneDNN's library scratchpad is shared between
  // primitives and bound to a thread (DNNL_ENABLE_CONCURRENT_EXEC=OFF).
  p.attr = dnnl::primitive_attr();
  p.attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (p.epilogue.residual) {
    p.residual_md = p.c_md;
    dnnl::post_ops ops;
    ops.append_binary(dnnl::algorithm::binary_add, p.residual_md);
    p.attr.set_post_ops(ops);
  }
  if (p.epilogue.bias) p.bias_md = batched ? dnnl::memory::desc({1, 1, n}, dt, dims{n, n, 1}) : dnnl::memory::desc({1, n}, dt, dims{n, 1});
  p.weights_md = repack_rhs(t, rhs_t, batch, n) ? dnnl::memory::desc({k, n}, dt, dnnl::memory::format_tag::any) : p.b_md;
}

OneDnnMatmul::~OneDnnMatmul() = default;

bool OneDnnMatmul::repacks_rhs() const { return impl_->m * impl_->n > 0 && impl_->k > 0 && impl_->primitives()->packed; }

void OneDnnMatmul::run(const runtime::Buffer& lhs, const runtime::Buffer& rhs, const runtime::Buffer* bias, const runtime::Buffer* residual,
                       runtime::Buffer& out) const {
  const Impl& i = *impl_;
  check((bias != nullptr) == i.epilogue.bias && (residual != nullptr) == i.epilogue.residual, "OneDnnMatmul",
        "epilogue operands do not match the primitive");
  if (i.m * i.n == 0) return;
  if (i.k == 0) {
    // An empty sum: zeros, plus the epilogue (not reached from the passes, kept exact anyway).
    check(!i.epilogue.bias && !i.epilogue.residual, "OneDnnMatmul", "an epilogue on a dot with no contracting elements");
    std::memset(out.raw(), 0, static_cast<size_t>(out.nbytes()));
    return;
  }
  const std::shared_ptr<const Primitives> primitives = i.primitives();
  const Primitives& p = *primitives;
  // Widened: f32 copies of the operands, and the f32 result narrowed into `out` at the end.
  std::unique_ptr<float[]> wide_lhs, wide_rhs, wide_bias, wide_residual, wide_out;
  void* lhs_data = lhs.raw();
  void* rhs_data = rhs.raw();
  void* out_data = out.raw();
  void* bias_data = bias ? bias->raw() : nullptr;
  void* residual_data = residual ? residual->raw() : nullptr;
  if (i.widened) {
    wide_lhs = widen(lhs);
    wide_rhs = widen(rhs);
    wide_out = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(out.numel()));
    lhs_data = wide_lhs.get();
    rhs_data = wide_rhs.get();
    out_data = wide_out.get();
    if (bias) bias_data = (wide_bias = widen(*bias)).get();
    if (residual) residual_data = (wide_residual = widen(*residual)).get();
  }
  dnnl::stream stream(cpu_engine());
  dnnl::memory a(i.a_md, cpu_engine(), lhs_data), b(i.b_md, cpu_engine(), rhs_data), c(i.c_md, cpu_engine(), out_data);
  // Buffers of this run alone (thread-safe: runs never share one).
  std::unique_ptr<uint8_t[]> packed_rhs, pack_scratchpad;
  if (p.packed) {
    packed_rhs = std::make_unique_for_overwrite<uint8_t[]>(p.packed_b_md.get_size());
    dnnl::memory packed(p.packed_b_md, cpu_engine(), packed_rhs.get());
    std::unordered_map<int, dnnl::memory> pack_args = {{DNNL_ARG_FROM, b}, {DNNL_ARG_TO, packed}};
    if (p.pack_scratchpad_md.get_size() > 0) {
      pack_scratchpad = std::make_unique_for_overwrite<uint8_t[]>(p.pack_scratchpad_md.get_size());
      pack_args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(p.pack_scratchpad_md, cpu_engine(), pack_scratchpad.get()));
    }
    p.pack.execute(stream, pack_args);
    b = packed;
  }
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}};
  if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(i.bias_md, cpu_engine(), bias_data));
  if (residual) args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, dnnl::memory(i.residual_md, cpu_engine(), residual_data));
  const size_t scratchpad_bytes = p.scratchpad_md.get_size();
  std::unique_ptr<uint8_t[]> scratchpad;
  if (scratchpad_bytes > 0) {
    scratchpad = std::make_unique_for_overwrite<uint8_t[]>(scratchpad_bytes);
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(p.scratchpad_md, cpu_engine(), scratchpad.get()));
  }
  try {
    p.primitive.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    throw Error("[OneDnnMatmul] a [" + std::to_string(i.m) + ", " + std::to_string(i.k) + "] x [" + std::to_string(i.k) + ", " +
                std::to_string(i.n) + "] matmul failed (" + dnnl_status_name(e.status) + ")");
  }
  if (i.widened) narrow(wide_out.get(), out.numel(), out);
}

bool OneDnnMatmul::widened() const { return impl_->widened; }

}  // namespace lazytrain::backend
