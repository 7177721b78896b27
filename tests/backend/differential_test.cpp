// Differential tests of the CPU backend (HLO passes + generated fusion kernels)
// against the interpreter, the reference backend, and against the golden files.
//
// - DifferentialRandomHloOnIsa.CpuBackendMatchesInterpreter/<isa>_<i>: seeded random
//   module i (tests/support/random_hlo.h) of kGraphsPerModule independent random
//   graphs, run through both backends on the same arguments, with the kernels
//   generated for AVX2 and (where the CPU has it) for AVX-512; every output compared with
//   the tolerance the generator derived for it. A failure prints the seed, the
//   failing graph's own module (regenerated alone) and the CPU backend's
//   optimized HLO of it. LAZYTRAIN_DIFFERENTIAL_MODULES / _SEED run a longer soak.
// - DifferentialRandomHlo.FusesIntoGeneratedKernels/<i>, DifferentialRandomHloCoverage:
//   the pass pipeline did fuse (loop and input fusions), the emitter generated
//   kernels for them, and every kind of random step occurred, so the comparison
//   cannot pass by interpreting everything.
// - DifferentialLongSums, DifferentialSizeOneDims, DifferentialSpecialValues:
//   directed cases for bugs the random graphs found (see each test).
// - DifferentialOpsGolden/<batch>: every golden op case (tests/golden/ops.json),
//   forward and backward, on the CPU backend against PyTorch's values, in
//   batches of kGoldenBatch cases (one graph, one compile, per batch).
// - DifferentialBertGolden: the BERT golden (logits, loss, every gradient) on
//   the CPU backend, in one graph.
//
// ctest runs each test in its own process: every test compiles only what it checks.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <nlohmann/json.hpp>
#include <omp.h>

#include "../support/golden.h"
#include "../support/golden_ops.h"
#include "../support/hlo_pass_test_util.h"
#include "../support/kernel_isas.h"
#include "../support/random_hlo.h"
#include "backend/registry.h"
#include "backend/cpu/jit.h"
#include "backend/cpu/kernel_emitter.h"
#include "backend/cpu/kernel_isa.h"
#include "hlo/hlo_builder.h"
#include "backend/cpu/cpu_pipeline.h"
#include "lazy/computation_cache.h"
#include "lazy/lazy_api.h"
#include "runtime/metrics.h"
#include "tensor/autocast.h"
#include "models/bert.h"

