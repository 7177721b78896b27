#include "kernels/onednn_matmul.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>
#include <oneapi/dnnl/dnnl.hpp>

#include "core/error.h"
#include "core/half.h"
#include "core/scalar_ops.h"

namespace lazytrain::kernels {

namespace {

dnnl::engine& cpu_engine() {
  static dnnl::engine engine = [] {
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return engine;
}

std::atomic<int64_t> create_retries{0};

dnnl::memory::data_type dnnl_type(DType t, const MatmulDims& in) {
  switch (t) {
    case DType::kFloat32: return dnnl::memory::data_type::f32;
    case DType::kBFloat16: return dnnl::memory::data_type::bf16;
    case DType::kFloat16: return dnnl::memory::data_type::f16;
    default: throw Error("[" + in.name + "] dot supports f32, bf16 and f16, got " + xla_name(t));
  }
}

// Once per dtype: bf16 and f16 have different instructions and different flags to leave out.
void note_widened_once(DType t) {
  static std::once_flag bf16_once, f16_once;
  const bool bf16 = t == DType::kBFloat16;
  std::call_once(bf16 ? bf16_once : f16_once, [bf16] {
    if (bf16) {
      std::fprintf(stderr,
                   "note: oneDNN has no native bf16 matmul here (bf16 needs AVX512_BF16 or AMX, which this CPU lacks or "
                   "ONEDNN_MAX_CPU_ISA / LAZYTRAIN_KERNEL_ISA=avx2 turned off); bf16 dots are computed as f32 matmuls "
                   "of the bf16 values, rounded to bf16 once, which is slower than f32 here: for speed on this CPU "
                   "train in f32 (leave out --bf16 / bf16=True)\n");
    } else {
      std::fprintf(stderr,
                   "note: oneDNN has no native f16 matmul here (f16 needs AVX512_FP16 or AMX-FP16, which this CPU lacks "
                   "or ONEDNN_MAX_CPU_ISA turned off); f16 dots are computed as f32 matmuls of the f16 values, "
                   "rounded to f16 once: for speed on this CPU compute in f32\n");
    }
  });
}

// oneDNN multiplies bf16 with bf16 instructions from AVX512_BF16 (Cooper Lake, Zen 4) and AMX on.
// On plain AVX-512 (Skylake-X to Ice Lake) it still creates bf16 matmuls, emulating every conversion
// in integer code: a bert-mini step at 2 threads ran 3.2x slower than f32 on an Ice Lake Xeon
// (bench/isa_paths.sh), where widening to f32 costs far less. cpu_isa values are feature bit sets.
bool native_bf16_matmul() {
  cpu_engine();  // LAZYTRAIN_KERNEL_ISA's cap first: the effective ISA is fixed by the first query
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & bf16) == bf16;
}

// A copy of `b`'s elements (bf16 or f16) as f32: exact, so a matmul of the
// copies sums the same products as a native bf16/f16 matmul (which accumulates in f32).
std::unique_ptr<float[]> widen(const void* raw, DType dtype, int64_t n) {
  auto out = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(n));
  float* o = out.get();
  if (dtype == DType::kBFloat16) {
    const uint16_t* in = static_cast<const uint16_t*>(raw);
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; ++i) o[i] = scalar_ops::bf16_to_float(in[i]);
  } else {
    const Half* in = static_cast<const Half*>(raw);
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<float>(in[i]);
  }
  return out;
}

// `n` f32 values rounded to nearest even into `out` (bf16 or f16).
void narrow(const float* in, int64_t n, DType dtype, void* out) {
  if (dtype == DType::kBFloat16) {
    uint16_t* o = static_cast<uint16_t*>(out);
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; ++i) o[i] = scalar_ops::float_to_bf16_bits(in[i]);
  } else {
    Half* o = static_cast<Half*>(out);
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Half>(in[i]);
  }
}

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

