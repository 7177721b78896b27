// bench_matmul_peak: the matmul peak of this machine, for MFU (bench/README.md).
//
// Times oneDNN's matmul primitive (the one lazytrain's dot calls) on BERT-like
// shapes, f32 and bf16 (bf16 inputs and output, f32 accumulation, as autocast),
// row-major operands as lazytrain passes them. Each primitive is created once,
// run once untimed, then repeated at least 5 times and for at least --min_time
// seconds; prints the best and median GFLOP/s per shape and, per dtype, the peak
// (best over shapes; on a shared machine contention only slows a run down):
//   RESULT bench=matmul_peak dtype=f32 peak_gflops=...
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "runtime/execution_queue.h"
#include "runtime/thread_budget.h"

namespace {

struct MatmulShape {
  int64_t m, k, n;
};

const char* kUsage =
    "usage: bench_matmul_peak [--shapes MxKxN,...] [--dtypes f32,bf16] [--min_time SECONDS] [--rhs rowmajor|packed]\n"
    "  default shapes 4096x768x768,4096x768x3072,4096x3072x768 (tokens x in x out of BERT-base linears)\n"
    "  --rhs packed: the rhs is reordered from row-major to oneDNN's chosen layout in every timed run\n"
    "  (what lazytrain does for wide f32 rhs, src/kernels/onednn_matmul.cpp); default row-major in place\n";

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "bench_matmul_peak: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

MatmulShape parse_shape(const std::string& s) {
  std::vector<std::string> parts = split(s, 'x');
  if (parts.size() != 3) usage_error("a shape is MxKxN, got '" + s + "'");
  int64_t v[3];
  for (int i = 0; i < 3; ++i) {
    char* end = nullptr;
    v[i] = std::strtoll(parts[static_cast<size_t>(i)].c_str(), &end, 10);
    if (*end != '\0' || v[i] <= 0) usage_error("a shape is MxKxN with positive sizes, got '" + s + "'");
  }
  return {v[0], v[1], v[2]};
}

uint16_t to_bf16(float f) {  // round to nearest even (finite inputs)
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

struct Timing {
  double best_gflops = 0, median_gflops = 0;
  int reps = 0;
  std::string impl;
};

Timing time_matmul(dnnl::engine& engine, const MatmulShape& s, dnnl::memory::data_type dt, double min_time, bool packed_rhs) {
  using dims = dnnl::memory::dims;
  dnnl::memory::desc a_md(dims{s.m, s.k}, dt, dims{s.k, 1}), b_md(dims{s.k, s.n}, dt, dims{s.n, 1}),
      c_md(dims{s.m, s.n}, dt, dims{s.n, 1});
  const dnnl::memory::desc weights_md = packed_rhs ? dnnl::memory::desc(dims{s.k, s.n}, dt, dnnl::memory::format_tag::any) : b_md;
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, weights_md, c_md), engine);
  dnnl::matmul primitive(pd);