namespace lazytrain {
namespace {

using backend::Executable;
using runtime::Buffer;
using testing::RandomHloCase;
using testing::RandomHloOptions;
using testing::RandomOutput;
using testing::cpu_compiler_for;
using testing::kernel_isas;

constexpr int kGraphsPerModule = 30;

// 10 modules (300 random graphs) by default; a longer soak:
//   LAZYTRAIN_DIFFERENTIAL_MODULES=200 LAZYTRAIN_DIFFERENTIAL_SEED=12345 lazytrain_tests --gtest_filter='Differential*RandomHlo*'
int module_count() {
  const char* v = std::getenv("LAZYTRAIN_DIFFERENTIAL_MODULES");
  return v && *v ? std::max(1, std::atoi(v)) : 10;
}
const int kModules = module_count();

uint64_t seed_of(int module) {
  const char* v = std::getenv("LAZYTRAIN_DIFFERENTIAL_SEED");
  const uint64_t base = v && *v ? std::strtoull(v, nullptr, 0) : 0x1a2f7e5d00000000ull;
  return base + static_cast<uint64_t>(module);
}

RandomHloOptions options_for(int only_graph = -1) {
  RandomHloOptions o;
  o.graphs = kGraphsPerModule;
  o.only_graph = only_graph;
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---- comparing buffers ----

std::string format_value(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

// "" when `got` matches `want` within `o`'s tolerance, else the first mismatches.
std::string mismatch(const Buffer& got, const Buffer& want, const RandomOutput& o) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
    return "got " + xla_name(got.dtype()) + shape_str(got.shape()) + ", expected " + xla_name(want.dtype()) + shape_str(want.shape());
  }
  const int64_t n = want.numel();
  int bad = 0;
  std::ostringstream report;
  auto fail = [&](int64_t i, double a, double e) {
    if (bad++ < 6) report << "\n      [" << i << "] got " << format_value(a) << ", expected " << format_value(e);
  };
  switch (want.dtype()) {
    case DType::kFloat32: {
      const float* a = got.data<float>();
      const float* e = want.data<float>();
      for (int64_t i = 0; i < n; ++i) {
        const double av = a[i], ev = e[i];
        bool ok;
        if (std::isnan(ev)) ok = std::isnan(av);
        else if (o.exact || std::isinf(ev)) ok = av == ev;
        else ok = std::fabs(av - ev) <= o.atol + o.rtol * std::fabs(ev);
        if (!ok) fail(i, av, ev);
      }
      break;
    }
    case DType::kInt32: {
      const int32_t* a = got.data<int32_t>();
      const int32_t* e = want.data<int32_t>();
      for (int64_t i = 0; i < n; ++i) {
        if (a[i] != e[i]) fail(i, a[i], e[i]);
      }
      break;
    }
    case DType::kInt64: {
      const int64_t* a = got.data<int64_t>();
      const int64_t* e = want.data<int64_t>();
      for (int64_t i = 0; i < n; ++i) {
        if (a[i] != e[i]) fail(i, static_cast<double>(a[i]), static_cast<double>(e[i]));
      }
      break;
    }
    case DType::kBool: {
      const uint8_t* a = got.data<uint8_t>();
      const uint8_t* e = want.data<uint8_t>();
      for (int64_t i = 0; i < n; ++i) {
        if ((a[i] != 0) != (e[i] != 0)) fail(i, a[i], e[i]);
      }
      break;
    }
    default: return "unexpected dtype " + xla_name(want.dtype());
  }
  if (bad == 0) return "";
  std::ostringstream os;
  os << bad << " of " << n << " elements differ (";
  if (o.exact) os << "exact";
  else os << "rtol " << o.rtol << ", atol " << o.atol;
  os << ")" << report.str();
  return os.str();
}

// "" when every element of the reference lies in the generator's predicted range.
std::string out_of_range(const Buffer& want, const RandomOutput& o) {
  if (want.dtype() == DType::kBool) return "";
  const double slack = 1e-4 * std::max(1.0, std::max(std::fabs(o.lo), std::fabs(o.hi)));
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double v = want.dtype() == DType::kFloat32 ? want.data<float>()[i]
                     : want.dtype() == DType::kInt32 ? want.data<int32_t>()[i]
                                                     : static_cast<double>(want.data<int64_t>()[i]);
    if (!(v >= o.lo - slack && v <= o.hi + slack)) {
      return "reference element " + std::to_string(i) + " = " + format_value(v) + " lies outside the generator's range [" +
             format_value(o.lo) + ", " + format_value(o.hi) + "]";
    }
  }
  return "";
}

// ---- the random modules ----

// ctest runs every test in its own process, so each test compiles only what it
// checks: a module test compiles its module (~1-2 s); the coverage tests only
// run the HLO passes and the kernel emitter, which need no C++ compiler.

// The kernel ISAs this CPU runs (backend/cpu/kernel_isa.h): both paths are
// compared with the interpreter where the CPU has AVX-512.
std::unique_ptr<Executable> compile_cpu(hlo::HloModule module, const std::string& isa, std::string& error) {
  try {
    return cpu_compiler_for(isa)->compile(std::move(module));
  } catch (const std::exception& e) {
    error = e.what();
    return nullptr;
  }
}

// What the CPU backend compiles: the module after its pass pipeline.
hlo::HloModule optimized(hlo::HloModule module) {
  hlo::run_passes(module, backend::cpu::cpu_pass_pipeline());
  return module;
}

// The failing graph alone: its module text, and what the CPU backend made of it.
std::string describe_graph(uint64_t seed, int graph) {
  RandomHloCase alone = testing::make_random_hlo_case(seed, options_for(graph));
  std::ostringstream os;
  os << "  reproduce: testing::make_random_hlo_case(0x" << std::hex << seed << std::dec << ", {.graphs = " << kGraphsPerModule
     << ", .only_graph = " << graph << "})\n  HLO of graph " << graph << " alone (other graphs' parameters stay):\n"
     << alone.module.to_string();
  try {
    os << "  after the CPU backend's passes:\n" << optimized(alone.module).to_string();
  } catch (const std::exception& e) {
    os << "  the CPU backend's passes fail on it alone: " << e.what() << "\n";
  }
  return os.str();
}

class DifferentialRandomHlo : public ::testing::TestWithParam<int> {};
// (module, kernel ISA): every module on every kernel ISA this CPU runs.
class DifferentialRandomHloOnIsa : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(DifferentialRandomHloOnIsa, CpuBackendMatchesInterpreter) {
  const auto& [module_index, isa] = GetParam();
  const uint64_t seed = seed_of(module_index);
  ASSERT_TRUE(backend::cpu::find_cxx_compiler(backend::CompilerOptions::from_environment().cxx)) << "no C++ compiler: the CPU backend would only interpret";
  const RandomHloCase c = testing::make_random_hlo_case(seed, options_for());
  std::string error;
  const auto t0 = std::chrono::steady_clock::now();
  auto cpu = compile_cpu(c.module, isa, error);
  const double compile_seconds = seconds_since(t0);
  ASSERT_TRUE(cpu) << "seed 0x" << std::hex << seed << std::dec << ": the CPU backend fails to compile: " << error << "\n"
                   << c.module.to_string();
  std::vector<Buffer> want = backend::make_compiler("interpreter")->compile(c.module)->execute(c.arguments);
  std::vector<Buffer> got;
  try {
    got = cpu->execute(c.arguments);
  } catch (const std::exception& e) {
    FAIL() << "seed 0x" << std::hex << seed << std::dec << ": the CPU backend fails to run: " << e.what() << "\n" << c.module.to_string();
  }
  ASSERT_EQ(want.size(), c.outputs.size());
  ASSERT_EQ(got.size(), want.size());
  // Every argument donated (fresh copies): kernels write over the inputs they
  // read last, and the outputs must be exactly those of the run without donation.
  std::vector<Buffer> copies;
  for (const Buffer& a : c.arguments) {
    Buffer copy(a.shape(), a.dtype());
    std::memcpy(copy.raw(), a.raw(), static_cast<size_t>(a.nbytes()));
    copies.push_back(copy);
  }
  std::vector<Buffer> got_donated = cpu->execute(copies, std::vector<bool>(copies.size(), true));
  ASSERT_EQ(got_donated.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got_donated[i].nbytes(), got[i].nbytes());
    EXPECT_EQ(std::memcmp(got_donated[i].raw(), got[i].raw(), static_cast<size_t>(got[i].nbytes())), 0)
        << "seed 0x" << std::hex << seed << std::dec << ": output " << i << " differs when the arguments are donated";
  }
  std::map<int, std::string> failures;  // graph -> what differs
  for (size_t i = 0; i < want.size(); ++i) {
    const RandomOutput& o = c.outputs[i];
    std::string range = out_of_range(want[i], o);
    std::string diff = mismatch(got[i], want[i], o);
    if (!range.empty()) failures[o.graph] += "\n    output " + std::to_string(i) + " (" + o.expression + "): generator self-check: " + range;
    if (!diff.empty()) failures[o.graph] += "\n    output " + std::to_string(i) + " (" + o.expression + "): " + diff;
  }
  int shown = 0;
  for (const auto& [graph, what] : failures) {
    ADD_FAILURE() << "seed 0x" << std::hex << seed << std::dec << ", graph " << graph << ": the CPU backend differs from the interpreter:"
                  << what << "\n"
                  << (shown++ < 2 ? describe_graph(seed, graph) : std::string("  (HLO omitted: see the first failures)\n"));
  }
  std::fprintf(stderr, "[differential] seed 0x%llx, %s kernels: %d graphs, %zu outputs, compiled in %.1f s\n",
               static_cast<unsigned long long>(seed), isa.c_str(), kGraphsPerModule, want.size(), compile_seconds);
}

TEST_P(DifferentialRandomHlo, FusesIntoGeneratedKernels) {
  const RandomHloCase c = testing::make_random_hlo_case(seed_of(GetParam()), options_for());
  const hlo::HloModule m = optimized(c.module);
  const std::string text = m.to_string();
  EXPECT_NE(text.find("fusion("), std::string::npos) << text;
  EXPECT_NE(text.find("kind=kLoop"), std::string::npos) << text;
  int fusions = 0, generated = 0;
  std::string declined;
  for (const auto& in : m.instructions) {
    if (in.opcode != hlo::HloOpcode::kFusion) continue;
    ++fusions;
    if (backend::cpu::emit_fusion_kernel(in, "k")) ++generated;
    else declined += "\n" + in.fused_computation->to_string();
  }
  // The emitter declines (and the backend interprets) the fusions in which a
  // broadcast is not affine over the loop's inner block: a reduction over all
  // of [7,6] reading a broadcast f32[7] along dim 0, or a reshape splitting the
  // broadcast's rows. Those are rare; everything else gets a kernel.
  EXPECT_GE(generated * 10, fusions * 9) << generated << " kernels for " << fusions << " fusions; declined:" << declined;
  EXPECT_GE(fusions, kGraphsPerModule) << text;
}