// oneDNN sees one OpenMP thread while `f` runs on the calling thread: a
// primitive created then splits no work between threads.
template <typename F>
auto with_one_thread(F&& f) {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  try {
    auto result = f();
    omp_set_num_threads(threads);
    return result;
  } catch (...) {
    omp_set_num_threads(threads);
    throw;
  }
}

// The primitive of `pd`, made under one OpenMP thread as `pd` was: oneDNN
// sizes a brgemm kernel's work split by the thread count it sees, and a
// primitive made under another count than its descriptor now and then threw
// std::bad_array_new_length out of the JIT generation (a [64, 16] x [16, 16]
// f32 matmul with bias and residual post-ops, in about half the runs of the
// Python suite), after which oneDNN's primitive cache answered every request
// for that primitive with a broken promise. Should oneDNN still let a C++
// exception out, the cache is emptied and the creation tried again (counter
// OneDnnCreateRetries); a third failure is an Error naming what it said.
dnnl::matmul create_primitive(const dnnl::matmul::primitive_desc& pd) {
  for (int attempt = 0;; ++attempt) {
    try {
      return with_one_thread([&] { return dnnl::matmul(pd); });
    } catch (const dnnl::error&) {
      throw;
    } catch (const std::exception& e) {
      if (attempt == 2) throw Error(std::string("[oneDNN] creating a matmul primitive failed three times: ") + e.what());
      create_retries.fetch_add(1);
      static std::mutex flush_mutex;
      std::lock_guard<std::mutex> lock(flush_mutex);
      const int capacity = dnnl::get_primitive_cache_capacity();
      dnnl::set_primitive_cache_capacity(0);  // drops every entry, the broken one with them
      dnnl::set_primitive_cache_capacity(capacity);
    }
  }
}

// Work per tile, in multiply-adds, and the fewest rows a tile of an unbatched
// dot is planned with (plan() then evens the tiles out, to no fewer than about
// half of it): large enough for oneDNN's one-thread kernels to run near their
// speed, small enough for 2 to 16 threads to share (bert-mini and bert-base
// steps within a few percent of oneDNN's own threading, bench_bert_train,
// 2 threads; tiles of 2^22 and 64 rows cost 9-15%).
constexpr int64_t kTileWork = int64_t{1} << 24;
constexpr int64_t kMinTileRows = 128;
// A dot that these rules leave in fewer than kSmallDotTiles tiles is cut in
// kSmallDotTiles (halves: of batches, or of rows down to kSmallTileRows) when
// each half has at least kSmallTileWork multiply-adds: bert-tiny's attention
// and [128, 128] weight-gradient dots ran on one thread of two (its step at
// 2 threads 48.9 -> 44.1 ms; at 1 thread within noise, bench_bert_train).
constexpr int64_t kSmallDotTiles = 2, kSmallTileWork = int64_t{1} << 20, kSmallTileRows = 32;
// A wide output (a vocabulary-sized head) is also cut into column blocks, of
// 2048 columns, but of 1024 for an f32 dot with K <= 128: there oneDNN's gemm
// ran bert-tiny's tied head ([224, 128] x [128, 30522], one thread, Ice Lake)
// in 23.9 ms in 2048-column tiles and 17.4 ms in 1024-column ones (a transposed
// rhs block of 1024 x 128 is 512 KiB and stays in L2). At K = 768 (GPT-2's
// head) 1024-column tiles measured no faster (87 ms against 81), so 2048 stays.
constexpr int64_t kSplitColumnsAbove = 4096;
int64_t tile_columns(dnnl::memory::data_type t, int64_t k) { return t == dnnl::memory::data_type::f32 && k <= 128 ? 1024 : 2048; }

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

// The result must not depend on how many threads run it (issue 30: the thread
// governor changes the count with the machine's load, and oneDNN's AVX2 gemm
// splits a dot's sums between threads differently for each count). So the
// output is cut into fixed tiles, a function of the shape alone: batches of a
// batched dot, else blocks of rows (and of columns for a wide output). Each
// tile is one oneDNN primitive created for one thread, so every sum is formed
// the same way whatever the count; the threads of the execution share the tiles.
struct TileShape {
  int64_t outer = 0;  // batches (batched dot) or rows
  int64_t cols = 0;
  bool operator==(const TileShape&) const = default;
};

