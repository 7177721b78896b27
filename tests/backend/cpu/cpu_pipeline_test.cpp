// The CPU backend's pipeline: its passes in order, and a realistic module (a small
// BERT-like encoder layer with an MLM loss and its backward pass, traced from
// lazytrain tensor ops and lowered as mark_step would) computing the same loss
// and gradients after the passes, with fewer instructions.
#include "backend/cpu/cpu_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>

#include "backend/registry.h"
#include "hlo/hlo_builder.h"
#include "lazy/graph_lowering.h"
#include "lazy/lazy_api.h"
#include "tensor/tensor.h"

namespace lazytrain::hlo {
namespace {

using runtime::Buffer;

std::vector<Buffer> run(const HloModule& m, const std::vector<Buffer>& args) {
  return backend::make_compiler("interpreter")->compile(m)->execute(args);
}

std::map<HloOpcode, int> opcode_counts(const HloModule& m) {
  std::map<HloOpcode, int> counts;
  for (const HloInstruction& in : m.instructions) ++counts[in.opcode];
  return counts;
}

TEST(PassPipeline, DefaultPipelineRunsSimplifyFoldCseDceInOrder) {
  std::vector<std::unique_ptr<HloPass>> passes = backend::cpu::cpu_pass_pipeline();
  std::vector<std::string> expected = {"algebraic-simplifier", "constant-folding", "cse", "dce"};
  ASSERT_GE(passes.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(passes[i]->name(), expected[i]) << i;
}

// A leaf parameter (device data, as after a checkpoint load) of `shape`: values
// around `center` with normal noise of `scale`, requiring grad.
Tensor weight(const Shape& shape, float scale = 0.2f, float center = 0.0f) {
  std::vector<float> v = host_randn(numel(shape));
  for (float& x : v) x = center + x * scale;
  Tensor t = from_vector(v, shape);
  t.requires_grad_();
  return t;
}

Tensor bias(int64_t n) { return weight({n}, 0.02f); }
Tensor gain(int64_t n) { return weight({n}, 0.02f, 1.0f); }

TEST(PassPipeline, PreservesValuesOfABertLikeTrainingStep) {
  manual_seed(1234);
  const int64_t B = 2, T = 8, H = 16, heads = 2, dh = H / heads, V = 40, F = 32;
  Tensor word = weight({V, H}), position = weight({T, H});
  Tensor ln0_w = gain(H), ln0_b = bias(H);
  Tensor wq = weight({H, H}), bq = bias(H), wk = weight({H, H}), bk = bias(H), wv = weight({H, H}), bv = bias(H);
  Tensor wo = weight({H, H}), bo = bias(H);
  Tensor ln1_w = gain(H), ln1_b = bias(H);
  Tensor w1 = weight({F, H}), b1 = bias(F), w2 = weight({H, F}), b2 = bias(H);
  Tensor ln2_w = gain(H), ln2_b = bias(H);
  Tensor decoder_b = bias(V);
  std::vector<Tensor> params = {word, position, ln0_w, ln0_b, wq, bq, wk, bk, wv, bv, wo, bo,
                                ln1_w, ln1_b, w1, b1, w2, b2, ln2_w, ln2_b, decoder_b};

  std::vector<int64_t> ids(B * T), labels(B * T, -100);
  for (int64_t i = 0; i < B * T; ++i) {
    ids[i] = (i * 7 + 3) % V;
    if (i % 3 == 0) labels[i] = (i * 5 + 1) % V;  // MLM: a third of the positions are scored
  }
  std::vector<float> attend(B * T, 1.0f);
  attend[T - 1] = attend[T - 2] = 0.0f;  // padding at the end of the first sequence
  Tensor input_ids = from_vector(ids, {B, T});
  Tensor target = from_vector(labels, {B * T});
  Tensor attention_mask = from_vector(attend, {B, 1, 1, T});

  Tensor x = embedding(word, input_ids) + position;
  x = layer_norm(x, {H}, ln0_w, ln0_b, 1e-12);
  auto split_heads = [&](const Tensor& t) { return t.view({B, T, heads, dh}).transpose(1, 2); };
  Tensor q = split_heads(linear(x, wq, bq)), k = split_heads(linear(x, wk, bk)), v = split_heads(linear(x, wv, bv));
  Tensor scores = matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(dh));
  scores = masked_fill(scores, eq(attention_mask, 0.0), -1e9);
  Tensor context = matmul(softmax(scores, -1), v).transpose(1, 2).reshape({B, T, H});
  x = layer_norm(x + linear(context, wo, bo), {H}, ln1_w, ln1_b, 1e-12);
  x = layer_norm(x + linear(gelu(linear(x, w1, b1)), w2, b2), {H}, ln2_w, ln2_b, 1e-12);
  Tensor logits = matmul(x, word.t()) + decoder_b;  // tied decoder, as BertForMaskedLM
  Tensor loss = cross_entropy(logits.view({B * T, V}), target);
  loss.backward();

  std::vector<const lazy::Node*> outputs = {loss.ir_value().get()};
  for (const Tensor& p : params) {
    ASSERT_TRUE(p.grad().defined());
    outputs.push_back(p.grad().ir_value().get());
  }
  lazy::GraphSignature signature = lazy::graph_signature(outputs);
  const HloModule lowered = lazy::lower_graph(signature, "bert_step");
  std::vector<Buffer> args;
  for (const lazy::Node* p : signature.parameters) args.push_back(p->data());
  const std::vector<Buffer> expected = run(lowered, args);
  ASSERT_EQ(expected.size(), params.size() + 1);
  EXPECT_GT(expected[0].data<float>()[0], 0.0f);  // a real loss

  // Same arguments, same outputs in the same order, values within float rounding.
  auto expect_same_outputs = [&](const HloModule& m, const std::string& what) {
    EXPECT_EQ(m.num_parameters, static_cast<int>(args.size())) << what;
    std::vector<Buffer> got = run(m, args);
    ASSERT_EQ(got.size(), expected.size()) << what;
    for (size_t k = 0; k < expected.size(); ++k) {
      ASSERT_EQ(got[k].shape(), expected[k].shape()) << what << " output " << k;
      ASSERT_EQ(got[k].dtype(), DType::kFloat32) << what << " output " << k;
      const float* e = expected[k].data<float>();
      const float* a = got[k].data<float>();
      for (int64_t i = 0; i < expected[k].numel(); ++i) {
        ASSERT_TRUE(std::isfinite(e[i])) << "output " << k << " element " << i;
        ASSERT_NEAR(a[i], e[i], 1e-5 * std::abs(e[i]) + 1e-7) << what << " output " << k << " element " << i;
      }
    }
  };

  // The whole default pipeline (fusion included, when present).
  HloModule optimized = lowered;
  std::vector<std::string> changed_by;
  EXPECT_TRUE(run_passes(optimized, backend::cpu::cpu_pass_pipeline(), [&](const std::string& pass, const HloModule&) { changed_by.push_back(pass); }));
  verify(optimized);
  expect_same_outputs(optimized, "default pipeline");
  EXPECT_LT(optimized.instructions.size(), lowered.instructions.size());
  EXPECT_NE(std::find(changed_by.begin(), changed_by.end(), "cse"), changed_by.end());

  // The simplification passes alone (the pipeline up to and including DCE).
  std::vector<std::unique_ptr<HloPass>> all = backend::cpu::cpu_pass_pipeline(), simplification;
  for (auto& pass : all) {
    std::string name = pass->name();
    simplification.push_back(std::move(pass));
    if (name == "dce") break;
  }
  HloModule simplified = lowered;
  run_passes(simplified, simplification);
  expect_same_outputs(simplified, "simplification passes");
  const std::map<HloOpcode, int> before = opcode_counts(lowered), after = opcode_counts(simplified);
  EXPECT_LT(simplified.instructions.size(), lowered.instructions.size());
  // Op-by-op lowering repeats scalar constants, their broadcasts and reshapes; CSE merges them.
  EXPECT_LT(after.at(HloOpcode::kConstant), before.at(HloOpcode::kConstant));
  EXPECT_LT(after.at(HloOpcode::kBroadcast), before.at(HloOpcode::kBroadcast));
  EXPECT_EQ(after.at(HloOpcode::kDot), before.at(HloOpcode::kDot));
  // No chain the simplifier collapses is left.
  for (const HloInstruction& in : simplified.instructions) {
    if (in.operands.size() != 1) continue;
    HloOpcode op = simplified.at(in.operands[0]).opcode;
    if (in.opcode == HloOpcode::kReshape || in.opcode == HloOpcode::kTranspose || in.opcode == HloOpcode::kBroadcast ||
        in.opcode == HloOpcode::kNegate) {
      EXPECT_NE(op, in.opcode) << in.name() << " of " << opcode_name(op);
    }
  }
  std::string summary;
  for (const auto& [op, n] : before) {
    int now = after.count(op) ? after.at(op) : 0;
    if (now != n) summary += opcode_name(op) + " " + std::to_string(n) + "->" + std::to_string(now) + " ";
  }
  std::string passes;
  for (const std::string& p : changed_by) passes += p + " ";
  std::printf("[pipeline] %zu instructions; simplification passes: %zu (%s); default pipeline: %zu (changed by: %s)\n",
              lowered.instructions.size(), simplified.instructions.size(), summary.c_str(),
              optimized.instructions.size(), passes.c_str());
}


// ---- randomly generated modules ----

// A random module rich in what the passes rewrite: splat and non-splat
// constants (0, 1 and others), reshape/transpose/broadcast chains, no-op
// reshapes/transposes/converts/slices, subgraphs over constants only, duplicated
// instructions, rng draws and instructions nobody uses.
HloModule random_module(uint32_t seed) {
  std::mt19937 gen(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(std::uniform_int_distribution<size_t>(0, n - 1)(gen)); };
  HloBuilder b("random_" + std::to_string(seed));
  const std::vector<Shape> shapes = {{2, 3, 4}, {4, 3, 2}, {6, 4}, {24}, {3, 8}};
  std::vector<int> values;  // f32 values of one of `shapes`
  auto constant = [&](const Shape& shape) {
    switch (pick(4)) {
      case 0: return b.full(0.0, shape, DType::kFloat32);
      case 1: return b.full(1.0, shape, DType::kFloat32);
      case 2: return b.full(0.5 * static_cast<double>(pick(7)) - 1.5, shape, DType::kFloat32);
      default: {
        Literal lit(shape, DType::kFloat32);
        for (int64_t i = 0; i < lit.numel(); ++i) lit.data<float>()[i] = 0.125f * static_cast<float>(pick(17)) - 1.0f;
        return b.constant(lit);
      }
    }
  };
  auto raw = [&](HloOpcode op, int x, const Shape& shape, std::vector<int64_t> dims) {
    HloInstruction in;
    in.opcode = op;
    in.shape = shape;
    in.dtype = DType::kFloat32;
    in.dimensions = std::move(dims);
    if (op == HloOpcode::kSlice) {
      in.slice_starts.assign(shape.size(), 0);
      in.slice_limits = shape;
      in.slice_strides.assign(shape.size(), 1);
    }
    return b.copy(in, {x});
  };
  // A value of `shape`, existing or new (a constant, or a reshape of a value of equal numel).
  auto value_of = [&](const Shape& shape) {
    std::vector<int> same;
    for (int v : values) if (b.shape(v) == shape) same.push_back(v);
    if (!same.empty() && pick(3) != 0) return same[pick(same.size())];
    if (pick(2) == 0) return constant(shape);
    return b.reshape(values[pick(values.size())], shape);
  };
  for (int i = 0; i < 2; ++i) values.push_back(b.parameter(shapes[pick(shapes.size())], DType::kFloat32));
  values.push_back(constant(shapes[pick(shapes.size())]));
  int seed_param = b.parameter({}, DType::kInt64);
  int steps = 12 + static_cast<int>(pick(20));
  for (int step = 0; step < steps; ++step) {
    int x = values[pick(values.size())];
    const Shape shape = b.shape(x);
    int y = -1;
    switch (pick(12)) {
      case 0: case 1: {
        const HloOpcode ops[] = {HloOpcode::kAdd, HloOpcode::kSubtract, HloOpcode::kMultiply, HloOpcode::kDivide, HloOpcode::kMaximum};
        int other = value_of(shape);
        y = pick(2) ? b.binary(ops[pick(5)], x, other) : b.binary(ops[pick(5)], other, x);
        break;
      }
      case 2: {
        const HloOpcode ops[] = {HloOpcode::kNegate, HloOpcode::kTanh, HloOpcode::kAbs, HloOpcode::kExp};
        y = b.unary(ops[pick(4)], pick(2) ? x : b.unary(HloOpcode::kNegate, x));
        break;
      }
      case 3: y = b.reshape(x, shapes[pick(shapes.size())]); if (numel(b.shape(x)) != 24) y = x; break;
      case 4: {
        std::vector<int64_t> perm(shape.size());
        for (size_t d = 0; d < perm.size(); ++d) perm[d] = static_cast<int64_t>(d);
        std::shuffle(perm.begin(), perm.end(), gen);
        y = pick(4) == 0 ? raw(HloOpcode::kTranspose, x, shape, [&] { std::vector<int64_t> id(shape.size()); for (size_t d = 0; d < id.size(); ++d) id[d] = static_cast<int64_t>(d); return id; }())
                         : b.transpose(x, perm);
        break;
      }
      case 5: {  // broadcast up a leading dim of 2, then (maybe) reduce it away again
        Shape up = shape;
        up.insert(up.begin(), 2);
        std::vector<int64_t> dims;
        for (size_t d = 0; d < shape.size(); ++d) dims.push_back(static_cast<int64_t>(d + 1));
        y = b.broadcast(x, up, dims);
        if (pick(2)) {
          Shape upper = up;
          upper.insert(upper.begin(), 1);
          std::vector<int64_t> dims2;
          for (size_t d = 0; d < up.size(); ++d) dims2.push_back(static_cast<int64_t>(d + 1));
          y = b.broadcast(y, upper, dims2);
          y = b.reshape(y, up);
        }
        y = b.reduce(y, {0}, pick(2) ? ReduceKind::kAdd : ReduceKind::kMax);
        break;
      }
      case 6: {  // no-ops the builder would skip
        const HloOpcode ops[] = {HloOpcode::kReshape, HloOpcode::kConvert, HloOpcode::kSlice};
        y = raw(ops[pick(3)], x, shape, {});
        break;
      }
      case 7: {  // a partial slice and back by concatenation
        int64_t n = shape[0];
        Shape lim = shape;
        lim[0] = n / 2;
        std::vector<int64_t> zero(shape.size(), 0), one(shape.size(), 1), start(shape.size(), 0);
        start[0] = n / 2;
        y = b.concatenate({b.slice(x, zero, lim, one), b.slice(x, start, shape, one)}, 0);
        break;
      }
      case 8: {  // a duplicate of an existing non-parameter instruction
        int d = values[pick(values.size())];
        const HloInstruction& in = b.at(d);
        if (in.opcode == HloOpcode::kParameter) { y = x; break; }
        HloInstruction copy = in;
        y = b.copy(copy, copy.operands);
        break;
      }
      case 9: y = b.binary(HloOpcode::kAdd, constant(shape), constant(shape)); break;  // constants only
      case 10: {  // random bits, scaled into floats
        int bits = b.rng_bit_generator(seed_param, shape);
        y = b.binary(HloOpcode::kMultiply, b.convert(bits, DType::kFloat32), b.full(1.0 / 4294967296.0, shape, DType::kFloat32));
        break;
      }
      default: {
        int s = b.reduce(x, {static_cast<int64_t>(shape.size() - 1)}, ReduceKind::kAdd);
        Shape kept(shape.begin(), shape.end() - 1);
        std::vector<int64_t> dims;
        for (size_t d = 0; d + 1 < shape.size(); ++d) dims.push_back(static_cast<int64_t>(d));
        y = b.binary(HloOpcode::kSubtract, x, b.broadcast(s, shape, dims));
        break;
      }
    }
    values.push_back(y);
  }
  std::vector<int> outputs = {values.back()};
  for (int k = 0; k < 3; ++k) outputs.push_back(values[pick(values.size())]);
  HloModule m = b.build(outputs);
  // Dead code for DCE (the builder removes it): drop some outputs after the build.
  if (pick(2)) m.instructions.back().operands.resize(1 + pick(3));
  return m;
}

std::vector<Buffer> random_arguments(const HloModule& m, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<Buffer> args;
  for (const HloInstruction& in : m.instructions) {
    if (in.opcode != HloOpcode::kParameter) continue;
    Buffer b(in.shape, in.dtype);
    for (int64_t i = 0; i < b.numel(); ++i) {
      if (in.dtype == DType::kInt64) b.data<int64_t>()[i] = static_cast<int64_t>(gen());
      else b.data<float>()[i] = normal(gen);
    }
    args.push_back(b);
  }
  return args;
}

// Equal values (NaN matches NaN; folding a splat evaluates it on one scalar, so
// allow a few ulps).
void expect_close(const std::vector<Buffer>& expected, const std::vector<Buffer>& got, const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t k = 0; k < expected.size(); ++k) {
    ASSERT_EQ(got[k].shape(), expected[k].shape()) << what;
    ASSERT_EQ(got[k].dtype(), expected[k].dtype()) << what;
    const float* e = expected[k].data<float>();
    const float* a = got[k].data<float>();
    for (int64_t i = 0; i < expected[k].numel(); ++i) {
      if (e[i] == a[i] || (std::isnan(e[i]) && std::isnan(a[i]))) continue;
      ASSERT_NEAR(a[i], e[i], 1e-6 * std::abs(e[i])) << what << " output " << k << " element " << i;
    }
  }
}

TEST(PassPipeline, RandomModulesKeepTheirValuesThroughEachPass) {
  std::vector<std::unique_ptr<HloPass>> all = backend::cpu::cpu_pass_pipeline(), passes;
  for (auto& pass : all) {
    std::string name = pass->name();
    passes.push_back(std::move(pass));
    if (name == "dce") break;
  }
  ASSERT_EQ(passes.size(), 4u);
  size_t before_total = 0, after_total = 0;
  std::map<std::string, int> modules_changed;
  for (uint32_t seed = 0; seed < 150; ++seed) {
    const HloModule module = random_module(seed);
    std::vector<Buffer> args = random_arguments(module, seed);
    std::vector<Buffer> expected = run(module, args);
    // Each pass alone (twice), then all four in order.
    for (const auto& pass : passes) {
      HloModule m = module;
      modules_changed[pass->name()] += pass->run(m);
      verify(m);
      expect_close(expected, run(m, args), pass->name() + " on seed " + std::to_string(seed) + "\n" + module.to_string());
      if (::testing::Test::HasFatalFailure()) return;
      // One run does all a pass can: a second finds nothing.
      EXPECT_FALSE(pass->run(m)) << pass->name() << " on seed " << seed << "\n" << module.to_string();
    }
    HloModule m = module;
    run_passes(m, passes);
    expect_close(expected, run(m, args), "all passes on seed " + std::to_string(seed) + "\n" + module.to_string());
    if (::testing::Test::HasFatalFailure()) return;
    before_total += module.instructions.size();
    after_total += m.instructions.size();
  }
  EXPECT_LT(after_total, before_total * 9 / 10);
  // The generator gives every pass work to do.
  for (const auto& pass : passes) EXPECT_GE(modules_changed[pass->name()], 20) << pass->name();
  std::printf("[random modules] %zu → %zu instructions over 150 modules; modules changed:", before_total, after_total);
  for (const auto& [name, n] : modules_changed) std::printf(" %s %d", name.c_str(), n);
  std::printf("\n");
}

}  // namespace
}  // namespace lazytrain::hlo