INSTANTIATE_TEST_SUITE_P(Differential, DifferentialRandomHlo, ::testing::Range(0, kModules));
INSTANTIATE_TEST_SUITE_P(Differential, DifferentialRandomHloOnIsa, ::testing::Combine(::testing::Range(0, kModules), ::testing::ValuesIn(kernel_isas())),
                         [](const ::testing::TestParamInfo<std::tuple<int, std::string>>& info) {
                           return std::get<1>(info.param) + "_" + std::to_string(std::get<0>(info.param));
                         });

// Across all modules: every kind of step was taken, both fusion kinds formed,
// multi-output fusions too, and the loop and input fusions got kernels.
TEST(DifferentialRandomHloCoverage, EveryPatternAndFusionKindOccurs) {
  std::map<std::string, int> steps;
  int loop = 0, input = 0, loop_kernels = 0, input_kernels = 0, parallel = 0, chunked = 0, multi_output = 0, multi_output_kernels = 0;
  for (int i = 0; i < kModules; ++i) {
    const RandomHloCase c = testing::make_random_hlo_case(seed_of(i), options_for());
    for (const auto& [k, n] : c.step_counts) steps[k] += n;
    for (const auto& in : optimized(c.module).instructions) {
      if (in.opcode != hlo::HloOpcode::kFusion) continue;
      const std::optional<std::string> kernel = backend::cpu::emit_fusion_kernel(in, "k");
      if (in.fusion_kind == hlo::FusionKind::kInput) input += 1, input_kernels += kernel.has_value();
      else loop += 1, loop_kernels += kernel.has_value();
      if (hlo::is_multi_output_fusion(in)) multi_output += 1, multi_output_kernels += kernel.has_value();
      if (!kernel) continue;
      // Loops over >= 65536 elements run in parallel; inner ranges over 16384 elements are chunked.
      const size_t p = kernel->find("if (");
      if (p != std::string::npos && std::atoll(kernel->c_str() + p + 4) >= 65536) ++parallel;
      if (kernel->find("c * 16384LL") != std::string::npos) ++chunked;
    }
  }
  std::ostringstream summary;
  for (const auto& [k, n] : steps) summary << " " << k << "=" << n;
  std::fprintf(stderr,
               "[differential] steps:%s\n[differential] fusions: %d kLoop (%d kernels; %d multi-output, %d kernels), %d kInput (%d kernels); "
               "%d parallel, %d chunked\n",
               summary.str().c_str(), loop, loop_kernels, multi_output, multi_output_kernels, input, input_kernels, parallel, chunked);
  for (const char* k : {"exponential", "log", "sqrt", "rsqrt", "tanh", "erf", "negate", "abs", "maximum", "minimum", "power", "compare",
                        "select", "not", "convert-f32-int-f32", "convert-pred-f32", "convert-int-f32", "convert-pred-int", "s64",
                        "broadcast-param", "broadcast-scalar-param", "broadcast-constant", "broadcast-value", "reshape", "iota",
                        "reduce-trailing", "reduce-leading", "reduce-middle", "reduce-all", "reduce-multiply", "reduce-logaddexp", "reduce-broadcast-back",
                        "transpose", "slice", "dot", "dot-transposed", "large-shape", "reuse"}) {
    EXPECT_GT(steps[k], 0) << "no random graph took the step '" << k << "'";
  }
  EXPECT_GE(loop, kModules * kGraphsPerModule);
  EXPECT_GE(input, kModules * 2);
  EXPECT_GE(loop_kernels * 10, loop * 9);
  EXPECT_GE(input_kernels * 10, input * 7);
  EXPECT_GT(parallel, 0) << "no kernel ran a parallel loop";
  EXPECT_GT(chunked, 0) << "no kernel chunked its inner range";
  EXPECT_GT(multi_output_kernels, 0) << "no random module made a multi-output fusion with a kernel";
}

TEST(DifferentialRandomHloCoverage, GeneratorIsReproducible) {
  RandomHloOptions o = options_for();
  o.graphs = 4;
  RandomHloCase a = testing::make_random_hlo_case(77, o);
  RandomHloCase b = testing::make_random_hlo_case(77, o);
  RandomHloCase c = testing::make_random_hlo_case(78, o);
  EXPECT_EQ(a.module.to_string(), b.module.to_string());
  EXPECT_NE(a.module.to_string(), c.module.to_string());
  ASSERT_EQ(a.arguments.size(), b.arguments.size());
  for (size_t i = 0; i < a.arguments.size(); ++i) {
    ASSERT_EQ(a.arguments[i].nbytes(), b.arguments[i].nbytes());
    EXPECT_EQ(std::memcmp(a.arguments[i].raw(), b.arguments[i].raw(), static_cast<size_t>(a.arguments[i].nbytes())), 0) << i;
  }
  // A graph regenerated alone reads the same arguments.
  o.only_graph = 2;
  RandomHloCase alone = testing::make_random_hlo_case(77, o);
  EXPECT_EQ(alone.arguments.size(), a.arguments.size());
  EXPECT_LT(alone.outputs.size(), a.outputs.size());
}

// ---- long float sums ----