  const size_t elem = dt == dnnl::memory::data_type::f32 ? 4 : 2;
  std::vector<unsigned char> a(static_cast<size_t>(s.m * s.k) * elem), b(static_cast<size_t>(s.k * s.n) * elem),
      c(static_cast<size_t>(s.m * s.n) * elem);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto fill = [&](std::vector<unsigned char>& buf) {
    const size_t n = buf.size() / elem;
    for (size_t i = 0; i < n; ++i) {
      const float v = u(rng);
      if (elem == 4) {
        std::memcpy(buf.data() + 4 * i, &v, 4);
      } else {
        const uint16_t h = to_bf16(v);
        std::memcpy(buf.data() + 2 * i, &h, 2);
      }
    }
  };
  fill(a);
  fill(b);
  dnnl::memory a_mem(a_md, engine, a.data()), b_mem(b_md, engine, b.data()), c_mem(c_md, engine, c.data());
  dnnl::memory weights_mem = packed_rhs ? dnnl::memory(pd.weights_desc(), engine) : b_mem;
  dnnl::reorder pack;
  if (packed_rhs) pack = dnnl::reorder(b_mem, weights_mem);
  dnnl::stream stream(engine);
  auto run_once = [&] {
    if (packed_rhs) pack.execute(stream, b_mem, weights_mem);
    primitive.execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, weights_mem}, {DNNL_ARG_DST, c_mem}});
    stream.wait();
  };
  run_once();  // untimed: first-touch of the output, kernel caches

  const double flop = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.k) * static_cast<double>(s.n);
  std::vector<double> seconds;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  while (seconds.size() < 5 || elapsed() < min_time) {
    const auto t0 = std::chrono::steady_clock::now();
    run_once();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(seconds.begin(), seconds.end());
  Timing t;
  t.reps = static_cast<int>(seconds.size());
  t.best_gflops = flop / seconds.front() * 1e-9;
  t.median_gflops = flop / seconds[seconds.size() / 2] * 1e-9;
  t.impl = pd.impl_info_str();
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::string shapes_arg = "4096x768x768,4096x768x3072,4096x3072x768";
  std::string dtypes_arg = "f32,bf16";
  double min_time = 1.0;
  bool packed_rhs = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::printf("%s", kUsage);
      return 0;
    }
    if (i + 1 >= argc) usage_error("unknown flag or missing value: " + flag);
    const std::string value = argv[++i];
    if (flag == "--shapes") {
      shapes_arg = value;
    } else if (flag == "--dtypes") {
      dtypes_arg = value;
    } else if (flag == "--rhs") {
      if (value != "rowmajor" && value != "packed") usage_error("--rhs expects rowmajor or packed, got '" + value + "'");
      packed_rhs = value == "packed";
    } else if (flag == "--min_time") {
      char* end = nullptr;
      min_time = std::strtod(value.c_str(), &end);
      if (*end != '\0' || !(min_time >= 0)) usage_error("--min_time expects seconds >= 0, got '" + value + "'");
    } else {
      usage_error("unknown flag: " + flag);
    }
  }
  std::vector<MatmulShape> shapes;
  for (const std::string& s : split(shapes_arg, ',')) shapes.push_back(parse_shape(s));
  std::vector<std::string> dtypes = split(dtypes_arg, ',');
  for (const std::string& d : dtypes) {
    if (d != "f32" && d != "bf16") usage_error("--dtypes lists f32 and/or bf16, got '" + d + "'");
  }

  const dnnl::version_t* v = dnnl::version();
  lazytrain::runtime::use_execution_threads();  // the threads and wait policy a training step gets
  std::printf("bench_matmul_peak: oneDNN %d.%d.%d, %d OpenMP threads (waiting %s), min %.2f s per shape, rhs %s\n", v->major, v->minor,
              v->patch, omp_get_max_threads(), lazytrain::runtime::omp_wait_policy().c_str(), min_time,
              packed_rhs ? "packed in every run" : "row-major");
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  for (const std::string& d : dtypes) {
    const auto dt = d == "f32" ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16;
    double peak = 0;
    for (const MatmulShape& s : shapes) {
      Timing t;
      try {
        t = time_matmul(engine, s, dt, min_time, packed_rhs);
      } catch (const dnnl::error& e) {
        std::printf("%-4s %lldx%lldx%lld: unsupported (%s)\n", d.c_str(), static_cast<long long>(s.m), static_cast<long long>(s.k),
                    static_cast<long long>(s.n), e.what());
        continue;
      }
      peak = std::max(peak, t.best_gflops);
      std::printf("%-4s M=%lld K=%lld N=%lld: best %.1f GFLOP/s, median %.1f GFLOP/s over %d runs (%s)\n", d.c_str(),
                  static_cast<long long>(s.m), static_cast<long long>(s.k), static_cast<long long>(s.n), t.best_gflops,
                  t.median_gflops, t.reps, t.impl.c_str());
      std::printf("RESULT bench=matmul_peak dtype=%s m=%lld k=%lld n=%lld gflops_best=%.2f gflops_median=%.2f impl=%s\n", d.c_str(),
                  static_cast<long long>(s.m), static_cast<long long>(s.k), static_cast<long long>(s.n), t.best_gflops,
                  t.median_gflops, t.impl.c_str());
    }
    std::printf("RESULT bench=matmul_peak dtype=%s peak_gflops=%.2f\n", d.c_str(), peak);
  }
  return 0;
}
