// bench_attention: forward + backward of causal self-attention alone, the fused
// scaled_dot_product_attention op (attn_implementation "sdpa") against GPT-2's
// eager composite (q k^T / sqrt(d), causal where(), softmax, P v; modeling_gpt2.py's
// eager_attention_forward), on the CPU backend (bench/README.md).
//
// q, k, v [batch, heads, seq, head_dim] are device data; each timed step builds
// out = attention(q, k, v), backward of sum(out * r) with r fixed, mark_step and
// waits for dq, dk, dv. Both implementations in one run, interleaved step by
// step so that load on a shared machine hits both alike; prints the median step
// time of each (wall clock, and the process's CPU time, which other jobs on a
// shared machine disturb less) and their ratios:
//   RESULT bench=attention batch=1 heads=12 seq=1024 head_dim=64 dtype=f32 eager_ms=... sdpa_ms=... speedup=...
//          eager_cpu_ms=... sdpa_cpu_ms=... cpu_speedup=...
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "bench_support.h"
#include "backend/registry.h"
#include "core/error.h"
#include "lazy/lazy_api.h"
#include "tensor/ops.h"

using namespace lazytrain;

namespace {

struct Options : bench::StepFlags {
  int64_t heads = 12, head_dim = 64;
  Options() {
    batch_size = 1;
    seq_len = 1024;
    warmup = 1;
    steps = 5;
  }
};

const char* kUsage =
    "usage: bench_attention [--batch_size B] [--seq_len S] [--heads H] [--head_dim D] [--warmup N] [--steps M] [--bf16]\n"
    "  default: GPT-2 124M's attention at sequence 1024 (12 heads of 64), batch 1\n";

Options parse(int argc, char** argv) {
  Options o;
  bench::parse_step_flags(argc, argv, "bench_attention", kUsage, o, [&](const std::string& flag, const std::string& value) {
    if (flag == "--heads") o.heads = std::stoll(value);
    else if (flag == "--head_dim") o.head_dim = std::stoll(value);
    else return false;
    return true;
  });
  return o;
}

// GPT-2's eager attention (src/models/gpt2.cpp's eager branch, without the projections).
Tensor eager_attention(const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t s = q.shape()[2];
  Tensor scores = matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(q.shape()[3]));
  Tensor positions = arange(s);
  Tensor causal = ge(positions.unsqueeze(1), positions.unsqueeze(0));
  scores = where(causal, scores, full({}, std::numeric_limits<float>::lowest(), scores.dtype()));
  return matmul(softmax(scores, -1).to(v.dtype()), v);
}

int run(const Options& o) {
  lazy::set_compiler(backend::make_compiler(o.backend));
  manual_seed(o.seed);
  const Shape shape = {o.batch_size, o.heads, o.seq_len, o.head_dim};
  const DType dtype = o.bf16 ? DType::kBFloat16 : DType::kFloat32;
  Tensor q = randn(shape).to(dtype), k = randn(shape).to(dtype), v = randn(shape).to(dtype), r = randn(shape).to(dtype);
  lazy::mark_step();
  std::printf("bench_attention: batch %lld x heads %lld x seq %lld x head_dim %lld, %s, causal, forward + backward, %d warm-up + %d timed steps each\n",
              static_cast<long long>(o.batch_size), static_cast<long long>(o.heads), static_cast<long long>(o.seq_len),
              static_cast<long long>(o.head_dim), o.bf16 ? "bf16" : "f32", o.warmup, o.steps);

  auto step = [&](bool sdpa) {
    Tensor qg = q.detach(), kg = k.detach(), vg = v.detach();
    qg.requires_grad_();
    kg.requires_grad_();
    vg.requires_grad_();
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = bench::process_cpu_seconds();
    Tensor out = sdpa ? scaled_dot_product_attention(qg, kg, vg, Tensor(), 0.0, true) : eager_attention(qg, kg, vg);
    sum(mul(out.to(DType::kFloat32), r.to(DType::kFloat32))).backward();
    lazy::mark_step();
    qg.grad().to_vector<float>();  // waits for the step
    return std::pair{std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), bench::process_cpu_seconds() - cpu_start};
  };
  for (int i = 0; i < o.warmup; ++i) step(false), step(true);
  std::vector<double> eager, sdpa, eager_cpu, sdpa_cpu;
  for (int i = 0; i < o.steps; ++i) {
    const auto [e, ec] = step(false);
    const auto [s, sc] = step(true);
    eager.push_back(e), eager_cpu.push_back(ec), sdpa.push_back(s), sdpa_cpu.push_back(sc);
  }
  auto median = [](std::vector<double> x) {
    std::sort(x.begin(), x.end());
    return x[x.size() / 2];
  };
  const double e = median(eager) * 1e3, s = median(sdpa) * 1e3, ec = median(eager_cpu) * 1e3, sc = median(sdpa_cpu) * 1e3;
  std::printf("eager: median %.1f ms (min %.1f), sdpa: median %.1f ms (min %.1f)\n", e, *std::min_element(eager.begin(), eager.end()) * 1e3, s,
              *std::min_element(sdpa.begin(), sdpa.end()) * 1e3);
  std::printf("process CPU time: eager median %.1f ms, sdpa median %.1f ms\n", ec, sc);
  std::printf("RESULT bench=attention batch=%lld heads=%lld seq=%lld head_dim=%lld dtype=%s eager_ms=%.1f sdpa_ms=%.1f speedup=%.2f "
              "eager_cpu_ms=%.1f sdpa_cpu_ms=%.1f cpu_speedup=%.2f\n",
              static_cast<long long>(o.batch_size), static_cast<long long>(o.heads), static_cast<long long>(o.seq_len),
              static_cast<long long>(o.head_dim), o.bf16 ? "bf16" : "f32", e, s, e / s, ec, sc, ec / sc);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    return run(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_attention: %s\n", e.what());
    return 1;
  }
}