// Fused f32 sums of many integers (row and column reductions, ~1e8 in total):
// accumulated in double like the interpreter's, they come out exact on both.
// Donated arguments: an elementwise kernel writes its output over the donated
// input it reads last (no allocation; the moments and parameters of an optimizer
// step update in place), and never over an argument that was not donated.
TEST(CpuInPlace, KernelWritesOverADonatedArgumentOnly) {
  using hlo::HloOpcode;
  hlo::HloBuilder b("update");
  int p = b.parameter({4, 8}, DType::kFloat32);
  int g = b.parameter({4, 8}, DType::kFloat32);
  int lr = b.parameter({}, DType::kFloat32);
  int scaled = b.binary(HloOpcode::kMultiply, g, b.broadcast(lr, {4, 8}, {}));
  hlo::HloModule m = b.build({b.binary(HloOpcode::kSubtract, p, b.unary(HloOpcode::kTanh, scaled))});
  std::string error;
  auto cpu = compile_cpu(m, "", error);
  ASSERT_TRUE(cpu) << error;
  auto args = [] {
    std::vector<Buffer> a = {Buffer({4, 8}, DType::kFloat32), Buffer({4, 8}, DType::kFloat32), Buffer({}, DType::kFloat32)};
    for (int i = 0; i < 32; ++i) {
      a[0].data<float>()[i] = static_cast<float>(i);
      a[1].data<float>()[i] = static_cast<float>(i % 5) - 2.0f;
    }
    a[2].data<float>()[0] = 0.5f;
    return a;
  };
  std::vector<Buffer> kept = args();
  std::vector<Buffer> out = cpu->execute(kept, {false, false, false});
  EXPECT_NE(out[0].raw(), kept[0].raw());
  EXPECT_EQ(kept[0].data<float>()[3], 3.0f);  // not donated: untouched
  std::vector<Buffer> given = args();
  std::vector<Buffer> in_place = cpu->execute(given, {true, false, false});
  EXPECT_EQ(in_place[0].raw(), given[0].raw());
  for (int i = 0; i < 32; ++i) {
    const float want = static_cast<float>(i) - std::tanh((static_cast<float>(i % 5) - 2.0f) * 0.5f);
    EXPECT_NEAR(in_place[0].data<float>()[i], want, 1e-6f) << i;
    EXPECT_EQ(in_place[0].data<float>()[i], out[0].data<float>()[i]) << i;
  }
  // g is read through a broadcast-free path too, but only p was donated.
  EXPECT_EQ(given[1].data<float>()[0], -2.0f);
}

// A scatter-add (the embedding gradient) adds into its operand's storage when
// the caller donated it, and into a copy otherwise; repeated indices add up.
TEST(CpuInPlace, ScatterAddsIntoADonatedOperandOnly) {
  hlo::HloBuilder b("embedding_grad");
  int grad = b.parameter({6, 4}, DType::kFloat32);
  int ids = b.parameter({3}, DType::kInt64);
  int rows = b.parameter({3, 4}, DType::kFloat32);
  hlo::HloModule m = b.build({b.scatter_add(grad, ids, rows)});
  std::string error;
  auto cpu = compile_cpu(m, "", error);
  ASSERT_TRUE(cpu) << error;
  auto args = [] {
    std::vector<Buffer> a = {Buffer({6, 4}, DType::kFloat32), Buffer({3}, DType::kInt64), Buffer({3, 4}, DType::kFloat32)};
    for (int i = 0; i < 24; ++i) a[0].data<float>()[i] = static_cast<float>(i);
    const int64_t ids[] = {4, 1, 4};
    for (int i = 0; i < 3; ++i) a[1].data<int64_t>()[i] = ids[i];
    for (int i = 0; i < 12; ++i) a[2].data<float>()[i] = 0.5f * static_cast<float>(i + 1);
    return a;
  };
  std::vector<Buffer> kept = args();
  std::vector<Buffer> copied = cpu->execute(kept, {false, false, false});
  EXPECT_NE(copied[0].raw(), kept[0].raw());
  EXPECT_EQ(kept[0].data<float>()[16], 16.0f);  // not donated: untouched
  std::vector<Buffer> given = args();
  std::vector<Buffer> in_place = cpu->execute(given, {true, false, false});
  EXPECT_EQ(in_place[0].raw(), given[0].raw());
  for (int i = 0; i < 24; ++i) {
    float want = static_cast<float>(i);
    if (i / 4 == 4) want += 0.5f * static_cast<float>(i % 4 + 1) + 0.5f * static_cast<float>(8 + i % 4 + 1);  // rows 0 and 2
    if (i / 4 == 1) want += 0.5f * static_cast<float>(4 + i % 4 + 1);                                         // row 1
    EXPECT_EQ(in_place[0].data<float>()[i], want) << i;
    EXPECT_EQ(copied[0].data<float>()[i], want) << i;
  }
}

// The CPU backend's persistent compile cache: a graph compiled by one compiler is
// loaded by another (a second process) without compiling, runs the same, and the
// load is timed (PersistentCacheLoadTime); another graph key misses.
TEST(CpuPersistentCache, SecondCompilerLoadsWithoutCompiling) {
  using hlo::HloOpcode;
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("lazytrain_cpu_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  backend::CompilerOptions options;
  options.cache_dir = dir.string();
  hlo::HloBuilder b("cached");
  int x = b.parameter({64, 32}, DType::kFloat32);
  int y = b.parameter({32}, DType::kFloat32);
  hlo::HloModule m = b.build({b.unary(HloOpcode::kTanh, b.binary(HloOpcode::kAdd, x, b.broadcast(y, {64, 32}, {1})))});
  std::vector<Buffer> args = {Buffer({64, 32}, DType::kFloat32), Buffer({32}, DType::kFloat32)};
  for (int64_t i = 0; i < 64 * 32; ++i) args[0].data<float>()[i] = static_cast<float>(i % 7) - 3.0f;
  for (int64_t i = 0; i < 32; ++i) args[1].data<float>()[i] = 0.25f * static_cast<float>(i % 3);
  std::vector<Buffer> want = lazy::ComputationCache(options.cache_dir).compile(*backend::make_compiler("cpu", options), m, 0x00c0ffee00c0ffee)->execute(args);
  const int64_t hits = runtime::counter_value("PersistentCacheHit");
  EXPECT_EQ(lazy::ComputationCache("").load(*backend::make_compiler("cpu", {}), 0x00c0ffee00c0ffee), nullptr);  // no cache_dir: no cache
  auto loaded = lazy::ComputationCache(options.cache_dir).load(*backend::make_compiler("cpu", options), 0x00c0ffee00c0ffee);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(runtime::counter_value("PersistentCacheHit"), hits + 1);
  auto load_time = runtime::metric_data("PersistentCacheLoadTime");
  ASSERT_TRUE(load_time);
  EXPECT_GE(load_time->total_samples, 1);
  std::vector<Buffer> got = loaded->execute(args);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(std::memcmp(got[0].raw(), want[0].raw(), static_cast<size_t>(want[0].nbytes())), 0);
  EXPECT_EQ(lazy::ComputationCache(options.cache_dir).load(*backend::make_compiler("cpu", options), 0x00c0ffee00c0fff0), nullptr);
  fs::remove_all(dir);
}

// kOutput fusions (dot + bias [+ residual]) run as one oneDNN matmul with
// post-ops on the CPU backend; f32 results equal the interpreter's, which adds
// after the dot.
TEST(CpuDotEpilogue, BiasAndResidualPostOpsMatchTheInterpreter) {
  using hlo::HloOpcode;
  hlo::HloBuilder b("epilogue");
  int x = b.parameter({2, 64, 48}, DType::kFloat32);
  int w = b.parameter({40, 48}, DType::kFloat32);
  int bias = b.parameter({40}, DType::kFloat32);
  int residual = b.parameter({2, 64, 40}, DType::kFloat32);
  int product = b.reshape(b.matmul(b.reshape(x, {128, 48}), b.transpose(w, {1, 0})), {2, 64, 40});
  int biased = b.binary(HloOpcode::kAdd, product, b.broadcast(bias, {2, 64, 40}, {2}));
  int q = b.parameter({3, 16, 8}, DType::kFloat32);
  int k = b.parameter({3, 16, 8}, DType::kFloat32);
  int bias2 = b.parameter({16}, DType::kFloat32);
  int scores = b.binary(HloOpcode::kAdd, b.matmul(q, b.transpose(k, {0, 2, 1})), b.broadcast(bias2, {3, 16, 16}, {2}));
  hlo::HloModule m = b.build({b.binary(HloOpcode::kAdd, biased, residual), scores});
  hlo::HloModule fused = optimized(m);
  int kouts = 0;
  for (const auto& in : fused.instructions) kouts += in.opcode == HloOpcode::kFusion && in.fusion_kind == hlo::FusionKind::kOutput;
  EXPECT_EQ(kouts, 2) << fused.to_string();
  std::vector<Buffer> args = hlo::testing::random_arguments(m, 11);
  std::vector<Buffer> want = backend::make_compiler("interpreter")->compile(m)->execute(args);
  std::string error;
  auto cpu = compile_cpu(m, "", error);
  ASSERT_TRUE(cpu) << error;
  std::vector<Buffer> got = cpu->execute(args);
  ASSERT_EQ(got.size(), 2u);
  for (size_t o = 0; o < 2; ++o) {
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      ASSERT_NEAR(got[o].data<float>()[i], want[o].data<float>()[i], 1e-5f * (1.0f + std::abs(want[o].data<float>()[i]))) << o << ":" << i;
    }
  }
}