struct Tile {
  int64_t outer0 = 0, col0 = 0;
  int variant = 0;  // index into Impl::variants
};

struct Variant {
  TileShape shape;
  dnnl::memory::desc a_md, b_md, c_md, bias_md, residual_md, scratchpad_md;
  dnnl::matmul primitive;
  std::string implementation;  // oneDNN's impl_info_str
  // The tile's lhs window is copied into a dense block first, and its output
  // is computed into a dense block and copied out (see make_variant).
  bool dense_a = false, dense_c = false;
};

// A block of this thread's memory of at least `bytes`, 64-byte aligned, kept
// for the thread's next tiles (slot 0: a dense lhs, 1: a dense output, 2:
// oneDNN's scratchpad): no allocation, hence no page faults, per tile once it has grown.
static uint8_t* thread_scratch(int slot, size_t bytes) {
  struct AlignedDelete {
    void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  struct Block {
    std::unique_ptr<uint8_t[], AlignedDelete> data;
    size_t size = 0;
  };
  thread_local Block blocks[3];
  Block& b = blocks[slot];
  if (b.size < bytes) {
    b.data.reset(static_cast<uint8_t*>(::operator new[](bytes, std::align_val_t(64))));
    b.size = bytes;
  }
  return b.data.get();
}

struct OneDnnMatmul::Impl {
  MatmulEpilogue epilogue;
  DType dtype = DType::kFloat32;  // the dot's (dt below is what oneDNN multiplies)
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool lhs_t = false, rhs_t = false;
  // A bf16/f16 dot oneDNN cannot multiply natively here (no AVX-512): the
  // descriptors are f32 and run() widens the operands and narrows the result.
  bool widened = false;
  dnnl::memory::data_type dt = dnnl::memory::data_type::f32;
  // rhs reordered once per run into packed_b_md (oneDNN's choice for the tiles).
  bool packed = false;
  dnnl::memory::desc plain_b_md, packed_b_md, pack_scratchpad_md;
  dnnl::reorder pack;
  std::vector<Variant> variants;
  std::vector<Tile> tiles;

  bool batched() const { return batch > 1; }
  size_t element_bytes() const { return dnnl::memory::data_type_size(dt); }

  // Tiles and their primitives for operands of type `t` (dt).
  void plan(DType t, dnnl::memory::data_type type);
  Variant make_variant(TileShape s, const dnnl::memory::desc* weights) const;
  void run_tile(const Tile& tile, const char* a, const char* b, char* c, const char* bias, const char* residual) const;
};

Variant OneDnnMatmul::Impl::make_variant(TileShape s, const dnnl::memory::desc* weights) const {
  using dims = dnnl::memory::dims;
  Variant v;
  v.shape = s;
  const int64_t rows = batched() ? m : s.outer, cols = s.cols;
  auto desc = [&](int64_t r, int64_t c, dims strides) {
    // Unbatched dots are described in 2-D: oneDNN lays out a repacked rhs in
    // blocks only for 2-D weights (3-D ones stay plain).
    return batched() ? dnnl::memory::desc({s.outer, r, c}, dt, dims{r * c, strides[0], strides[1]}) : dnnl::memory::desc({r, c}, dt, strides);
  };
  // Strides are the whole operands': a tile is a window into them.
  v.a_md = desc(rows, k, lhs_t ? dims{1, m} : dims{k, 1});
  v.b_md = desc(k, cols, rhs_t ? dims{1, k} : dims{n, 1});
  v.c_md = desc(rows, cols, dims{n, 1});
  // Our scratchpad per run: one primitive serves every device's execution
  // thread at once, and oneDNN's library scratchpad is shared between
  // primitives and bound to a thread (DNNL_ENABLE_CONCURRENT_EXEC=OFF).
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (epilogue.residual) {
    v.residual_md = v.c_md;
    dnnl::post_ops ops;
    ops.append_binary(dnnl::algorithm::binary_add, v.residual_md);
    attr.set_post_ops(ops);
  }
  if (epilogue.bias) v.bias_md = batched() ? dnnl::memory::desc({1, 1, cols}, dt, dims{cols, cols, 1}) : dnnl::memory::desc({1, cols}, dt, dims{n, 1});
  const dnnl::memory::desc& w = weights ? *weights : v.b_md;
  auto describe = [&] {
    return with_one_thread([&] {
      return epilogue.bias ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(v.a_md, w, v.bias_md, v.c_md), attr, cpu_engine())
                           : dnnl::matmul::primitive_desc(dnnl::matmul::desc(v.a_md, w, v.c_md), attr, cpu_engine());
    });
  };
  dnnl::matmul::primitive_desc pd = describe();
  // oneDNN's brgemm kernels (AMX for bf16) take no window with a leading
  // dimension other than the tile's own in a transposed lhs or in the output,
  // and the window then goes to its older gemm (bf16: 1.6x slower on AMX for
  // the 128x128x2048 tiles of a vocabulary head; f32 about 1.1x, more in a
  // step where the operand is cold: bench_bert_train's trace). Such a tile
  // copies its lhs window into a dense block, or writes a dense block that is
  // copied into the output, when brgemm takes the dense form. (The output is
  // made dense only for a transposed rhs, a tied head's [n, k] embedding: a
  // row-major rhs's column block is a window itself, and brgemm refuses it
  // still; in f32 a dense output measured slower.) A rule on the
  // shape and oneDNN's choice, never a timing: every run forms the same sums.
  const bool a_window = !batched() && lhs_t && rows < m;
  const bool c_window = !batched() && cols < n && rhs_t && !epilogue.residual && dt != dnnl::memory::data_type::f32;
  auto is_brgemm = [](const dnnl::matmul::primitive_desc& d) { return std::string(d.impl_info_str()).rfind("brg", 0) == 0; };
  if ((a_window || c_window) && !is_brgemm(pd)) {
    const dnnl::memory::desc window_a = v.a_md, window_c = v.c_md;
    if (a_window) v.a_md = desc(rows, k, dims{1, rows});
    if (c_window) v.c_md = desc(rows, cols, dims{cols, 1});
    dnnl::matmul::primitive_desc dense_pd = describe();
    if (is_brgemm(dense_pd)) {
      pd = dense_pd;
      v.dense_a = a_window;
      v.dense_c = c_window;
    } else {
      v.a_md = window_a;
      v.c_md = window_c;
    }
  }
  v.b_md = pd.weights_desc();
  v.scratchpad_md = pd.scratchpad_desc();
  v.implementation = pd.impl_info_str();
  v.primitive = create_primitive(pd);
  return v;
}

