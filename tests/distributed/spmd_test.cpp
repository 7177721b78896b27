// SPMD annotations on tensors (issue 34, distributed/spmd.h): a Mesh gives
// PyTorch/XLA's layouts for a partition spec; mark_sharding cuts data into
// tiles (reading assembles them) or annotates a pending value; one traced
// step runs on every device of the mesh and gives the single-device values.
// The expected layouts are XLA's (device d of a 2x2 mesh sits at (d / 2, d % 2)).
#include "distributed/spmd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.h"
#include "lazy/lazy_api.h"
#include "lazy/sharded_data.h"
#include "distributed/xla_model.h"
#include "runtime/collectives.h"
#include "tensor/compile.h"
#include "tensor/ops.h"
#include "../support/backend_scope.h"

namespace lazytrain::distributed::spmd {
namespace {

// N local devices for the test's lifetime.
class Devices {
 public:
  explicit Devices(int n) { runtime::set_local_replicas(n); }
  ~Devices() {
    lazy::wait_device_ops();
    runtime::set_local_replicas(1);
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  return v;
}

TEST(SpmdMesh, PartitionSpecsGiveXlasLayouts) {
  Devices devices(4);
  const Mesh mesh({0, 1, 2, 3}, {2, 2}, {"data", "model"});
  EXPECT_EQ(mesh.sharding({{"data"}, {}}).to_string(), "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  EXPECT_EQ(mesh.sharding({{}, {"model"}}).to_string(), "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}");
  EXPECT_EQ(mesh.sharding({{"data"}, {"model"}}).to_string(), "{devices=[2,2]<=[4]}");
  EXPECT_EQ(mesh.sharding({{"model"}, {"data"}}).to_string(), "{devices=[2,2]0,2,1,3}");
  EXPECT_EQ(mesh.sharding({{"data", "model"}, {}}).to_string(), "{devices=[4,1]<=[4]}");
  EXPECT_EQ(mesh.sharding({{"model", "data"}, {}}).to_string(), "{devices=[4,1]0,2,1,3}");
  EXPECT_TRUE(mesh.sharding({{}, {}}).is_replicated());
  // device_ids are read row-major into the mesh.
  EXPECT_EQ(Mesh({3, 2, 1, 0}, {4, 1}).sharding({{"0"}}).to_string(), "{devices=[4]3,2,1,0}");
}

// FSDP's units: one element of a module list (a transformer layer), else the root.
TEST(SpmdFsdp, EachParameterBelongsToItsLayerOrTheRootUnit) {
  EXPECT_EQ(fsdp_unit("bert.encoder.layer.3.attention.self.query.weight"), "fsdp/bert.encoder.layer.3");
  EXPECT_EQ(fsdp_unit("transformer.h.0.mlp.c_fc.weight"), "fsdp/transformer.h.0");
  EXPECT_EQ(fsdp_unit("model.layers.11.self_attn.q_proj.weight"), "fsdp/model.layers.11");
  EXPECT_EQ(fsdp_unit("bert.embeddings.word_embeddings.weight"), "fsdp");
  EXPECT_EQ(fsdp_unit("cls.predictions.bias"), "fsdp");
  EXPECT_EQ(fsdp_unit("0.weight"), "fsdp/0");  // nn.Sequential at the root
  EXPECT_EQ(fsdp_unit("layers.2a.weight"), "fsdp");
}

TEST(SpmdMesh, BadMeshesAndSpecsNameWhatIsWrong) {
  Devices devices(4);
  EXPECT_NE(error_of([] { Mesh({0, 1, 2}, {3}); }).find("device_ids must hold each of the job's 4 devices"), std::string::npos);
  EXPECT_NE(error_of([] { Mesh({0, 1, 2, 3}, {2, 3}); }).find("mesh_shape [2, 3] holds 6 devices, but device_ids has 4"), std::string::npos);
  EXPECT_NE(error_of([] { Mesh({0, 1, 2, 3}, {2, 2}, {"a", "a"}); }).find("axis_names repeat a name"), std::string::npos);
  const Mesh mesh({0, 1, 2, 3}, {2, 2}, {"data", "model"});
  EXPECT_NE(error_of([&] { mesh.sharding({{"batch"}}); }).find("no mesh axis named 'batch' (the axes are data, model)"), std::string::npos);
  EXPECT_NE(error_of([&] { mesh.sharding({{"data"}, {"data"}}); }).find("mesh axis 'data' splits two dimensions"), std::string::npos);
  const Tensor t = zeros({6, 4});
  EXPECT_NE(error_of([&] { mark_sharding(t, mesh, {{"data"}}); }).find("partition_spec has 1 entries for a tensor of 2 dimensions [6, 4]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { mark_sharding(t, Mesh({0, 1, 2, 3}, {4}, {"x"}), {{"x"}, {}}); }).find("dimension 0 of [6, 4] does not divide into 4 tiles"),
            std::string::npos);
}

TEST(SpmdMarkSharding, DataIsCutIntoTilesAndReadWhole) {
  Devices devices(4);
  const Mesh mesh({0, 1, 2, 3}, {2, 2}, {"data", "model"});
  const std::vector<float> values = random_values(8 * 6, 1);
  Tensor t = from_vector(values, {8, 6});
  t.to_vector<float>();  // materialised
  mark_sharding(t, mesh, {{"data"}, {"model"}});
  const auto& data = t.ir_value()->sharded_data();
  ASSERT_TRUE(data);
  EXPECT_EQ(data->tiles().size(), 4u);
  EXPECT_EQ(data->tile(3)->shape(), (Shape{4, 3}));
  EXPECT_EQ(data->tile(3)->get().data<float>()[0], values[4 * 6 + 3]);  // tile (1, 1) starts at row 4, column 3
  EXPECT_EQ(get_sharding(t).to_string(), "{devices=[2,2]<=[4]}");
  EXPECT_EQ(t.to_vector<float>(), values);
  clear_sharding(t);
  EXPECT_FALSE(t.ir_value()->sharded_data());
  EXPECT_EQ(t.to_vector<float>(), values);
}

// param.data = value (a checkpoint's load) keeps the parameter's layout: the
// loaded whole value is cut into the tiles it had, its op_name kept.
TEST(SpmdMarkSharding, AssigningDataKeepsTheTensorsLayout) {
  Devices devices(4);
  const Mesh mesh({0, 1, 2, 3}, {4}, {"fsdp"});
  Tensor p = from_vector(random_values(8 * 2, 2), {8, 2});
  p.to_vector<float>();
  mark_sharding(p, mesh, {{"fsdp"}, {}}, "fsdp/layer.0");
  const std::vector<float> loaded = random_values(8 * 2, 3);
  Tensor whole = from_vector(loaded, {8, 2});
  whole.to_vector<float>();
  p.set_data(whole);
  ASSERT_TRUE(p.ir_value()->sharded_data());
  EXPECT_EQ(p.ir_value()->sharded_data()->sharding().to_string(), "{devices=[4,1]<=[4] metadata={op_name=\"fsdp/layer.0\"}}");
  EXPECT_EQ(p.ir_value()->sharded_data()->tile(1)->get().data<float>()[0], loaded[2 * 2]);  // tile 1 starts at row 2
  EXPECT_EQ(p.to_vector<float>(), loaded);
  // Tiles given to a tensor never laid out are assembled: it stays whole.
  Tensor plain = from_vector(random_values(8 * 2, 5), {8, 2});
  plain.to_vector<float>();
  plain.set_data(p);
  EXPECT_FALSE(plain.ir_value()->sharded_data());
  EXPECT_EQ(plain.to_vector<float>(), loaded);
}

// A tensor laid out over 4 devices, read by a step after the job shrank to 2:
// one error naming the layout and the change, not the partitioner's.
TEST(SpmdMarkSharding, AStepOnFewerDevicesThanAnInputsLayoutSaysWhy) {
  Tensor t;
  {
    Devices four(4);
    t = from_vector(random_values(8, 4), {8});
    t.to_vector<float>();
    mark_sharding(t, Mesh({0, 1, 2, 3}, {4}, {"fsdp"}), {{"fsdp"}});
  }
  Devices two(2);
  const std::string error = error_of([&] { (t * 2.0).to_vector<float>(); });
  EXPECT_NE(error.find("[mark_step] an input of this step, f32[8], is laid out over 4 devices ({devices=[4]<=[4]}), but the job now has 2"),
            std::string::npos)
      << error;
  EXPECT_EQ(t.to_vector<float>().size(), 8u);  // reading the tensor itself assembles its tiles
}

// loss = sum(tanh(x @ w)), its gradient for w, and w after one SGD step.
struct StepResult {
  float loss = 0;
  std::vector<float> grad, updated;
};

StepResult mlp_step(const std::vector<float>& x_values, const std::vector<float>& w_values, const Mesh* mesh, const PartitionSpec& x_spec,
                    const PartitionSpec& w_spec) {
  Tensor x = from_vector(x_values, {8, 16});
  Tensor w = from_vector(w_values, {16, 4});
  x.to_vector<float>();
  w.to_vector<float>();
  if (mesh) {
    mark_sharding(x, *mesh, x_spec);
    mark_sharding(w, *mesh, w_spec);
  }
  w.requires_grad_();
  Tensor loss = sum(tanh(matmul(x, w)));
  loss.backward();
  Tensor updated = w.detach() - w.grad() * 0.5;
  lazy::mark_step();
  return {static_cast<float>(loss.item()), w.grad().to_vector<float>(), updated.to_vector<float>()};
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, double tolerance) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tolerance * (1 + std::abs(b[i]))) << i;
}

TEST(SpmdMarkSharding, AShardedStepGivesTheSingleDeviceValues) {
  const std::vector<float> x = random_values(8 * 16, 2), w = random_values(16 * 4, 3);
  const StepResult expected = mlp_step(x, w, nullptr, {}, {});
  Devices devices(4);
  const Mesh mesh({0, 1, 2, 3}, {2, 2}, {"data", "model"});
  for (const auto& [x_spec, w_spec] : std::vector<std::pair<PartitionSpec, PartitionSpec>>{
           {{{"data"}, {}}, {{}, {}}},                    // data parallel over one axis
           {{{"data", "model"}, {}}, {{"data", "model"}, {}}},  // FSDP over all four
           {{{"data"}, {}}, {{}, {"model"}}}}) {          // 2-D: batch by data, w's columns by model
    SCOPED_TRACE(get_sharding(mark_sharding(zeros({16, 4}), mesh, w_spec)).to_string());
    const StepResult got = mlp_step(x, w, &mesh, x_spec, w_spec);
    EXPECT_NEAR(got.loss, expected.loss, 1e-5 * (1 + std::abs(expected.loss)));
    expect_near(got.grad, expected.grad, 1e-5);
    expect_near(got.updated, expected.updated, 1e-5);
  }
}

TEST(SpmdMarkSharding, APendingValueIsAnnotatedInTheGraph) {
  Devices devices(2);
  const Mesh mesh({0, 1}, {2}, {"data"});
  const std::vector<float> values = random_values(4 * 6, 4);
  Tensor x = from_vector(values, {4, 6});
  Tensor y = mark_sharding(exp(x), mesh, {{}, {"data"}});
  EXPECT_EQ(y.ir_value()->op(), "xla::custom_sharding");
  EXPECT_EQ(get_sharding(y).to_string(), "{devices=[1,2]<=[2]}");
  Tensor z = neg(y);
  lazy::mark_step();
  // The result is laid out as the annotation says, and reads whole.
  ASSERT_TRUE(z.ir_value()->sharded_data());
  EXPECT_EQ(z.ir_value()->sharded_data()->sharding().to_string(), "{devices=[1,2]<=[2]}");
  const std::vector<float> got = z.to_vector<float>();
  for (size_t i = 0; i < values.size(); ++i) EXPECT_FLOAT_EQ(got[i], -std::exp(values[i]));
  EXPECT_NE(lazy::last_compiled_hlo().find("num_partitions=2"), std::string::npos);
}

TEST(SpmdMode, AProcessIsOneParticipantOfTheReplicaApi) {
  use_spmd(4);
  EXPECT_EQ(distributed::world_size(), 1);
  EXPECT_EQ(distributed::ordinal(), 0);
  EXPECT_EQ(runtime::replica_world().world_size(), 4);  // the devices
  EXPECT_EQ(distributed::mesh_reduce("alone", 2.5, [](const std::vector<double>& v) { return v.size() * v[0]; }), 2.5);
  distributed::rendezvous("alone");
  EXPECT_NE(error_of([] { distributed::all_reduce(distributed::ReduceType::kSum, ones({2})); }).find("inside an SPMD program"), std::string::npos);
  reset_spmd();
  EXPECT_EQ(distributed::world_size(), 1);
  EXPECT_FALSE(runtime::spmd_mode());
}

TEST(SpmdMode, AClearedTensorStaysWholeThroughUpdates) {
  use_spmd(2);
  {
    const Mesh mesh({0, 1}, {2}, {"data"});
    Tensor w = from_vector(random_values(8, 6), {4, 2});
    mark_sharding(w, mesh, {{"data"}, {}});
    clear_sharding(w);
    Tensor x = mark_sharding(from_vector(random_values(8, 7), {4, 2}), mesh, {{"data"}, {}});
    w.impl()->set_ir_value((w + x).ir_value());  // an update from a split value
    lazy::mark_step();
    EXPECT_FALSE(w.ir_value()->sharded_data());
    EXPECT_TRUE(get_sharding(w).is_replicated());
    // A plan that matches no module is a misspelt path.
    nn::Module empty;
    EXPECT_NE(error_of([&] { parallelize_module(empty, mesh, {{"up_proj", ParallelStyle::kColwise}}, "data"); }).find("no module of the model matches"),
              std::string::npos);
  }
  reset_spmd();
}

TEST(SpmdMarkSharding, InputShardingLaysOutEveryTensorOfABatch) {
  Devices devices(4);
  const ShardingSpec spec{Mesh({0, 1, 2, 3}, {4}, {"data"}), {{"data"}, {}}};
  DeviceBatch batch;
  batch.tensors["input_ids"] = from_vector(std::vector<int64_t>(16, 7), {8, 2});
  batch.tensors["positions"] = from_vector(std::vector<int64_t>(8, 3), {8});
  batch = shard_batch(std::move(batch), spec);
  EXPECT_EQ(get_sharding(batch["input_ids"]).to_string(), "{devices=[4,1]<=[4]}");
  EXPECT_EQ(get_sharding(batch["positions"]).to_string(), "{devices=[4]<=[4]}");  // the spec's first entry
  EXPECT_EQ(batch["positions"].to_vector<int64_t>(), std::vector<int64_t>(8, 3));
}

TEST(SpmdMarkSharding, ACompiledFunctionRefusesATensorInTiles) {
  Devices devices(2);
  const Mesh mesh({0, 1}, {2}, {"data"});
  Tensor x = from_vector(random_values(4, 5), {4});
  mark_sharding(x, mesh, {{"data"}});
  CompiledFunction f = compile([](const std::vector<Tensor>& in) { return std::vector<Tensor>{exp(in[0])}; });
  EXPECT_NE(error_of([&] { f({x}); }).find("reads a tensor laid out over a mesh (mark_sharding): a compiled function runs on one device"),
            std::string::npos);
}

}  // namespace
}  // namespace lazytrain::distributed::spmd