// The cpu backend's compile of `module`, and how many of its reductions
// (kInput fusions) got a generated kernel.
std::pair<std::unique_ptr<Executable>, int> compile_counting_reduction_kernels(const hlo::HloModule& module) {
  auto cpu = backend::make_compiler("cpu")->compile(module);
  int kernels = 0;
  for (const auto& in : cpu->module().instructions) {
    kernels += in.opcode == hlo::HloOpcode::kFusion && in.fusion_kind == hlo::FusionKind::kInput && backend::cpu::emit_fusion_kernel(in, "k");
  }
  return {std::move(cpu), kernels};
}

// Every output of `got` equal to `want`'s, bit for bit.
void expect_exactly_equal(const std::vector<Buffer>& got, const std::vector<Buffer>& want) {
  ASSERT_EQ(got.size(), want.size());
  RandomOutput exact;
  exact.exact = true;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(mismatch(got[i], want[i], exact), "") << "output " << i;
}

TEST(DifferentialLongSums, FloatSumsAccumulateInDoubleLikeTheInterpreter) {
  using hlo::HloOpcode;
  hlo::HloBuilder b("long_sums");
  // Row: -(0..4099) repeated 14 times, one row of 57400.
  const int row = b.unary(HloOpcode::kNegate, b.reshape(b.iota({14, 4100}, DType::kFloat32, 1), {57400}));
  // Columns: 20000 rows of 1000 + iota, three columns.
  const Shape cs = {20000, 3};
  const int col = b.binary(HloOpcode::kAdd, b.iota(cs, DType::kFloat32, 0), b.full(1000.0, cs, DType::kFloat32));
  hlo::HloModule module = b.build({b.reduce(row, {0}, hlo::ReduceKind::kAdd), b.reduce(col, {0}, hlo::ReduceKind::kAdd)});
  auto [cpu, kernels] = compile_counting_reduction_kernels(module);
  EXPECT_EQ(kernels, 2) << cpu->module().to_string();
  auto want = backend::make_compiler("interpreter")->compile(module)->execute({});
  auto got = cpu->execute({});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(want[0].data<float>()[0], -117641300.0f);
  expect_exactly_equal(got, want);
}

// bf16 reductions (a bias gradient's column sum under autocast) are generated
// kernels too, and reduce as the interpreter does: bf16 values summed in
// double and rounded to bf16 once, bit for bit, over rows and columns; max as well.
TEST(DifferentialLongSums, Bf16ReductionsRoundOnceLikeTheInterpreter) {
  using hlo::HloOpcode;
  hlo::HloBuilder b("bf16_sums");
  const Shape s = {300, 257};
  // (i + j) / 8 - 16, rounded to bf16 by the convert (the same rounding in both backends).
  const int ij = b.binary(HloOpcode::kAdd, b.iota(s, DType::kFloat32, 0), b.iota(s, DType::kFloat32, 1));
  const int f = b.binary(HloOpcode::kSubtract, b.binary(HloOpcode::kMultiply, ij, b.full(0.125, s, DType::kFloat32)), b.full(16.0, s, DType::kFloat32));
  const int v = b.convert(f, DType::kBFloat16);
  auto as_f32 = [&](int x) { return b.convert(x, DType::kFloat32); };  // exact; compared as f32
  hlo::HloModule module = b.build({as_f32(b.reduce(v, {1}, hlo::ReduceKind::kAdd)), as_f32(b.reduce(v, {0}, hlo::ReduceKind::kAdd)),
                                   as_f32(b.reduce(v, {1}, hlo::ReduceKind::kMax))});
  auto [cpu, kernels] = compile_counting_reduction_kernels(module);
  EXPECT_EQ(kernels, 3) << cpu->module().to_string();
  auto want = backend::make_compiler("interpreter")->compile(module)->execute({});
  auto got = cpu->execute({});
  ASSERT_EQ(got.size(), 3u);
  expect_exactly_equal(got, want);
}