void OneDnnMatmul::Impl::plan(DType t, dnnl::memory::data_type type) {
  dt = type;
  variants.clear();
  tiles.clear();
  packed = false;
  const bool repack = repack_rhs(t, rhs_t, batch, n);
  // The tiling: a function of the shape only.
  const int64_t outer = batched() ? batch : m;
  const int64_t cols = !batched() && !repack && n > kSplitColumnsAbove ? tile_columns(type, k) : n;
  const int64_t work_per_outer = (batched() ? m : 1) * cols * k;
  int64_t outer_block = std::clamp<int64_t>(kTileWork / std::max<int64_t>(1, work_per_outer), 1, outer);
  if (!batched()) outer_block = std::min(outer, std::max(kMinTileRows, (outer_block + 15) / 16 * 16));
  const int64_t column_blocks = (n + cols - 1) / cols;
  if (column_blocks * ((outer + outer_block - 1) / outer_block) < kSmallDotTiles) {
    int64_t half = std::max<int64_t>(1, (outer + kSmallDotTiles - 1) / kSmallDotTiles);
    if (!batched()) half = std::min(outer, std::max(kSmallTileRows, (half + 15) / 16 * 16));
    // The smaller (last) tile must have the work too: 33 rows are not 32 + 1.
    if (half < outer && (outer - half * ((outer - 1) / half)) * work_per_outer >= kSmallTileWork) outer_block = half;
  }
  if (!batched()) {
    // As many tiles, of rows as even as multiples of 16 allow: 224 rows are 112 + 112, not 128 + 96
    // (a vocabulary head's input gradient, K = 30522: 2 threads would wait on the larger tile).
    // A tile then has at least about kMinTileRows / 2 rows (130 rows: 80 + 50, not 128 + 2).
    const int64_t blocks = (outer + outer_block - 1) / outer_block;
    outer_block = std::min(outer, ((outer + blocks - 1) / blocks + 15) / 16 * 16);
  }
  std::vector<TileShape> shapes;
  auto variant_of = [&](TileShape s) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      if (shapes[i] == s) return static_cast<int>(i);
    }
    shapes.push_back(s);
    return static_cast<int>(shapes.size() - 1);
  };
  // Column blocks outermost: a thread taking the next tile mostly reads the same rhs block.
  for (int64_t c = 0; c < n; c += cols) {
    for (int64_t o = 0; o < outer; o += outer_block) {
      tiles.push_back({o, c, variant_of({std::min(outer_block, outer - o), std::min(cols, n - c)})});
    }
  }
  // The first (largest) tile picks rhs's layout; the others take the same one.
  plain_b_md = dnnl::memory::desc({k, n}, dt, rhs_t ? dnnl::memory::dims{1, k} : dnnl::memory::dims{n, 1});
  std::optional<dnnl::memory::desc> weights;
  if (repack) weights = dnnl::memory::desc({k, n}, dt, dnnl::memory::format_tag::any);
  for (const TileShape& s : shapes) {
    variants.push_back(make_variant(s, weights ? &*weights : nullptr));
    if (repack && !packed) {
      packed = variants.back().b_md != plain_b_md;
      weights = variants.back().b_md;
    }
  }
  if (packed) {
    packed_b_md = *weights;
    dnnl::primitive_attr pack_attr;
    pack_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::reorder::primitive_desc pack_pd(cpu_engine(), plain_b_md, cpu_engine(), packed_b_md, pack_attr);
    pack_scratchpad_md = pack_pd.scratchpad_desc();
    pack = dnnl::reorder(pack_pd);
  }
}

