// SpmdPartitioner (issue 34): every test runs the whole module on random
// arguments (the reference) and the partitioned one on 2 or 4 replica
// devices of this process; each device must return its tile of the whole
// outputs. The structure checks count the collectives GSPMD's layouts ask for:
// data parallelism reduces only what sums the batch, Megatron's MLP one
// all-reduce, FSDP one all-gather of the weight and one reduce-scatter of its
// gradient. Device d of a 2x2 mesh (data, model) sits at (d / 2, d % 2).
#include "hlo/passes/spmd_partitioner.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "hlo/custom_call.h"
#include "hlo/hlo_builder.h"
#include "../../support/spmd_test_util.h"

namespace lazytrain::hlo {
namespace {

using testing::count_opcode;
using testing::expect_partitioned_matches;

HloSharding S(const std::string& text) { return HloSharding::parse(text); }

const std::string kByData = "{devices=[2,1,2]<=[4] last_tile_dim_replicate}";
const std::string kColumnsByModel = "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}";
const std::string kRowsByModel = "{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}";

int collectives(const HloModule& m) {
  return count_opcode(m, HloOpcode::kAllReduce) + count_opcode(m, HloOpcode::kAllGather) + count_opcode(m, HloOpcode::kReduceScatter);
}

TEST(SpmdPartitioner, LeavesAModuleWithoutTilesAlone) {
  HloBuilder b("plain");
  int x = b.parameter({4}, DType::kFloat32);
  HloModule m = b.build({b.unary(HloOpcode::kExp, x)});
  EXPECT_FALSE(SpmdPartitioner().run(m));
  m.instructions[0].sharding = HloSharding::replicate();
  EXPECT_TRUE(ShardingPropagation().run(m));
  EXPECT_FALSE(SpmdPartitioner().run(m));  // replicated everywhere: nothing to cut
  EXPECT_EQ(m.num_partitions, 1);
}

TEST(SpmdPartitioner, DataParallelLayerReducesOnlyTheBatchSums) {
  HloBuilder b("data_parallel");
  int x = b.parameter({8, 16}, DType::kFloat32);
  int w = b.parameter({16, 32}, DType::kFloat32);
  b.set_sharding(x, S("{devices=[2,1]<=[2]}"));
  int h = b.dot(x, w, {{}, {}, {1}, {0}});
  int relu = b.binary(HloOpcode::kMaximum, h, b.full(0.0, {8, 32}, DType::kFloat32));
  int column_sums = b.reduce(relu, {0}, ReduceKind::kAdd);
  int loss = b.reduce(relu, {0, 1}, ReduceKind::kAdd);
  int largest = b.reduce(relu, {0, 1}, ReduceKind::kMax);
  HloModule local = expect_partitioned_matches(b.build({relu, column_sums, loss, largest}), 2);
  EXPECT_EQ(count_opcode(local, HloOpcode::kAllReduce), 3);  // the three reductions over the batch
  EXPECT_EQ(collectives(local), 3);
  // Local shapes: the batch halved.
  EXPECT_NE(local.to_string().find("f32[4,32]{1,0} dot("), std::string::npos) << local.to_string();
  EXPECT_NE(local.to_string().find("HloModule data_parallel, num_partitions=2"), std::string::npos);
  // The parameters keep their global layout; the outputs say theirs.
  EXPECT_EQ(local.at(0).sharding->to_string(), "{devices=[2,1]<=[2]}");
  EXPECT_EQ(local.at(local.root).sharding->to_string(), "{{devices=[2,1]<=[2]}, {replicated}, {replicated}, {replicated}}");
}

TEST(SpmdPartitioner, MegatronMlpNeedsOneAllReduce) {
  HloBuilder b("megatron_mlp");
  int x = b.parameter({8, 16}, DType::kFloat32);
  int up = b.parameter({16, 32}, DType::kFloat32);
  int down = b.parameter({32, 16}, DType::kFloat32);
  b.set_sharding(x, S(kByData));
  b.set_sharding(up, S(kColumnsByModel));
  b.set_sharding(down, S(kRowsByModel));
  int g = b.unary(HloOpcode::kTanh, b.dot(x, up, {{}, {}, {1}, {0}}));
  HloModule local = expect_partitioned_matches(b.build({b.dot(g, down, {{}, {}, {1}, {0}})}), 4);
  EXPECT_EQ(count_opcode(local, HloOpcode::kAllReduce), 1);
  EXPECT_EQ(collectives(local), 1);
  // Over the model axis: the devices of one data row.
  for (const HloInstruction& in : local.instructions) {
    if (in.opcode == HloOpcode::kAllReduce) {
      EXPECT_EQ(in.replica_groups, (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
    }
  }
  // Each device: a quarter of the batch and of the hidden features.
  EXPECT_NE(local.to_string().find("f32[4,16]{1,0} dot(f32[4,16]{1,0} %tanh"), std::string::npos) << local.to_string();
}

TEST(SpmdPartitioner, FsdpGathersTheWeightAndReduceScattersItsGradient) {
  HloBuilder b("fsdp_update");
  int x = b.parameter({16, 8}, DType::kFloat32);
  int w = b.parameter({8, 4}, DType::kFloat32);
  int dy = b.parameter({16, 4}, DType::kFloat32);
  for (int p : {x, w, dy}) b.set_sharding(p, S("{devices=[4,1]<=[4]}"));
  int y = b.dot(x, w, {{}, {}, {1}, {0}});
  int dw = b.dot(x, dy, {{}, {}, {0}, {0}});
  int updated = b.binary(HloOpcode::kSubtract, w, b.binary(HloOpcode::kMultiply, dw, b.full(0.1, {8, 4}, DType::kFloat32)));
  HloModule local = expect_partitioned_matches(b.build({y, updated}), 4);
  EXPECT_EQ(count_opcode(local, HloOpcode::kAllGather), 1);
  EXPECT_EQ(count_opcode(local, HloOpcode::kReduceScatter), 1);
  EXPECT_EQ(collectives(local), 2);
  EXPECT_NE(local.to_string().find("f32[2,4]{1,0} reduce-scatter(f32[8,4]{1,0}"), std::string::npos) << local.to_string();
}

TEST(SpmdPartitioner, ReshardingGathersThenSlicesAtThePartitionsOffset) {
  HloBuilder b("reshard");
  int x = b.parameter({4, 6}, DType::kFloat32);
  b.set_sharding(x, S("{devices=[2,1]<=[2]}"));
  int mark = b.custom_call({b.unary(HloOpcode::kExp, x)}, kShardingTarget, "");
  b.set_sharding(mark, S("{devices=[1,2]<=[2]}"));
  HloModule local = expect_partitioned_matches(b.build({b.unary(HloOpcode::kNegate, mark)}), 2);
  EXPECT_EQ(count_opcode(local, HloOpcode::kAllGather), 1);
  EXPECT_EQ(count_opcode(local, HloOpcode::kDynamicSlice), 2);  // the offset table's entry, the tile
  EXPECT_EQ(count_opcode(local, HloOpcode::kPartitionId), 1);
  EXPECT_EQ(count_opcode(local, HloOpcode::kCustomCall), 0);  // the annotation is gone
}

TEST(SpmdPartitioner, TwoAxesOfAMeshRefineEachOtherWithoutCollectives) {
  HloBuilder b("mesh_2d");
  int a = b.parameter({8, 6}, DType::kFloat32);
  int c = b.parameter({8, 6}, DType::kFloat32);
  b.set_sharding(a, S(kByData));
  b.set_sharding(c, S("{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}"));
  int sum = b.binary(HloOpcode::kAdd, a, c);
  int iota = b.iota({8, 6}, DType::kFloat32, 1);
  HloModule local = expect_partitioned_matches(b.build({b.binary(HloOpcode::kMultiply, sum, iota)}), 4);
  EXPECT_EQ(collectives(local), 0);  // each device slices what it holds
  EXPECT_EQ(local.at(local.root).sharding->to_string(), "{{devices=[2,2]<=[4]}}");
}

TEST(SpmdPartitioner, AttentionSplitsByHeads) {
  // [B, S, H] -> heads -> sdpa -> back, heads split over 2 devices (tensor parallelism).
  HloBuilder b("attention");
  auto heads = [&](int x) { return b.transpose(b.reshape(x, {2, 4, 4, 8}), {0, 2, 1, 3}); };  // [B, heads, S, dh]
  int q = b.parameter({2, 4, 32}, DType::kFloat32);
  int k = b.parameter({2, 4, 32}, DType::kFloat32);
  int v = b.parameter({2, 4, 32}, DType::kFloat32);
  for (int p : {q, k, v}) b.set_sharding(p, S("{devices=[1,1,2]<=[2]}"));  // the hidden size by heads
  int fwd = b.custom_call({heads(q), heads(k), heads(v), b.scalar(0.3, DType::kFloat32)}, kSdpaForwardTarget, "has_dropout=0,has_mask=0,is_causal=1");
  HloModule local = expect_partitioned_matches(b.build({fwd}), 2);
  EXPECT_EQ(collectives(local), 0);
  EXPECT_NE(local.to_string().find("f32[2,2,4,9]{3,2,1,0} custom-call("), std::string::npos) << local.to_string();
}

TEST(SpmdPartitioner, AttentionWithDropoutRunsWholeToDrawTheWholeProgramsMasks) {
  HloBuilder b("dropout");
  int q = b.parameter({4, 2, 8, 8}, DType::kFloat32);
  b.set_sharding(q, S("{devices=[2,1,1,1]<=[2]}"));
  int fwd = b.custom_call({q, q, q, b.scalar(0.3, DType::kFloat32), b.scalar(0.5, DType::kFloat32), b.constant(Literal({}, DType::kInt64))},
                          kSdpaForwardTarget, "has_dropout=1,has_mask=0,is_causal=0");
  HloModule local = expect_partitioned_matches(b.build({fwd}), 2);
  EXPECT_EQ(count_opcode(local, HloOpcode::kAllGather), 3);  // the batch of q, k and v (one value here) gathered for the kernel
}

TEST(SpmdPartitioner, EmbeddingGradientsSumOverTheBatch) {
  HloBuilder b("embedding");
  int table = b.parameter({10, 8}, DType::kFloat32);
  int ids = b.parameter({4, 3}, DType::kInt64);
  int upstream = b.parameter({4, 3, 8}, DType::kFloat32);
  b.set_sharding(ids, S("{devices=[2,1]<=[2]}"));
  b.set_sharding(upstream, S("{devices=[2,1,1]<=[2]}"));
  // Small integers from random_arguments: clamp them into the table's rows.
  int safe_ids = b.binary(HloOpcode::kMinimum, b.binary(HloOpcode::kMaximum, ids, b.full(0, {4, 3}, DType::kInt64)), b.full(9, {4, 3}, DType::kInt64));
  int rows = b.gather(table, safe_ids);
  int grad = b.scatter_add(b.full(0.0, {10, 8}, DType::kFloat32), safe_ids, b.binary(HloOpcode::kMultiply, rows, upstream));
  HloModule local = expect_partitioned_matches(b.build({rows, grad}), 2);
  EXPECT_EQ(count_opcode(local, HloOpcode::kAllReduce), 1);
  EXPECT_EQ(collectives(local), 1);
}

TEST(SpmdPartitioner, ARowSplitTableTakesWholeIdsAndKeepsItsRows) {
  // FSDP's position embeddings: the table and its gradient split by rows, the
  // ids and updates whole. Ids index the whole table: the scatter fills whole
  // rows and each device keeps its own (no id may fall outside a tile).
  HloBuilder b("row_split");
  int table = b.parameter({8, 4}, DType::kFloat32);
  int ids = b.iota({6}, DType::kInt64, 0);
  int upstream = b.parameter({6, 4}, DType::kFloat32);
  b.set_sharding(table, S("{devices=[2,1]<=[2]}"));
  int grad = b.scatter_add(b.full(0.0, {8, 4}, DType::kFloat32), ids, upstream);
  int updated = b.binary(HloOpcode::kSubtract, table, grad);
  int rows = b.gather(table, ids);
  HloModule local = expect_partitioned_matches(b.build({updated, rows}), 2);
  EXPECT_EQ(count_opcode(local, HloOpcode::kAllGather), 1) << local.to_string();  // the table, for the gather
}

TEST(SpmdPartitioner, ALookupInALargeRowSplitTableSumsEachDevicesOwnRows) {
  // Megatron's vocabulary-parallel embedding: a 64-row table split over two
  // devices, three ids (one past the first tile): each device looks up the ids
  // among its rows, zeros elsewhere, and an all-reduce of the [3, 4] rows sums
  // them; the table (the larger exchange) is never gathered.
  HloBuilder b("vocabulary_parallel_lookup");
  int table = b.parameter({64, 4}, DType::kFloat32);
  int ids = b.parameter({3}, DType::kInt64);
  b.set_sharding(table, S("{devices=[2,1]<=[2]}"));
  HloModule global = b.build({b.gather(table, ids)});
  // expect_partitioned_matches draws ids in [-5, 5]: the gather's ids must be rows.
  std::vector<runtime::Buffer> args = testing::random_arguments(global, 3);
  const int64_t chosen[] = {0, 40, 63};
  for (int i = 0; i < 3; ++i) args[1].data<int64_t>()[i] = chosen[i];
  const std::vector<runtime::Buffer> expected = testing::run(global, args);
  const HloModule local = testing::partitioned(global);
  for (const auto& on_device : testing::run_on_devices(local, 2, args)) testing::expect_close(expected, on_device, 0);
  EXPECT_EQ(count_opcode(local, HloOpcode::kAllGather), 0) << local.to_string();
  EXPECT_EQ(count_opcode(local, HloOpcode::kAllReduce), 1) << local.to_string();
}

TEST(SpmdPartitioner, ReductionsThatCannotCombinePartialsGatherFirst) {
  HloBuilder b("reductions");
  int x = b.parameter({4, 6}, DType::kFloat32);
  b.set_sharding(x, S("{devices=[2,1]<=[2]}"));
  int from_one = b.reduce(x, {0}, ReduceKind::kAdd);  // init 0: partial sums
  // init 1 would be added on every device: the operand is gathered instead.
  const int one = b.scalar(1.0, DType::kFloat32);
  const HloInstruction sum = b.at(from_one);
  int off_init = b.copy(sum, {x, one});
  int smallest = b.reduce(x, {0, 1}, ReduceKind::kMin);
  HloModule local = expect_partitioned_matches(b.build({from_one, off_init, smallest}), 2);
  EXPECT_EQ(count_opcode(local, HloOpcode::kAllReduce), 2);
  EXPECT_EQ(count_opcode(local, HloOpcode::kAllGather), 1);
}

TEST(SpmdPartitioner, ReshapesThatDoNotKeepTilesWorkOnTheWholeValue) {
  HloBuilder b("reshapes");
  int x = b.parameter({4, 6}, DType::kFloat32);
  b.set_sharding(x, S("{devices=[1,2]<=[2]}"));
  int flat = b.reshape(b.unary(HloOpcode::kExp, x), {24});  // columns are not contiguous in [24]
  int sliced = b.slice(x, {1, 0}, {3, 6}, {1, 1});
  int joined = b.concatenate({x, x}, 0);
  HloModule local = expect_partitioned_matches(b.build({flat, sliced, joined}), 2);
  EXPECT_GE(count_opcode(local, HloOpcode::kAllGather), 1);
}

TEST(SpmdPartitioner, RunsOnTheCpuBackend) {
  HloBuilder b("cpu");
  int x = b.parameter({8, 16}, DType::kFloat32);
  int w = b.parameter({16, 8}, DType::kFloat32);
  b.set_sharding(x, S("{devices=[2,1]<=[2]}"));
  b.set_sharding(w, S("{devices=[2,1]<=[2]}"));
  int h = b.unary(HloOpcode::kTanh, b.dot(x, w, {{}, {}, {1}, {0}}));
  expect_partitioned_matches(b.build({h, b.reduce(h, {0, 1}, ReduceKind::kAdd)}), 2, 1e-5, "cpu");
}

TEST(SpmdPartitioner, UnevenTilesAreAnErrorNamingTheDimension) {
  HloBuilder b("uneven");
  int x = b.parameter({3, 4}, DType::kFloat32);
  b.set_sharding(x, S("{devices=[2,1]<=[2]}"));
  HloModule m = b.build({b.unary(HloOpcode::kExp, x)});
  try {
    testing::partitioned(m);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[spmd-partitioner] parameter.0"), std::string::npos) << what;
    EXPECT_NE(what.find("dimension 0 of [3, 4] does not divide into 2 tiles of {devices=[2,1]<=[2]}"), std::string::npos) << what;
  }
}

TEST(SpmdPartitioner, AnOpWithoutARuleIsAnError) {
  HloBuilder b("no_rule");
  int x = b.parameter({4}, DType::kFloat32);
  HloModule m = b.build({b.all_reduce(x, ReduceKind::kAdd, {})});
  for (HloInstruction& in : m.instructions) in.sharding = HloSharding::iota_tiled({2});
  m.instructions[static_cast<size_t>(m.root)].sharding = HloSharding::tuple({HloSharding::iota_tiled({2})});
  try {
    SpmdPartitioner().run(m);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no partitioning rule for all-reduce"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lazytrain::hlo