// A reduction of a few long rows (a parameter's squared norm for clipping) is
// parallel over chunks fixed by the shape and combined in chunk order: the same
// bits at 1 and 2 threads; max/min keep a NaN found in any chunk; bf16 rounds
// once. The first values are multiples of 1/64 (squares of 1/4096) whose sums
// fit a double exactly in any order: equal to the interpreter's, bit for bit.
TEST(DifferentialLongSums, FewLongRowsReduceInParallelChunksTheSameAtAnyThreadCount) {
  using hlo::HloOpcode;
  hlo::HloBuilder b("long_rows");
  const Shape s = {2, 300000};  // 10 chunks a row
  const int x = b.parameter(s, DType::kFloat32);
  auto squared = [&] { return b.binary(HloOpcode::kMultiply, x, x); };
  const int as_bf16 = b.convert(b.binary(HloOpcode::kAdd, x, b.full(1.0, s, DType::kFloat32)), DType::kBFloat16);
  const int flat = b.reshape(b.binary(HloOpcode::kSubtract, x, b.full(0.5, s, DType::kFloat32)), {600000});
  hlo::HloModule module = b.build({b.reduce(squared(), {1}, hlo::ReduceKind::kAdd),
                                   b.reduce(b.binary(HloOpcode::kAdd, x, b.full(2.0, s, DType::kFloat32)), {1}, hlo::ReduceKind::kMax),
                                   b.reduce(b.unary(HloOpcode::kNegate, x), {1}, hlo::ReduceKind::kMin),
                                   b.convert(b.reduce(as_bf16, {1}, hlo::ReduceKind::kAdd), DType::kFloat32),
                                   b.reduce(flat, {0}, hlo::ReduceKind::kAdd)});
  Buffer arg(s, DType::kFloat32);
  float* p = arg.data<float>();
  for (int64_t i = 0; i < arg.numel(); ++i) p[i] = static_cast<float>((i * 7919 % 2003) - 1000) / 64.0f;
  p[300000 + 250001] = NAN;  // row 1, chunk 7: row 1's max and min are NaN, row 0's are not
  auto [cpu, kernels] = compile_counting_reduction_kernels(module);
  EXPECT_EQ(kernels, 5) << cpu->module().to_string();
  int chunked = 0;  // kernels of the chunked form (their partial results)
  for (const auto& in : cpu->module().instructions) {
    if (in.opcode != hlo::HloOpcode::kFusion || in.fusion_kind != hlo::FusionKind::kInput) continue;
    const std::optional<std::string> source = backend::cpu::emit_fusion_kernel(in, "k");
    chunked += source && source->find("partial[") != std::string::npos;
  }
  EXPECT_EQ(chunked, 5) << cpu->module().to_string();
  auto want = backend::make_compiler("interpreter")->compile(module)->execute({arg});
  EXPECT_TRUE(std::isnan(want[1].data<float>()[1]));
  EXPECT_FALSE(std::isnan(want[1].data<float>()[0]));
  // Inexact values (sums that depend on the order of addition): the same bits
  // at 1, 2 and 3 threads, and within rounding of the interpreter's.
  Buffer inexact(s, DType::kFloat32);
  for (int64_t i = 0; i < inexact.numel(); ++i) inexact.data<float>()[i] = std::sin(0.001f * static_cast<float>(i)) * 3.7f + 0.1f;
  const auto reference = backend::make_compiler("interpreter")->compile(module)->execute({inexact});
  const int threads = omp_get_max_threads();
  std::vector<Buffer> at_one_thread;
  for (int t : {1, 2, 3}) {
    omp_set_num_threads(t);
    expect_exactly_equal(cpu->execute({arg}), want);
    std::vector<Buffer> got = cpu->execute({inexact});
    if (t == 1) at_one_thread = got;
    expect_exactly_equal(got, at_one_thread);
    for (size_t o = 0; o < got.size(); ++o) {
      RandomOutput close;
      close.rtol = 1e-6;
      close.atol = 1e-6;
      EXPECT_EQ(mismatch(got[o], reference[o], close), "") << t << " threads, output " << o;
    }
  }
  omp_set_num_threads(threads);
}

// ---- size-1 dims ----

// Broadcasts whose inner block holds size-1 dims (mapped or not) read their
// operand affinely: the emitter generates a kernel for every fusion here, and
// it computes what the interpreter computes.
TEST(DifferentialSizeOneDims, BroadcastsWithSizeOneDimsGetKernels) {
  using hlo::HloOpcode;
  struct Case {
    Shape operand, shape;
    std::vector<int64_t> dims;
  };
  const std::vector<Case> cases = {
      {{1}, {1, 1}, {1}},                     // every dim of size 1
      {{1}, {4, 1}, {1}},                     // the mapped dim has size 1
      {{1, 4, 1000}, {1, 4, 1, 1000}, {0, 1, 3}},  // an unmapped size-1 dim in the inner block
      {{7, 1, 1}, {7, 1, 1, 1}, {0, 1, 2}},
      {{6}, {6, 1}, {0}},
      {{3, 3}, {3, 1, 1, 3}, {0, 3}},
      {{1}, {1, 9, 1}, {2}},
  };
  hlo::HloBuilder b("size_one_dims");
  std::vector<int> outputs;
  std::vector<Buffer> args;
  auto param = [&](const Shape& s) {
    Buffer buf(s, DType::kFloat32);
    for (int64_t i = 0; i < buf.numel(); ++i) buf.data<float>()[i] = static_cast<float>(i % 13) * 0.5f - 2.0f;
    args.push_back(buf);
    return b.parameter(s, DType::kFloat32);
  };
  for (const Case& c : cases) {
    const int x = b.broadcast(param(c.operand), c.shape, c.dims);
    const int y = param(c.shape);
    outputs.push_back(b.binary(HloOpcode::kMultiply, b.binary(HloOpcode::kAdd, x, y), y));
    // The same as a row reduction over the last dim.
    const int z = b.binary(HloOpcode::kSubtract, b.broadcast(param(c.operand), c.shape, c.dims), param(c.shape));
    outputs.push_back(b.reduce(b.binary(HloOpcode::kMultiply, z, z), {static_cast<int64_t>(c.shape.size()) - 1}, hlo::ReduceKind::kAdd));
  }
  hlo::HloModule module = b.build(outputs);
  auto cpu = backend::make_compiler("cpu")->compile(module);
  int fusions = 0;
  for (const auto& in : cpu->module().instructions) {
    if (in.opcode != hlo::HloOpcode::kFusion) continue;
    ++fusions;
    EXPECT_TRUE(backend::cpu::emit_fusion_kernel(in, "k")) << "no kernel for\n" << in.fused_computation->to_string();
  }
  EXPECT_GE(fusions, static_cast<int>(cases.size()));
  auto want = backend::make_compiler("interpreter")->compile(module)->execute(args);
  auto got = cpu->execute(args);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    RandomOutput o;
    o.rtol = 1e-5;
    o.atol = 1e-5;
    EXPECT_EQ(mismatch(got[i], want[i], o), "") << "output " << i << " of\n" << module.to_string();
  }
}