void cap_onednn_at_avx2() {
  try {
    dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2);
  } catch (const dnnl::error&) {
    // oneDNN was used already: its ISA is fixed; the matmuls still fall back where they must.
  }
}

int64_t onednn_create_retries() { return create_retries.load(); }

OneDnnMatmul::OneDnnMatmul(const MatmulDims& dot, MatmulEpilogue epilogue) : impl_(std::make_unique<Impl>()) {
  const size_t nb = static_cast<size_t>(dot.batch_dims);
  const Shape& lhs = dot.lhs_shape;
  Impl& p = *impl_;
  for (size_t i = 0; i < nb; ++i) p.batch *= lhs[i];
  p.lhs_t = dot.lhs_transposed;  // stored [k, m]
  p.rhs_t = dot.rhs_transposed;  // stored [n, k]
  p.epilogue = epilogue;
  p.dtype = dot.dtype;
  p.m = dot.out_shape[nb];
  p.n = dot.out_shape[nb + 1];
  p.k = lhs[p.lhs_t ? nb : nb + 1];
  const dnnl::memory::data_type native = dnnl_type(dot.dtype, dot);  // integers are refused here
  if (p.batch * p.m * p.n == 0 || p.k == 0) return;                  // run() fills the output itself
  auto failure = [&](const dnnl::error& e) {
    return Error("[" + dot.name + "] oneDNN cannot create a " + xla_name(dot.dtype) + " matmul for [" + std::to_string(p.m) + ", " +
                 std::to_string(p.k) + "] x [" + std::to_string(p.k) + ", " + std::to_string(p.n) + "] (" + dnnl_status_name(e.status) + ")");
  };
  if (dot.dtype != DType::kBFloat16 || native_bf16_matmul()) {
    try {
      p.plan(dot.dtype, native);
      return;
    } catch (const dnnl::error& e) {
      if (dot.dtype == DType::kFloat32 || e.status != dnnl_unimplemented) throw failure(e);
    }
  }
  // What a bf16 matmul computes, from f32 kernels: the same products, summed in f32, rounded once.
  note_widened_once(dot.dtype);
  p.widened = true;
  try {
    p.plan(DType::kFloat32, dnnl::memory::data_type::f32);
  } catch (const dnnl::error& e) {
    throw failure(e);
  }
}

