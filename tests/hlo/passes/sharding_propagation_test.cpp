// ShardingPropagation (issue 34): from a few annotations, every instruction's
// layout, the way GSPMD lays out data parallelism, Megatron's MLP on a 2-D
// mesh and FSDP's weights; errors for what it cannot lay out. The expected
// layouts are worked out by hand (device d of a 2x2 mesh (data, model) sits at
// (d / 2, d % 2)).
#include "hlo/passes/sharding_propagation.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "hlo/custom_call.h"
#include "hlo/hlo_builder.h"
#include "../../support/hlo_pass_test_util.h"

namespace lazytrain::hlo {
namespace {

HloSharding S(const std::string& text) { return HloSharding::parse(text); }

const std::string kByData = "{devices=[2,1,2]<=[4] last_tile_dim_replicate}";          // dim 0 by data
const std::string kColumnsByModel = "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}";  // dim 1 by model
const std::string kRowsByModel = "{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}";     // dim 0 by model

std::string sharding_of(const HloModule& m, int id) {
  const auto& s = m.at(id).sharding;
  return s ? s->to_string() : "none";
}

std::string propagate_error(HloModule m) {
  try {
    ShardingPropagation().run(m);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ShardingPropagation, LeavesAModuleWithoutAnnotationsAlone) {
  HloBuilder b("plain");
  int x = b.parameter({4, 2}, DType::kFloat32);
  HloModule m = b.build({b.unary(HloOpcode::kExp, x)});
  EXPECT_FALSE(ShardingPropagation().run(m));
  for (const HloInstruction& in : m.instructions) EXPECT_FALSE(in.sharding) << in.name();
}

TEST(ShardingPropagation, DataParallelLayerFollowsTheBatch) {
  HloBuilder b("data_parallel");
  int x = b.parameter({8, 16}, DType::kFloat32);
  int w = b.parameter({16, 32}, DType::kFloat32);
  b.set_sharding(x, S("{devices=[2,1]<=[2]}"));
  int h = b.dot(x, w, {{}, {}, {1}, {0}});
  int relu = b.binary(HloOpcode::kMaximum, h, b.full(0.0, {8, 32}, DType::kFloat32));
  int bias_grad = b.reduce(relu, {0}, ReduceKind::kAdd);
  int loss = b.reduce(relu, {0, 1}, ReduceKind::kAdd);
  HloModule m = b.build({relu, bias_grad, loss});
  ASSERT_TRUE(ShardingPropagation().run(m));
  EXPECT_EQ(sharding_of(m, w), "{replicated}");  // a parameter's layout is its data's
  EXPECT_EQ(sharding_of(m, h), "{devices=[2,1]<=[2]}");
  EXPECT_EQ(sharding_of(m, relu), "{devices=[2,1]<=[2]}");
  // The zeros take their user's layout (the partitioner makes them locally).
  EXPECT_EQ(sharding_of(m, m.at(relu).operands[1]), "{devices=[2,1]<=[2]}");
  // Reducing the batch leaves a whole value on every device.
  EXPECT_EQ(sharding_of(m, bias_grad), "{replicated}");
  EXPECT_EQ(sharding_of(m, loss), "{replicated}");
  EXPECT_EQ(sharding_of(m, m.root), "{{devices=[2,1]<=[2]}, {replicated}, {replicated}}");
  for (const HloInstruction& in : m.instructions) EXPECT_TRUE(in.sharding) << in.name();
  verify(m);
}

TEST(ShardingPropagation, MegatronMlpOnATwoByTwoMesh) {
  HloBuilder b("megatron_mlp");
  int x = b.parameter({8, 16}, DType::kFloat32);
  int up = b.parameter({16, 32}, DType::kFloat32);
  int down = b.parameter({32, 16}, DType::kFloat32);
  b.set_sharding(x, S(kByData));
  b.set_sharding(up, S(kColumnsByModel));  // column-parallel
  b.set_sharding(down, S(kRowsByModel));   // row-parallel
  int h = b.dot(x, up, {{}, {}, {1}, {0}});
  int g = b.unary(HloOpcode::kTanh, h);
  int y = b.dot(g, down, {{}, {}, {1}, {0}});
  HloModule m = b.build({y});
  ShardingPropagation().run(m);
  // The batch by data and the hidden features by model: every device its own tile.
  EXPECT_EQ(sharding_of(m, h), "{devices=[2,2]<=[4]}");
  EXPECT_EQ(sharding_of(m, g), "{devices=[2,2]<=[4]}");
  // The row-parallel dot contracts the model-split dimension: the batch stays
  // split by data, the output features are whole (partial sums, all-reduced).
  EXPECT_EQ(sharding_of(m, y), kByData);
}

TEST(ShardingPropagation, AWeightsGradientTakesTheWeightsLayout) {
  // FSDP: the weight split along its largest dimension over every device, the
  // batch too. The gradient dot contracts the batch; the update with the
  // weight gives it the weight's layout (a reduce-scatter, not an all-reduce).
  HloBuilder b("fsdp_update");
  int x = b.parameter({16, 8}, DType::kFloat32);
  int w = b.parameter({8, 4}, DType::kFloat32);
  int dy = b.parameter({16, 4}, DType::kFloat32);
  b.set_sharding(x, S("{devices=[4,1]<=[4]}"));
  b.set_sharding(w, S("{devices=[4,1]<=[4]}"));
  b.set_sharding(dy, S("{devices=[4,1]<=[4]}"));
  int y = b.dot(x, w, {{}, {}, {1}, {0}});
  int dw = b.dot(x, dy, {{}, {}, {0}, {0}});  // x^T dy: [8, 4]
  int step = b.binary(HloOpcode::kMultiply, dw, b.full(0.1, {8, 4}, DType::kFloat32));
  int updated = b.binary(HloOpcode::kSubtract, w, step);
  HloModule m = b.build({y, updated});
  ShardingPropagation().run(m);
  EXPECT_EQ(sharding_of(m, y), "{devices=[4,1]<=[4]}");
  EXPECT_EQ(sharding_of(m, dw), "{devices=[4,1]<=[4]}");
  EXPECT_EQ(sharding_of(m, step), "{devices=[4,1]<=[4]}");
  EXPECT_EQ(sharding_of(m, updated), "{devices=[4,1]<=[4]}");
}

TEST(ShardingPropagation, AttentionHeadsFollowTheBatchThroughReshapeAndTranspose) {
  HloBuilder b("heads");
  int x = b.parameter({4, 8, 16}, DType::kFloat32);  // [B, S, H]
  b.set_sharding(x, S("{devices=[2,1,1]<=[2]}"));
  int heads = b.reshape(x, {4, 8, 4, 4});             // [B, S, heads, dh]
  int t = b.transpose(heads, {0, 2, 1, 3});           // [B, heads, S, dh]
  int flat = b.reshape(x, {32, 16});                  // [B*S, H]
  int mask = b.broadcast(b.parameter({8}, DType::kFloat32), {4, 8}, {1});
  int masked = b.binary(HloOpcode::kAdd, mask, b.reduce(x, {2}, ReduceKind::kMax));
  HloModule m = b.build({t, flat, masked});
  ShardingPropagation().run(m);
  EXPECT_EQ(sharding_of(m, heads), "{devices=[2,1,1,1]<=[2]}");
  EXPECT_EQ(sharding_of(m, t), "{devices=[2,1,1,1]<=[2]}");
  EXPECT_EQ(sharding_of(m, flat), "{devices=[2,1]<=[2]}");
  // The broadcast takes the batch split from its user; its operand has no batch.
  EXPECT_EQ(sharding_of(m, mask), "{devices=[2,1]<=[2]}");
  EXPECT_EQ(sharding_of(m, m.at(mask).operands[0]), "{replicated}");
}

TEST(ShardingPropagation, AShardingCustomCallLaysOutBothSides) {
  HloBuilder b("annotated");
  int x = b.parameter({4, 6}, DType::kFloat32);
  int before = b.unary(HloOpcode::kExp, x);
  int mark = b.custom_call({before}, kShardingTarget, "");
  b.set_sharding(mark, S("{devices=[1,2]<=[2]}"));
  int after = b.unary(HloOpcode::kNegate, mark);
  HloModule m = b.build({after});
  ShardingPropagation().run(m);
  EXPECT_EQ(sharding_of(m, x), "{replicated}");
  EXPECT_EQ(sharding_of(m, before), "{devices=[1,2]<=[2]}");
  EXPECT_EQ(sharding_of(m, after), "{devices=[1,2]<=[2]}");
}

TEST(ShardingPropagation, EmbeddingRowsFollowTheIdsAndTheTable) {
  HloBuilder b("embedding");
  int table = b.parameter({32, 16}, DType::kFloat32);
  int ids = b.parameter({4, 8}, DType::kInt64);
  b.set_sharding(ids, S("{devices=[2,1]<=[2]}"));
  int rows = b.gather(table, ids);  // [4, 8, 16]
  int grad = b.scatter_add(b.full(0.0, {32, 16}, DType::kFloat32), ids, rows);
  HloModule m = b.build({rows, grad});
  ShardingPropagation().run(m);
  EXPECT_EQ(sharding_of(m, rows), "{devices=[2,1,1]<=[2]}");
  // Rows of every id land in one table: partial sums over the devices.
  EXPECT_EQ(sharding_of(m, grad), "{replicated}");

  // A table split by its columns (tensor parallelism) gives rows split so.
  HloBuilder c("embedding_columns");
  int split_table = c.parameter({32, 16}, DType::kFloat32);
  c.set_sharding(split_table, S("{devices=[1,2]<=[2]}"));
  int split_rows = c.gather(split_table, c.parameter({4, 8}, DType::kInt64));
  HloModule n = c.build({split_rows});
  ShardingPropagation().run(n);
  EXPECT_EQ(sharding_of(n, split_rows), "{devices=[1,1,2]<=[2]}");
}

TEST(ShardingPropagation, AttentionKernelsKeepTheBatchDimensions) {
  HloBuilder b("sdpa");
  int q = b.parameter({2, 4, 8, 16}, DType::kFloat32);  // [B, heads, L, E]
  int k = b.parameter({2, 4, 8, 16}, DType::kFloat32);
  int v = b.parameter({2, 4, 8, 16}, DType::kFloat32);
  b.set_sharding(q, S("{devices=[1,2,1,1]<=[2]}"));   // heads split (tensor parallelism)
  int fwd = b.custom_call({q, k, v, b.scalar(0.25, DType::kFloat32)}, kSdpaForwardTarget, "has_dropout=0,has_mask=0,is_causal=1");
  HloModule m = b.build({fwd});
  ShardingPropagation().run(m);
  EXPECT_EQ(sharding_of(m, fwd), "{devices=[1,2,1,1]<=[2]}");
}

TEST(ShardingPropagation, AnOpWithoutARuleIsAnError) {
  HloBuilder b("collective");
  int x = b.parameter({4, 2}, DType::kFloat32);
  b.set_sharding(x, S("{devices=[2,1]<=[2]}"));
  HloModule m = b.build({b.all_reduce(x, ReduceKind::kAdd, {})});
  const std::string error = propagate_error(m);
  EXPECT_NE(error.find("[sharding-propagation] all-reduce.1"), std::string::npos) << error;
  EXPECT_NE(error.find("no sharding rule for all-reduce"), std::string::npos) << error;
  EXPECT_NE(error.find("{devices=[2,1]<=[2]}"), std::string::npos) << error;

  HloBuilder c("maximal");
  int y = c.parameter({4}, DType::kFloat32);
  c.set_sharding(y, S("{maximal device=1}"));
  const std::string maximal = propagate_error(c.build({c.unary(HloOpcode::kExp, y)}));
  EXPECT_NE(maximal.find("{maximal device=1} is not supported"), std::string::npos) << maximal;
}

TEST(ShardingPropagation, AnnotatedShardingsAreValues) {
  // The pass only annotates: the module computes what it did.
  HloBuilder b("values");
  int x = b.parameter({4, 6}, DType::kFloat32);
  b.set_sharding(x, S("{devices=[2,1]<=[2]}"));
  int mark = b.custom_call({b.unary(HloOpcode::kExp, x)}, kShardingTarget, "");
  b.set_sharding(mark, S("{devices=[1,2]<=[2]}"));
  HloModule m = b.build({b.reduce(mark, {1}, ReduceKind::kAdd)});
  testing::run_pass_and_compare<ShardingPropagation>(m);
}

}  // namespace
}  // namespace lazytrain::hlo