// ---- special values ----

// NaN and infinities through fused elementwise ops and fused reductions (row
// and column, max/min/add/logaddexp): the CPU backend propagates them as the
// interpreter does.
TEST(DifferentialSpecialValues, NanAndInfinityPropagateLikeTheInterpreter) {
  using hlo::HloOpcode;
  using hlo::ReduceKind;
  for (const Shape& s : {Shape{4, 8}, Shape{3, 1000}, Shape{600, 3}}) {
    hlo::HloBuilder b("special_values");
    const int x = b.parameter(s, DType::kFloat32);
    // Each reduce gets its own producer (x + k), so that it fuses (kInput).
    int k = 0;
    auto producer = [&] { return b.binary(HloOpcode::kAdd, x, b.full(0.25 * ++k, s, DType::kFloat32)); };
    std::vector<int> outputs;
    for (ReduceKind kind : {ReduceKind::kMax, ReduceKind::kMin, ReduceKind::kAdd, ReduceKind::kLogAddExp}) {
      outputs.push_back(b.reduce(producer(), {1}, kind));
      outputs.push_back(b.reduce(producer(), {0}, kind));
    }
    const int zero = b.full(0.0, s, DType::kFloat32);
    outputs.push_back(b.binary(HloOpcode::kMaximum, producer(), zero));
    outputs.push_back(b.binary(HloOpcode::kMinimum, zero, producer()));
    outputs.push_back(b.unary(HloOpcode::kTanh, producer()));
    outputs.push_back(b.unary(HloOpcode::kAbs, producer()));
    const int y = producer();
    outputs.push_back(b.select(b.compare(y, y, hlo::ComparisonDirection::kEq), y, zero));  // isnan -> 0
    hlo::HloModule module = b.build(outputs);

    Buffer arg(s, DType::kFloat32);
    float* p = arg.data<float>();
    for (int64_t i = 0; i < arg.numel(); ++i) p[i] = static_cast<float>((i * 37 % 101) - 50) / 16.0f;
    const float specials[] = {NAN, INFINITY, -INFINITY};
    for (int64_t i = 0; i < arg.numel(); i += 7) p[i] = specials[(i / 7) % 3];
    p[0] = NAN;  // the first element of row 0 and column 0

    auto want = backend::make_compiler("interpreter")->compile(module)->execute({arg});
    for (const std::string& isa : kernel_isas()) {
      auto got = cpu_compiler_for(isa)->compile(module)->execute({arg});
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        RandomOutput o;
        o.rtol = 1e-5;
        o.atol = 1e-5 * static_cast<double>(numel(s)) * 4;
        o.exact = want[i].dtype() != DType::kFloat32;
        EXPECT_EQ(mismatch(got[i], want[i], o), "") << isa << " kernels, output " << i << " of\n" << module.to_string();
      }
    }
  }
}

// ---- the golden op cases and BERT on the CPU backend ----

// Sets the CPU backend for the scope, then restores the backend that was set.
class CpuBackendScope {
 public:
  CpuBackendScope() : was_cpu_(lazy::compiler().name() == "cpu") {
    lazy::set_compiler(backend::make_compiler("cpu"));
  }
  ~CpuBackendScope() {
    lazy::set_compiler(was_cpu_ ? backend::make_compiler("cpu") : backend::make_compiler("interpreter"));
  }
  CpuBackendScope(const CpuBackendScope&) = delete;
  CpuBackendScope& operator=(const CpuBackendScope&) = delete;

 private:
  bool was_cpu_;
};

// Golden cases run in batches: one graph, so one compile, per batch.
constexpr size_t kGoldenBatch = 32;

std::vector<std::string> golden_batch(size_t batch) {
  const std::vector<std::string> names = testing::golden_case_names();
  const size_t begin = std::min(names.size(), batch * kGoldenBatch), end = std::min(names.size(), begin + kGoldenBatch);
  return std::vector<std::string>(names.begin() + static_cast<std::ptrdiff_t>(begin), names.begin() + static_cast<std::ptrdiff_t>(end));
}

std::vector<size_t> golden_batches() {
  std::vector<size_t> batches;
  for (size_t b = 0; b * kGoldenBatch < testing::golden_case_names().size(); ++b) batches.push_back(b);
  return batches;
}

struct GoldenResult {
  std::string error;
  Tensor out;
  std::vector<Tensor> inputs;
  std::vector<lazy::LazyTensor*> pending() const {
    std::vector<lazy::LazyTensor*> p;
    if (out.defined()) p.push_back(out.impl().get());
    for (const Tensor& t : inputs) {
      if (t.grad().defined()) p.push_back(t.grad().impl().get());
    }
    return p;
  }
};

// Runs case `name` as ops_golden_test.cpp does, without syncing: its output,
// and (for backward cases) sum(out * r).backward() into its inputs' grads.
GoldenResult run_golden_case(const std::string& name) {
  GoldenResult r;
  const nlohmann::json& c = testing::golden_case(name);
  const std::string op = c["op"].get<std::string>();
  const nlohmann::json& attrs = c["attrs"];
  auto it = testing::golden_op_table().find(op);
  if (it == testing::golden_op_table().end()) {
    r.error = "op '" + op + "' has no entry in tests/support/golden_ops.cpp (copy it from tests/tensor/ops_golden_test.cpp)";
    return r;
  }
  for (size_t i = 0; i < c["inputs"].size(); ++i) {
    Tensor t = testing::golden_tensor(name + ".in" + std::to_string(i));
    if (c["inputs"][i]["grad"].get<bool>()) t.requires_grad_();
    r.inputs.push_back(t);
  }
  testing::GoldenArgs args;
  if (attrs.contains("args")) {
    for (const auto& k : attrs["args"]) args.push_back(r.inputs.at(k.get<size_t>()));
  } else {
    args = r.inputs;
  }
  r.out = it->second.fn(args, attrs);
  if (c["backward"].get<bool>()) {
    if (!r.out.requires_grad()) {
      r.error = "the output does not require grad";
      return r;
    }
    sum(mul(r.out, testing::golden_tensor(name + ".r"))).backward();
  }
  return r;
}

class DifferentialOpsGolden : public ::testing::TestWithParam<size_t> {};