OneDnnMatmul::~OneDnnMatmul() = default;

bool OneDnnMatmul::repacks_rhs() const { return impl_->packed; }

bool OneDnnMatmul::widened() const { return impl_->widened; }

std::string OneDnnMatmul::implementation() const {
  const Impl& p = *impl_;
  if (p.variants.empty()) return "none";
  std::string text = p.variants.front().implementation + ", " + std::to_string(p.tiles.size()) + (p.tiles.size() == 1 ? " tile" : " tiles");
  if (p.packed) text += ", rhs repacked";
  if (p.widened) text += ", widened to f32";
  return text;
}

void OneDnnMatmul::Impl::run_tile(const Tile& tile, const char* a, const char* b, char* c, const char* bias, const char* residual) const {
  const Variant& v = variants[static_cast<size_t>(tile.variant)];
  const size_t e = element_bytes();
  const int64_t o = tile.outer0, col = tile.col0;
  // Element offsets of the tile's window in each operand.
  const int64_t a_off = batched() ? o * m * k : (lhs_t ? o : o * k);
  const int64_t b_off = batched() ? o * k * n : (packed ? 0 : rhs_t ? col * k : col);
  const int64_t c_off = batched() ? o * m * n : o * n + col;
  auto ptr = [e](const char* base, int64_t offset) { return const_cast<char*>(base) + static_cast<size_t>(offset) * e; };
  const dnnl::engine& engine = cpu_engine();
  const int64_t rows = v.shape.outer, cols = v.shape.cols;  // dense tiles are unbatched: rows of the output
  const char* a_tile = ptr(a, a_off);
  if (v.dense_a) {  // lhs stored [k, m]: k rows of the tile's `rows` columns, packed
    uint8_t* dense = thread_scratch(0, static_cast<size_t>(rows * k) * e);
    for (int64_t kk = 0; kk < k; ++kk) std::memcpy(dense + static_cast<size_t>(kk * rows) * e, a_tile + static_cast<size_t>(kk * m) * e, static_cast<size_t>(rows) * e);
    a_tile = reinterpret_cast<const char*>(dense);
  }
  char* c_tile = v.dense_c ? reinterpret_cast<char*>(thread_scratch(1, static_cast<size_t>(rows * cols) * e)) : ptr(c, c_off);
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, dnnl::memory(v.a_md, engine, const_cast<char*>(a_tile))},
                                                {DNNL_ARG_WEIGHTS, dnnl::memory(v.b_md, engine, ptr(b, b_off))},
                                                {DNNL_ARG_DST, dnnl::memory(v.c_md, engine, c_tile)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(v.bias_md, engine, ptr(bias, col)));
  if (residual) args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, dnnl::memory(v.residual_md, engine, ptr(residual, c_off)));
  if (v.scratchpad_md.get_size() > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(v.scratchpad_md, engine, thread_scratch(2, v.scratchpad_md.get_size())));
  }
  // One thread at execution too: some of oneDNN's kernels (its AVX2 gemm) pick their threads when they run.
  with_one_thread([&] {
    dnnl::stream stream(engine);
    v.primitive.execute(stream, args);
    stream.wait();
    return 0;
  });
  if (v.dense_c) {
    char* window = ptr(c, c_off);
    for (int64_t r = 0; r < rows; ++r) std::memcpy(window + static_cast<size_t>(r * n) * e, c_tile + static_cast<size_t>(r * cols) * e, static_cast<size_t>(cols) * e);
  }
}

