// A sharding on a lazy IR node is kept typed (hlo::HloSharding), hashed with
// the node and printed as XLA's text; it is never stored as text and parsed
// back. Two annotations that differ only in their layout (or in the op_name
// metadata their text carries) are two graphs; equal ones are one.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hlo/hlo_sharding.h"
#include "lazy/graph_lowering.h"
#include "lazy/ir.h"
#include "lazy/sharded_data.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

using hlo::HloSharding;

lazy::NodePtr value_node() { return from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}).ir_value(); }

TEST(TypedSharding, AnAnnotationKeepsItsShardingTypedAndHashesIt) {
  const lazy::NodePtr x = value_node();
  const HloSharding rows = HloSharding::iota_tiled({2, 1});
  const HloSharding cols = HloSharding::iota_tiled({1, 2});
  const lazy::NodePtr a = lazy::make_custom_sharding(x, rows);
  const lazy::NodePtr b = lazy::make_custom_sharding(x, rows);
  const lazy::NodePtr c = lazy::make_custom_sharding(x, cols);
  const lazy::NodePtr named = lazy::make_custom_sharding(x, rows.with_op_name("layer.0"));
  ASSERT_NE(a->sharding(), nullptr);
  EXPECT_EQ(*a->sharding(), rows);
  EXPECT_EQ(lazy::custom_sharding_of(*a), rows);
  EXPECT_EQ(a->local_hash(), b->local_hash());
  EXPECT_NE(a->local_hash(), c->local_hash());
  // op_name is part of the printed text, so of the hash (equality ignores it).
  EXPECT_NE(a->local_hash(), named->local_hash());
  EXPECT_EQ(lazy::custom_sharding_of(*named)->op_name(), "layer.0");
  EXPECT_EQ(x->sharding(), nullptr);
  EXPECT_FALSE(lazy::custom_sharding_of(*x).has_value());
}

TEST(TypedSharding, TheIrDumpAndTheLoweredModuleCarryXlasText) {
  const lazy::NodePtr x = value_node();
  const lazy::NodePtr a = lazy::make_custom_sharding(x, HloSharding::iota_tiled({2, 1}));
  EXPECT_EQ(a->to_string({0}), "f32[4,2]{1,0} xla::custom_sharding(%0), sharding={devices=[2,1]<=[2]}");
  const lazy::GraphSignature signature = lazy::graph_signature({a.get()});
  const hlo::HloModule module = lazy::lower_graph(signature, "typed_sharding");
  const std::string text = module.to_string();
  const size_t at = text.find("custom_call_target=\"Sharding\"");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string line = text.substr(at, text.find('\n', at) - at);
  EXPECT_NE(line.find("sharding={devices=[2,1]<=[2]}"), std::string::npos) << text;
}

TEST(TypedSharding, EqualShardingsHashEqualAndEveryFieldCounts) {
  EXPECT_EQ(HloSharding::iota_tiled({2, 2}).hash(), HloSharding::tiled({2, 2}, {0, 1, 2, 3}).hash());
  EXPECT_NE(HloSharding::tiled({2, 2}, {0, 1, 2, 3}).hash(), HloSharding::tiled({2, 2}, {0, 2, 1, 3}).hash());
  EXPECT_NE(HloSharding::iota_tiled({2, 2}).hash(), HloSharding::iota_tiled({2, 2}, true).hash());
  EXPECT_NE(HloSharding::replicate().hash(), HloSharding::manual().hash());
  EXPECT_NE(HloSharding::maximal(0).hash(), HloSharding::maximal(1).hash());
  EXPECT_NE(HloSharding::replicate().hash(), HloSharding::replicate().with_op_name("w").hash());
}

}  // namespace
}  // namespace lazytrain
