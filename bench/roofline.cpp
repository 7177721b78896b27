#include "roofline.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

#include "backend/cpu/dot_epilogue_fusion.h"
#include "backend/cpu/matmul_dims.h"
#include "hlo/custom_call.h"
#include "runtime/buffer.h"

namespace lazytrain::bench {

using hlo::HloInstruction;
using hlo::HloModule;
using hlo::HloOpcode;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A multi-output fusion writes each of its elements.
double bytes_of(const HloInstruction& in) {
  if (!hlo::is_multi_output_fusion(in)) return static_cast<double>(numel(in.shape) * itemsize(in.dtype));
  double bytes = 0;
  for (const HloInstruction* o : hlo::fusion_outputs(in)) bytes += static_cast<double>(numel(o->shape) * itemsize(o->dtype));
  return bytes;
}

// The dot a step instruction runs: itself, or the dot inside a dot epilogue fusion.
const HloInstruction* dot_of(const HloInstruction& in, const Shape** lhs_shape, const HloModule& module) {
  if (in.opcode == HloOpcode::kDot) {
    *lhs_shape = &module.at(in.operands[0]).shape;
    return &in;
  }
  if (in.opcode != HloOpcode::kFusion || !backend::cpu::dot_epilogue_of(in)) return nullptr;
  const HloModule& f = *in.fused_computation;
  for (const HloInstruction& inner : f.instructions) {
    if (inner.opcode == HloOpcode::kDot) {
      *lhs_shape = &f.at(inner.operands[0]).shape;
      return &inner;
    }
  }
  return nullptr;
}

double dot_flops(const HloInstruction& dot, const Shape& lhs) {
  double k = 1;
  for (int64_t d : dot.dot.lhs_contracting_dimensions) k *= static_cast<double>(lhs[static_cast<size_t>(d)]);
  return 2.0 * static_cast<double>(numel(dot.shape)) * k;
}

// The rhs shape of `dot` from its output and lhs: batch dims, then the
// non-contracting dims, with the contracting dims where the dimension numbers put them.
Shape rhs_shape_of(const HloInstruction& dot, const Shape& lhs) {
  const auto& dims = dot.dot;
  const size_t batch = dims.lhs_batch_dimensions.size(), contracting = dims.lhs_contracting_dimensions.size();
  const size_t lhs_free = lhs.size() - batch - contracting;
  const size_t rhs_free = dot.shape.size() - batch - lhs_free;
  Shape rhs(batch + contracting + rhs_free, 0);
  for (size_t i = 0; i < dims.rhs_batch_dimensions.size(); ++i) {
    rhs[static_cast<size_t>(dims.rhs_batch_dimensions[i])] = lhs[static_cast<size_t>(dims.lhs_batch_dimensions[i])];
  }
  for (size_t i = 0; i < dims.rhs_contracting_dimensions.size(); ++i) {
    rhs[static_cast<size_t>(dims.rhs_contracting_dimensions[i])] = lhs[static_cast<size_t>(dims.lhs_contracting_dimensions[i])];
  }
  // The output's trailing dims after lhs's free dims are rhs's free dims, in order.
  size_t out_dim = batch + lhs_free;
  for (size_t d = 0; d < rhs.size(); ++d) {
    if (rhs[d] == 0) rhs[d] = dot.shape[out_dim++];
  }
  return rhs;
}

void fill(runtime::Buffer& b) {
  // Small values of the buffer's dtype (their bits only matter for NaN/denormal
  // slow paths): 0x3c003c00... is 1/128 in bf16 pairs and 0.0078 in f32.
  std::vector<uint8_t> pattern(static_cast<size_t>(b.nbytes()));
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = (i % 2) ? 0x3c : 0x00;
  std::memcpy(b.raw(), pattern.data(), pattern.size());
}

double time_dot(const HloInstruction& dot, const Shape& lhs_shape) {
  kernels::OneDnnMatmul matmul(backend::cpu::matmul_dims(lhs_shape, dot));
  runtime::Buffer lhs(lhs_shape, dot.dtype), rhs(rhs_shape_of(dot, lhs_shape), dot.dtype), out(dot.shape, dot.dtype);
  fill(lhs);
  fill(rhs);
  matmul.run(lhs.raw(), rhs.raw(), nullptr, nullptr, out.raw());
  double best = 1e30, spent = 0;
  for (int i = 0; i < 3 || spent < 0.2; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    matmul.run(lhs.raw(), rhs.raw(), nullptr, nullptr, out.raw());
    const double s = seconds_since(t0);
    best = std::min(best, s);
    spent += s;
    if (i >= 50) break;
  }
  return best;
}

std::string dot_key(const HloInstruction& dot, const Shape& lhs) {
  std::ostringstream k;
  k << shape_str(lhs) << shape_str(dot.shape) << static_cast<int>(dot.dtype);
  for (const auto* v : {&dot.dot.lhs_batch_dimensions, &dot.dot.rhs_batch_dimensions, &dot.dot.lhs_contracting_dimensions,
                        &dot.dot.rhs_contracting_dimensions}) {
    k << '|';
    for (int64_t d : *v) k << d << ',';
  }
  return k.str();
}

// The matmuls an sdpa custom-call's kernel computes, as the batched dots
// eager attention would run (q's dtype): the forward's Q K^T and P V; the
// backward recomputes Q K^T and forms dP = dO V^T, dV = P^T dO, dQ = dS K and
// dK = dS^T Q (flash attention's backward). Each with its lhs shape.
std::vector<std::pair<HloInstruction, Shape>> attention_dots(const HloModule& module, const HloInstruction& call) {
  const bool forward = call.custom_call_target == hlo::kSdpaForwardTarget;
  if (!forward && call.custom_call_target != hlo::kSdpaBackwardTarget) return {};
  const Shape& q = module.at(call.operands[0]).shape;
  const Shape& k = module.at(call.operands[1]).shape;
  const Shape& v = module.at(call.operands[2]).shape;
  const DType t = module.at(call.operands[0]).dtype;
  const size_t nb = q.size() - 2;
  const int64_t L = q[nb], E = q[nb + 1], S = k[nb], Ev = v[nb + 1];
  const Shape batch(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(nb));
  auto shape = [&](int64_t a, int64_t b) {
    Shape s = batch;
    s.push_back(a);
    s.push_back(b);
    return s;
  };
  std::vector<std::pair<HloInstruction, Shape>> dots;
  // out = lhs · rhs over lhs dim `lc` and rhs dim `rc` (offsets after the batch dims).
  auto dot = [&](const Shape& lhs, int64_t lc, int64_t rc, const Shape& out) {
    HloInstruction d;
    d.opcode = HloOpcode::kDot;
    d.dtype = t;
    d.shape = out;
    for (size_t i = 0; i < nb; ++i) {
      d.dot.lhs_batch_dimensions.push_back(static_cast<int64_t>(i));
      d.dot.rhs_batch_dimensions.push_back(static_cast<int64_t>(i));
    }
    d.dot.lhs_contracting_dimensions = {static_cast<int64_t>(nb) + lc};
    d.dot.rhs_contracting_dimensions = {static_cast<int64_t>(nb) + rc};
    dots.emplace_back(std::move(d), lhs);
  };
  dot(q, 1, 1, shape(L, S));  // Q K^T
  if (forward) {
    dot(shape(L, S), 1, 0, shape(L, Ev));  // P V
    return dots;
  }
  dot(shape(L, Ev), 1, 1, shape(L, S));  // dP = dO V^T
  dot(shape(L, S), 0, 0, shape(S, Ev));  // dV = P^T dO
  dot(shape(L, S), 1, 0, shape(L, E));   // dQ = dS K
  dot(shape(L, S), 0, 0, shape(S, E));   // dK = dS^T Q
  return dots;
}

bool moves_no_bytes(const HloInstruction& in) {
  switch (in.opcode) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kTuple:
    case HloOpcode::kReshape:
    case HloOpcode::kGetTupleElement:  // its multi-output fusion wrote it
      return true;
    default:
      return false;
  }
}

}  // namespace