void OneDnnMatmul::run(const void* lhs, const void* rhs, const void* bias, const void* residual, void* out) const {
  const Impl& i = *impl_;
  check((bias != nullptr) == i.epilogue.bias && (residual != nullptr) == i.epilogue.residual, "OneDnnMatmul",
        "epilogue operands do not match the primitive");
  if (i.batch * i.m * i.n == 0) return;
  if (i.k == 0) {
    // An empty sum: zeros, plus the epilogue (not reached from the passes, kept exact anyway).
    check(!i.epilogue.bias && !i.epilogue.residual, "OneDnnMatmul", "an epilogue on a dot with no contracting elements");
    std::memset(out, 0, static_cast<size_t>(i.batch * i.m * i.n * itemsize(i.dtype)));
    return;
  }
  // Widened: f32 copies of the operands, and the f32 result narrowed into `out` at the end.
  std::unique_ptr<float[]> wide_lhs, wide_rhs, wide_bias, wide_residual, wide_out;
  const int64_t out_numel = i.batch * i.m * i.n;
  const void* a = lhs;
  const void* b = rhs;
  void* c = out;
  const void* bias_data = bias;
  const void* residual_data = residual;
  if (i.widened) {
    a = (wide_lhs = widen(lhs, i.dtype, i.batch * i.m * i.k)).get();
    b = (wide_rhs = widen(rhs, i.dtype, i.batch * i.k * i.n)).get();
    c = (wide_out = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(out_numel))).get();
    if (bias) bias_data = (wide_bias = widen(bias, i.dtype, i.n)).get();
    if (residual) residual_data = (wide_residual = widen(residual, i.dtype, out_numel)).get();
  }
  auto oneDnn_failed = [&](const dnnl::error& e) {
    return Error("[OneDnnMatmul] a [" + std::to_string(i.m) + ", " + std::to_string(i.k) + "] x [" + std::to_string(i.k) + ", " +
                 std::to_string(i.n) + "] matmul failed (" + dnnl_status_name(e.status) + ")");
  };
  // rhs in the tiles' layout, once for all of them.
  std::unique_ptr<uint8_t[]> packed_rhs;
  if (i.packed) {
    try {
      packed_rhs = std::make_unique_for_overwrite<uint8_t[]>(i.packed_b_md.get_size());
      std::unique_ptr<uint8_t[]> pack_scratchpad;
      std::unordered_map<int, dnnl::memory> pack_args = {{DNNL_ARG_FROM, dnnl::memory(i.plain_b_md, cpu_engine(), const_cast<void*>(b))},
                                                         {DNNL_ARG_TO, dnnl::memory(i.packed_b_md, cpu_engine(), packed_rhs.get())}};
      if (i.pack_scratchpad_md.get_size() > 0) {
        pack_scratchpad = std::make_unique_for_overwrite<uint8_t[]>(i.pack_scratchpad_md.get_size());
        pack_args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(i.pack_scratchpad_md, cpu_engine(), pack_scratchpad.get()));
      }
      dnnl::stream stream(cpu_engine());
      i.pack.execute(stream, pack_args);
      stream.wait();
    } catch (const dnnl::error& e) {
      throw oneDnn_failed(e);
    }
    b = packed_rhs.get();
  }
  const int64_t tiles = static_cast<int64_t>(i.tiles.size());
  std::exception_ptr failure;
  std::mutex failure_mutex;
#pragma omp parallel for schedule(dynamic, 1) if (tiles > 1)
  for (int64_t t = 0; t < tiles; ++t) {
    try {
      i.run_tile(i.tiles[static_cast<size_t>(t)], static_cast<const char*>(a), static_cast<const char*>(b), static_cast<char*>(c),
                 static_cast<const char*>(bias_data), static_cast<const char*>(residual_data));
    } catch (const dnnl::error& e) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::make_exception_ptr(oneDnn_failed(e));
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  if (i.widened) narrow(wide_out.get(), out_numel, i.dtype, out);
}

}  // namespace lazytrain::kernels