namespace lazytrain::distributed::spmd {
namespace {

// A new user's find: FSDP's step of a block evaluated twice, `(f(x) * f(x)).mean()`
// with f = fc2(gelu(fc1(x))), x and both weights split by rows, on the cpu
// backend (multi-output fusion merges the two evaluations' loops). One device's values.
TEST(SpmdMarkSharding, ABlockEvaluatedTwiceUnderFsdpCompilesOnTheCpuBackend) {
  testing::CpuBackendScope cpu;
  const std::vector<float> x_values = random_values(8 * 16, 5), w1_values = random_values(32 * 16, 6), w2_values = random_values(8 * 32, 7);
  auto run = [&](const Mesh* mesh) {
    Tensor x = from_vector(x_values, {8, 16}), w1 = from_vector(w1_values, {32, 16}), w2 = from_vector(w2_values, {8, 32});
    w1.requires_grad_();
    w2.requires_grad_();
    if (mesh) {
      for (Tensor* t : {&x, &w1, &w2}) mark_sharding(*t, *mesh, {{"fsdp"}, {}});
    }
    auto f = [&] { return matmul(gelu(matmul(x, transpose(w1, 0, 1))), transpose(w2, 0, 1)); };
    Tensor loss = mean(mul(f(), f()));
    loss.backward();
    lazy::mark_step();
    return std::make_pair(loss.item(), w1.grad().to_vector<float>());
  };
  const auto expected = run(nullptr);
  Devices devices(4);
  const Mesh mesh({0, 1, 2, 3}, {4}, {"fsdp"});
  const auto got = run(&mesh);
  EXPECT_NEAR(got.first, expected.first, 1e-5 * std::abs(expected.first));
  expect_near(got.second, expected.second, 1e-5);
}

}  // namespace
}  // namespace lazytrain::distributed::spmd
