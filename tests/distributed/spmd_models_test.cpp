// Tiny BERT, GPT-2 and Llama models trained with SPMD annotations on 4
// logical devices (issue 34's equivalence): meshes 4x1 (the batch split, the
// parameters whole or split along their largest dimension: FSDP), 1x4 (the
// parameters split four ways, the batch whole) and 2x2 (the batch by "data",
// the parameters by "model": largest dimension, or Megatron's plan);
// after every step the losses, and at the end every parameter, match one
// device training on the whole batch within 1e-5 relative.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "backend/registry.h"
#include "distributed/spmd.h"
#include "lazy/lazy_api.h"
#include "lazy/sharded_data.h"
#include "models/causal_lm.h"
#include "runtime/collectives.h"
#include "../support/backend_scope.h"
#include "../support/tiny_data_parallel.h"

namespace lazytrain::distributed::spmd {
namespace {

using testing_support::kTinyGlobalBatch;
using testing_support::kTinySeqLen;

struct Layout {
  const Mesh* mesh = nullptr;
  std::string batch_axis;  // splits the batch
  std::string param_axis;  // splits each parameter's largest dimension ("" : parameters whole)
  bool megatron = false;   // instead: Megatron's plan over param_axis (parallelize_module)
  bool vocab_parallel = false;  // with megatron: the embeddings, LM head and loss split by vocabulary
};

struct Trained {
  std::vector<double> losses;
  std::vector<std::vector<float>> parameters;
  int sharded_parameters = 0;  // parameters held in tiles after training
  size_t graphs = 0;            // distinct step graphs of the whole loop
};

// A model of each family, as small as the BERT of the replica tests.
std::shared_ptr<nn::Module> make_model(const std::string& family) {
  if (family == "bert") return models::AutoModelForMaskedLM::from_config(testing_support::tiny_bert_config());
  const std::string overrides =
      family == "gpt2" ? "vocab_size=40,n_embd=16,n_layer=1,n_head=2,n_positions=16,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0"
                       : "vocab_size=40,hidden_size=16,intermediate_size=24,num_hidden_layers=1,num_attention_heads=2,num_key_value_heads=2,"
                         "max_position_embeddings=16";
  return models::AutoModelForCausalLM::from_config(models::AutoModelForCausalLM::config_from_json(nlohmann::json::object(), family, overrides, "test").json);
}

Tensor loss_of(nn::Module& model, const Tensor& ids, const Tensor& attention) {
  if (auto* masked = dynamic_cast<models::MaskedLMModel*>(&model)) return masked->forward(ids, attention, ids).loss;
  return dynamic_cast<models::CausalLMModel&>(model).forward(ids, attention, ids).loss;
}

Trained train(const std::string& family, const Layout& layout, int steps) {
  manual_seed(42);
  std::shared_ptr<nn::Module> model = make_model(family);
  lazy::mark_step();
  if (layout.mesh && layout.megatron) {
    parallelize_module(*model, *layout.mesh, megatron_plan(layout.vocab_parallel), layout.param_axis);
  } else if (layout.mesh && !layout.param_axis.empty()) {
    shard_parameters_fsdp(*model, *layout.mesh, layout.param_axis);
  }
  optim::AdamWOptions adam;
  adam.lr = 1e-2;
  // The key bias's gradient is zero in exact arithmetic (softmax ignores a
  // shift of the scores): what is left is rounding, which differs with the
  // order of the reductions, and AdamW at eps 1e-8 scales it up to lr-sized
  // steps (GPT-2's c_attn.bias then differs by 5e-5). At 1e-6 it stays rounding.
  adam.eps = 1e-6;
  optim::AdamW optimizer({{model->parameters(), 0.01}}, adam);
  Trained out;
  std::set<uint64_t> graphs;
  // AdamW's zero state starts in its parameter's layout, and every value a
  // step computes keeps its tensor's: one step graph, as on one device.
  lazy::record_graphs(runtime::current_device(), &graphs);
  for (int step = 0; step < steps; ++step) {
    Tensor input_ids = from_vector(testing_support::tiny_batch_rows(step, 0, kTinyGlobalBatch), {kTinyGlobalBatch, kTinySeqLen});
    Tensor attention = ones({kTinyGlobalBatch, kTinySeqLen}, DType::kInt64);
    if (layout.mesh) {
      mark_sharding(input_ids, *layout.mesh, {{layout.batch_axis}, {}});
      mark_sharding(attention, *layout.mesh, {{layout.batch_axis}, {}});
    }
    Tensor loss = loss_of(*model, input_ids, attention);
    loss.backward();
    optimizer.step();
    optimizer.zero_grad();
    lazy::mark_step();
    out.losses.push_back(loss.item());
  }
  lazy::record_graphs(runtime::current_device(), nullptr);
  out.graphs = graphs.size();
  for (const Tensor& p : model->parameters()) out.sharded_parameters += p.ir_value()->sharded_data() != nullptr;
  for (const Tensor& p : model->parameters()) out.parameters.push_back(p.to_vector<float>());
  return out;
}

void expect_matches(const Trained& got, const Trained& expected) {
  ASSERT_EQ(got.losses.size(), expected.losses.size());
  for (size_t s = 0; s < got.losses.size(); ++s) EXPECT_NEAR(got.losses[s], expected.losses[s], 1e-5 * std::abs(expected.losses[s])) << "step " << s;
  EXPECT_LE(testing_support::max_parameter_difference(got.parameters, expected.parameters), 1e-5);
  EXPECT_EQ(got.graphs, expected.graphs);  // the layouts add no graph

}

class SpmdModels : public ::testing::TestWithParam<std::string> {
 protected:
  static void TearDownTestSuite() { expected_.clear(); }
  void SetUp() override {
    if (!expected_.count(GetParam())) expected_[GetParam()] = train(GetParam(), {}, kSteps);
    runtime::set_local_replicas(4);
  }
  void TearDown() override {
    lazy::wait_device_ops();
    runtime::set_local_replicas(1);
  }
  const Trained& expected() const { return expected_.at(GetParam()); }
  static constexpr int kSteps = 10;
  static std::map<std::string, Trained> expected_;
};
std::map<std::string, Trained> SpmdModels::expected_;

TEST_P(SpmdModels, DataParallelOverFourDevices) {
  const Mesh mesh({0, 1, 2, 3}, {4}, {"data"});
  const Trained got = train(GetParam(), {&mesh, "data", ""}, kSteps);
  expect_matches(got, expected());
  EXPECT_EQ(got.sharded_parameters, 0);
}

TEST_P(SpmdModels, FullyShardedOverFourDevices) {
  const Mesh mesh({0, 1, 2, 3}, {4}, {"fsdp"});
  const Trained got = train(GetParam(), {&mesh, "fsdp", "fsdp"}, kSteps);
  expect_matches(got, expected());
  EXPECT_EQ(got.sharded_parameters, static_cast<int>(got.parameters.size()));
}

TEST_P(SpmdModels, TwoByTwoMeshBatchByDataParametersByModel) {
  const Mesh mesh({0, 1, 2, 3}, {2, 2}, {"data", "model"});
  const Trained got = train(GetParam(), {&mesh, "data", "model"}, kSteps);
  expect_matches(got, expected());
  EXPECT_GT(got.sharded_parameters, 0);
}

TEST_P(SpmdModels, OneByFourMeshParametersByModel) {
  // The batch whole (the data axis has one device), every parameter split over four.
  const Mesh mesh({0, 1, 2, 3}, {1, 4}, {"data", "model"});
  const Trained got = train(GetParam(), {&mesh, "data", "model"}, kSteps);
  expect_matches(got, expected());
  EXPECT_EQ(got.sharded_parameters, static_cast<int>(got.parameters.size()));
}

TEST_P(SpmdModels, MegatronOnATwoByTwoMesh) {
  const Mesh mesh({0, 1, 2, 3}, {2, 2}, {"data", "model"});
  Layout layout{&mesh, "data", "model"};
  layout.megatron = true;
  const Trained got = train(GetParam(), layout, kSteps);
  expect_matches(got, expected());
  // BERT: query, key, value, intermediate (weight and bias), the two output weights; Llama: 7 weights; GPT-2: c_fc's two, c_proj's weight.
  EXPECT_EQ(got.sharded_parameters, GetParam() == "gpt2" ? 3 : (GetParam() == "bert" ? 10 : 7));
}

TEST_P(SpmdModels, MegatronWithAVocabularyParallelLossOnATwoByTwoMesh) {
  const Mesh mesh({0, 1, 2, 3}, {2, 2}, {"data", "model"});
  Layout layout{&mesh, "data", "model"};
  layout.megatron = true;
  layout.vocab_parallel = true;
  const Trained got = train(GetParam(), layout, kSteps);
  expect_matches(got, expected());
  // Megatron's as above, and the [vocab, hidden] tables (BERT's decoder bias too; Llama's two are untied):
  // marked before the first step, so the loop compiles one step graph (expect_matches).
  EXPECT_EQ(got.sharded_parameters, GetParam() == "gpt2" ? 4 : (GetParam() == "bert" ? 12 : 9));
}

INSTANTIATE_TEST_SUITE_P(Families, SpmdModels, ::testing::Values("bert", "gpt2", "llama"));

// Megatron's layer on 2 devices of one model axis: the step's program has two
// all-reduces in the forward (after attention's output and the MLP's down
// projection) and two in the backward (the inputs' gradients of the
// column-parallel query/key/value and up projections), and no other collective.
TEST(SpmdStructure, MegatronHasTwoAllReducesForwardAndTwoBackwardPerLayer) {
  runtime::set_local_replicas(2);
  {
    const Mesh mesh({0, 1}, {1, 2}, {"data", "model"});
    manual_seed(42);
    auto model = models::AutoModelForMaskedLM::from_config(testing_support::tiny_bert_config());
    lazy::mark_step();
    parallelize_module(*model, mesh, megatron_plan(), "model");
    optim::AdamW optimizer({{model->parameters(), 0.01}}, optim::AdamWOptions{});
    Tensor ids = from_vector(testing_support::tiny_batch_rows(0, 0, kTinyGlobalBatch), {kTinyGlobalBatch, kTinySeqLen});
    model->forward(ids, ones({kTinyGlobalBatch, kTinySeqLen}, DType::kInt64), ids).loss.backward();
    optimizer.step();
    lazy::mark_step();
    lazy::wait_device_ops();
    const std::string hlo = lazy::last_compiled_hlo();
    auto count = [&](const std::string& op) {
      size_t n = 0;
      for (size_t at = hlo.find(op); at != std::string::npos; at = hlo.find(op, at + 1)) ++n;
      return n;
    };
    EXPECT_NE(hlo.find("num_partitions=2"), std::string::npos);
    EXPECT_EQ(count(" all-reduce("), 4u) << hlo;  // tiny BERT has one layer
    EXPECT_EQ(count(" all-gather("), 0u);
    EXPECT_EQ(count(" reduce-scatter("), 0u);
  }
  runtime::set_local_replicas(1);
}

// The unit a collective's operand packs: the op_name of the parameters it
// reads through concatenates, reshapes and transposes ("" when none, "?" when several).
std::string packed_unit(const hlo::HloModule& m, int id) {
  const hlo::HloInstruction& in = m.at(id);
  if (in.opcode == hlo::HloOpcode::kParameter) return in.sharding ? in.sharding->op_name() : "";
  std::set<std::string> units;
  for (int o : in.operands) {
    if (in.opcode == hlo::HloOpcode::kConcatenate || in.opcode == hlo::HloOpcode::kReshape || in.opcode == hlo::HloOpcode::kTranspose) {
      units.insert(packed_unit(m, o));
    }
  }
  return units.size() == 1 ? *units.begin() : (units.empty() ? "" : "?");
}

// FSDP (FSDPv2's layout, every parameter split along its largest dimension)
// of a two-layer BERT on 4 devices: each layer unit is gathered in one
// all-gather for the forward and one for the backward, and its gradients are
// reduce-scattered in one (the collective combiner packs the unit's
// parameters); the root unit (embeddings, heads) likewise, plus a gather for
// the tied decoder; besides, only all-reduces over the batch: the loss's
// sum and the position embeddings' [seq, hidden] gradient.
TEST(SpmdStructure, FsdpGathersEachLayerUnitTwiceAndReduceScattersItOnce) {
  runtime::set_local_replicas(4);
  {
    const Mesh mesh({0, 1, 2, 3}, {4}, {"fsdp"});
    manual_seed(42);
    models::BertConfig config = testing_support::tiny_bert_config();
    config.num_hidden_layers = 2;
    auto model = models::AutoModelForMaskedLM::from_config(config);
    lazy::mark_step();
    shard_parameters_fsdp(*model, mesh);
    optim::AdamW optimizer({{model->parameters(), 0.01}}, optim::AdamWOptions{});
    Tensor ids = from_vector(testing_support::tiny_batch_rows(0, 0, kTinyGlobalBatch), {kTinyGlobalBatch, kTinySeqLen});
    mark_sharding(ids, mesh, {{"fsdp"}, {}});
    Tensor attention = mark_sharding(ones({kTinyGlobalBatch, kTinySeqLen}, DType::kInt64), mesh, {{"fsdp"}, {}});
    model->forward(ids, attention, ids).loss.backward();
    optimizer.step();
    // A fresh cache (same backend), so that it holds this step's program alone.
    lazy::set_compiler(backend::make_compiler(lazy::compiler().name()));
    lazy::mark_step();
    lazy::wait_device_ops();
    const auto executables = lazy::cached_executables();
    ASSERT_EQ(executables.size(), 1u);
    const hlo::HloModule& m = executables[0]->module();
    std::map<std::string, int> gathers, scatters;
    std::vector<std::string> all_reduces;
    for (const hlo::HloInstruction& in : m.instructions) {
      if (in.opcode == hlo::HloOpcode::kAllGather) ++gathers[packed_unit(m, in.operands[0])];
      if (in.opcode == hlo::HloOpcode::kReduceScatter) ++scatters[""];
      if (in.opcode == hlo::HloOpcode::kAllReduce) all_reduces.push_back(shape_str(in.shape));
    }
    const std::string hlo = m.to_string();
    EXPECT_EQ(gathers["fsdp/bert.encoder.layer.0"], 2) << hlo;
    EXPECT_EQ(gathers["fsdp/bert.encoder.layer.1"], 2) << hlo;
    EXPECT_EQ(gathers["fsdp"], 3) << hlo;  // the embeddings and heads; the decoder's forward; their backward
    EXPECT_EQ(gathers.size(), 3u) << hlo;   // every all-gather packs one unit's parameters
    EXPECT_EQ(scatters[""], 3) << hlo;      // one per unit
    EXPECT_EQ(all_reduces, (std::vector<std::string>{"[]", "[8, 16]"})) << hlo;  // the loss's sum, the position gradient
  }
  runtime::set_local_replicas(1);
}

// Megatron's vocabulary-parallel loss on 2 devices of one model axis: the
// logits stay split by vocabulary (each device holds [64 tokens, 40 / 2]); the
// cross-entropy's logsumexp and target logit combine the halves with
// all-reduces of one value a token, and no collective moves logits. (The word
// embeddings' [40, 16] table is gathered for the lookup: at this size it is a
// smaller exchange than all-reducing the looked-up [64, 16] rows.)
TEST(SpmdStructure, AVocabularyParallelLossNeverGathersTheLogits) {
  runtime::set_local_replicas(2);
  {
    const Mesh mesh({0, 1}, {1, 2}, {"data", "model"});
    manual_seed(42);
    auto model = models::AutoModelForMaskedLM::from_config(testing_support::tiny_bert_config());
    lazy::mark_step();
    parallelize_module(*model, mesh, megatron_plan(/*vocab_parallel=*/true), "model");
    Tensor ids = from_vector(testing_support::tiny_batch_rows(0, 0, kTinyGlobalBatch), {kTinyGlobalBatch, kTinySeqLen});
    model->forward(ids, ones({kTinyGlobalBatch, kTinySeqLen}, DType::kInt64), ids).loss.backward();
    lazy::mark_step();
    lazy::wait_device_ops();
    const std::string hlo = lazy::last_compiled_hlo();
    std::istringstream lines(hlo);
    int per_token = 0;
    for (std::string line; std::getline(lines, line);) {
      const bool collective = line.find(" all-reduce(") != std::string::npos || line.find(" all-gather(") != std::string::npos ||
                              line.find(" reduce-scatter(") != std::string::npos;
      if (!collective) continue;
      // The result's shape: "%name = f32[64]{0} all-reduce(...".
      const std::string shape = line.substr(line.find("= ") + 2, line.find('{') - line.find("= ") - 2);
      EXPECT_TRUE(shape.find(",40]") == std::string::npos && shape.find(",20]") == std::string::npos) << line;
      per_token += shape == "f32[64]";
    }
    EXPECT_EQ(per_token, 3) << hlo;  // the logsumexp's maximum and sum, and the target logit
  }
  runtime::set_local_replicas(1);
}

// The CPU backend's collectives run asynchronously (start/done pairs on each
// device's collective thread, overlapping compute: issue 34's item 7). FSDP
// BERT on 4 devices there matches one device, and matches bit for bit the
// same training with every collective run where it stands.
TEST(SpmdOverlap, AsyncCollectivesOnTheCpuBackendChangeNoBit) {
  testing::CpuBackendScope cpu;
  auto use_async = [](bool on) {
    backend::CompilerOptions options = backend::CompilerOptions::from_environment();
    options.async_collectives = on;
    lazy::set_compiler(backend::make_compiler("cpu", options));
  };
  constexpr int kSteps = 3;
  use_async(true);
  const Trained one_device = train("bert", {}, kSteps);
  runtime::set_local_replicas(4);
  const Mesh mesh({0, 1, 2, 3}, {4}, {"fsdp"});
  const Trained overlapped = train("bert", {&mesh, "fsdp", "fsdp"}, kSteps);
  lazy::wait_device_ops();
  // The step's program overlaps: compute runs between some start and its done.
  int overlapping_pairs = 0;
  for (const auto& executable : lazy::cached_executables()) {
    const hlo::HloModule& m = executable->module();
    for (const auto& done : m.instructions) {
      if (!hlo::is_async_collective_done(done.opcode)) continue;
      bool computes = false;
      for (int i = done.operands[0] + 1; i < done.id; ++i) {
        computes = computes || m.at(i).opcode == hlo::HloOpcode::kFusion || m.at(i).opcode == hlo::HloOpcode::kDot;
      }
      overlapping_pairs += computes;
    }
  }
  // Of its 10 collectives (per unit: two all-gathers and one reduce-scatter; three all-reduces of the loss and a
  // position gradient), compute runs while some are in flight.
  EXPECT_GE(overlapping_pairs, 3);
  use_async(false);
  const Trained in_place = train("bert", {&mesh, "fsdp", "fsdp"}, kSteps);
  lazy::wait_device_ops();
  runtime::set_local_replicas(1);
  expect_matches(overlapped, one_device);
  EXPECT_EQ(overlapped.losses, in_place.losses);
  EXPECT_EQ(overlapped.parameters, in_place.parameters);
}

}  // namespace
}  // namespace lazytrain::distributed::spmd