// Every case of the batch, forward and backward, computed in one graph on the
// CPU backend and compared with PyTorch's values as ops_golden_test.cpp does.
TEST_P(DifferentialOpsGolden, CpuBackendMatchesPyTorch) {
  ASSERT_EQ(testing::golden_ops_data().error, "");
  const std::vector<std::string> names = golden_batch(GetParam());
  ASSERT_FALSE(names.empty());
  std::map<std::string, GoldenResult> results;
  {
    CpuBackendScope cpu;
    std::vector<lazy::LazyTensor*> pending;
    for (const std::string& name : names) {
      GoldenResult& r = results[name];
      try {
        r = run_golden_case(name);
      } catch (const std::exception& e) {
        r.error = std::string("building the case throws: ") + e.what();
      }
      if (r.error.empty()) {
        for (auto* t : r.pending()) pending.push_back(t);
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    try {
      lazy::sync(pending);
    } catch (const std::exception&) {
      // Find the culprits: each case alone.
      for (const std::string& name : names) {
        GoldenResult& r = results[name];
        if (!r.error.empty()) continue;
        try {
          lazy::sync(r.pending());
        } catch (const std::exception& e) {
          r.error = std::string("the CPU backend throws: ") + e.what();
        }
      }
    }
    std::fprintf(stderr, "[differential] golden cases %s..%s on the cpu backend: %.1f s\n", names.front().c_str(), names.back().c_str(),
                 seconds_since(t0));
  }
  for (const std::string& name : names) {
    SCOPED_TRACE("golden case " + name);
    const GoldenResult& r = results.at(name);
    if (!r.error.empty()) {
      ADD_FAILURE() << name << ": " << r.error;
      continue;
    }
    const nlohmann::json& c = testing::golden_case(name);
    testing::expect_matches_golden(name + " forward (cpu backend)", r.out, testing::golden_record(name + ".out"));
    if (!c["backward"].get<bool>()) continue;
    for (size_t i = 0; i < r.inputs.size(); ++i) {
      const std::string what = name + " grad of input " + std::to_string(i) + " (cpu backend)";
      if (c["inputs"][i]["grad"].get<bool>()) {
        if (!r.inputs[i].grad().defined()) {
          ADD_FAILURE() << what << ": no gradient";
          continue;
        }
        testing::expect_matches_golden(what, r.inputs[i].grad(), testing::golden_record(name + ".grad" + std::to_string(i)));
      } else {
        EXPECT_FALSE(r.inputs[i].grad().defined()) << what << ": got a gradient for an input that does not require one";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Differential, DifferentialOpsGolden, ::testing::ValuesIn(golden_batches()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return "from_" + golden_batch(info.param).front(); });

// Under bf16 autocast the graph carries bf16 activations through fused kernels:
// the CPU backend must compute what the interpreter computes (each bf16 value
// rounded the same way), for the logits, the loss and every gradient.
TEST(DifferentialBertBf16, CpuBackendMatchesInterpreterUnderAutocast) {
  testing::GoldenFile golden("bert_tiny_mlm_bf16.safetensors");
  models::BertConfig config = models::BertConfig::from_json(nlohmann::json::parse(golden.metadata().at("config")), "golden config");
  auto run = [&] {
    models::BertForMaskedLM model(config);
    for (const auto& [name, p] : model.named_parameters()) p.set_data(golden.tensor(name));
    models::MaskedLMOutput out;
    {
      AutocastGuard autocast(true);
      out = model.forward(golden.tensor("input_ids"), golden.tensor("attention_mask"), golden.tensor("labels"));
    }
    out.loss.backward();
    std::vector<lazy::LazyTensor*> pending = {out.logits.impl().get(), out.loss.impl().get()};
    for (const auto& [name, p] : model.named_parameters()) pending.push_back(p.grad().impl().get());
    lazy::sync(pending);
    std::vector<std::vector<float>> values = {to_dtype(out.logits, DType::kFloat32).to_vector<float>(), out.loss.to_vector<float>()};
    for (const auto& [name, p] : model.named_parameters()) values.push_back(p.grad().to_vector<float>());
    return values;
  };
  std::vector<std::vector<float>> want = run();
  std::vector<std::vector<float>> got;
  {
    CpuBackendScope cpu;
    got = run();
    EXPECT_NE(lazy::last_compiled_hlo().find("bf16"), std::string::npos);
  }
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(got[k].size(), want[k].size());
    double diff = 0, norm = 0;
    for (size_t i = 0; i < want[k].size(); ++i) {
      diff += (got[k][i] - want[k][i]) * static_cast<double>(got[k][i] - want[k][i]);
      norm += want[k][i] * static_cast<double>(want[k][i]);
    }
    // Transcendentals may differ by a float ulp between the backends, which can
    // flip a bf16 rounding now and then; everything else rounds identically.
    EXPECT_LE(std::sqrt(diff), 2e-3 * std::sqrt(norm) + 1e-7) << "output " << k << " (0: logits, 1: loss, then gradients)";
  }
}

TEST(DifferentialBertGolden, CpuBackendMatchesPyTorch) {
  testing::GoldenFile golden("bert_tiny_mlm.safetensors");
  models::BertConfig config = models::BertConfig::from_json(nlohmann::json::parse(golden.metadata().at("config")), "golden config");
  models::BertForMaskedLM model(config);
  for (const auto& [name, p] : model.named_parameters()) {
    ASSERT_TRUE(golden.has(name)) << name;
    p.set_data(golden.tensor(name));
  }
  CpuBackendScope cpu;
  models::MaskedLMOutput out = model.forward(golden.tensor("input_ids"), golden.tensor("attention_mask"), golden.tensor("labels"));
  out.loss.backward();
  // Logits, loss and every gradient in one graph (one compile).
  std::vector<lazy::LazyTensor*> pending = {out.logits.impl().get(), out.loss.impl().get()};
  for (const auto& [name, p] : model.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    pending.push_back(p.grad().impl().get());
  }
  lazy::sync(pending);
  EXPECT_EQ(lazy::compiler().name(), "cpu");
  EXPECT_NE(lazy::last_compiled_hlo(), "");
  testing::expect_close(out.logits, golden.floats("logits"), 1e-4, 1e-5, "logits");
  testing::expect_close(out.loss, golden.floats("loss"), 1e-5, 0, "loss");
  for (const auto& [name, p] : model.named_parameters()) {
    testing::expect_close(p.grad(), golden.floats("grad." + name), 1e-4, 1e-7, "grad." + name);
  }
}

}  // namespace
}  // namespace lazytrain