double triad_bytes_per_second(int threads, int64_t bytes_per_array, int repeats) {
  const int64_t n = bytes_per_array / 4;
  std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n), 1.0f), c(static_cast<size_t>(n), 2.0f);
  double best = 1e30;
  const float s = 3.0f;
  for (int r = 0; r < repeats + 1; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) a[static_cast<size_t>(i)] = b[static_cast<size_t>(i)] + s * c[static_cast<size_t>(i)];
    const double t = seconds_since(t0);
    if (r > 0) best = std::min(best, t);  // the first pass touches the pages
  }
  if (a[static_cast<size_t>(n / 2)] != 7.0f) std::fprintf(stderr, "triad: wrong result\n");
  return 12.0 * static_cast<double>(n) / best;
}

Roofline measure_roofline(const HloModule& module, int threads) {
  Roofline r;
  r.threads = threads;
  const int previous_threads = omp_get_max_threads();
  omp_set_num_threads(threads);
  std::map<std::string, double> dot_seconds;
  // A view's bytes are its operand's: follow reshapes to the value they show.
  std::vector<int> value_of(module.instructions.size());
  for (const HloInstruction& in : module.instructions) {
    value_of[static_cast<size_t>(in.id)] = in.opcode == HloOpcode::kReshape ? value_of[static_cast<size_t>(in.operands[0])] : in.id;
  }
  std::set<int> read;
  const bool print_dots = std::getenv("LAZYTRAIN_ROOFLINE_DOTS") != nullptr;  // each dot's time alone, to set beside a trace
  for (const HloInstruction& in : module.instructions) {
    const Shape* lhs = nullptr;
    if (const HloInstruction* dot = dot_of(in, &lhs, module)) {
      ++r.dots;
      r.matmul_flops += dot_flops(*dot, *lhs);
      const std::string key = dot_key(*dot, *lhs);
      auto it = dot_seconds.find(key);
      if (it == dot_seconds.end()) it = dot_seconds.emplace(key, time_dot(*dot, *lhs)).first;
      r.matmul_s += it->second;
      if (print_dots) std::fprintf(stderr, "roofline dot %s %s: %.3f ms alone\n", in.name().c_str(), key.c_str(), it->second * 1e3);
      continue;
    }
    // An sdpa kernel's matmuls count as the dots they are; its operands and
    // result count as bytes (below), as any kernel's.
    for (const auto& [attention_dot, lhs_shape] : attention_dots(module, in)) {
      ++r.dots;
      r.matmul_flops += dot_flops(attention_dot, lhs_shape);
      const std::string key = dot_key(attention_dot, lhs_shape);
      auto it = dot_seconds.find(key);
      if (it == dot_seconds.end()) it = dot_seconds.emplace(key, time_dot(attention_dot, lhs_shape)).first;
      r.matmul_s += it->second;
    }
    if (moves_no_bytes(in)) continue;
    r.other_bytes += bytes_of(in);  // written once
    for (int o : in.operands) {
      const int v = value_of[static_cast<size_t>(o)];
      if (read.insert(v).second) r.other_bytes += bytes_of(module.at(v));  // read once
    }
  }
  r.bandwidth = triad_bytes_per_second(threads);
  omp_set_num_threads(previous_threads);
  return r;
}

std::string roofline_result_fields(const Roofline& r, double step_s) {
  char line[320];
  std::snprintf(line, sizeof(line), " roofline_s=%.4f roofline_matmul_s=%.4f roofline_bytes=%.0f triad_gbps=%.2f roofline_fraction=%.3f",
                r.bound_s(), r.matmul_s, r.other_bytes, r.bandwidth * 1e-9, step_s / r.bound_s());
  return line;
}

void print_roofline(const Roofline& r, double step_s) {
  std::printf("roofline (%d thread%s): matmuls %.3f s (%lld dots, %.2f TFLOP, each at its own best oneDNN time) + %.3f GB of "
              "non-matmul traffic at %.2f GB/s (STREAM triad) = %.3f s; the step (median %.3f s) is %.2fx the bound\n",
              r.threads, r.threads == 1 ? "" : "s", r.matmul_s, static_cast<long long>(r.dots), r.matmul_flops * 1e-12, r.other_bytes * 1e-9,
              r.bandwidth * 1e-9, r.bound_s(), step_s, step_s / r.bound_s());
}

}  // namespace lazytrain::bench
