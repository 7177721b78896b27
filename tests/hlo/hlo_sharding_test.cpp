// HloSharding (issue 34): XLA's text forms, printed and parsed back, the
// device grid's indices and the shape one device holds. The expected strings
// are XLA's own forms (hlo_sharding.cc's ToString, the HLO parser's tests).
#include "hlo/hlo_sharding.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "hlo/hlo_builder.h"
#include "hlo/hlo_serialization.h"
#include "hlo/passes/cse.h"
#include "hlo/passes/hlo_pass.h"

namespace lazytrain::hlo {
namespace {

std::string error_of(const std::string& text) {
  try {
    HloSharding::parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HloSharding, PrintsXlasTextForms) {
  EXPECT_EQ(HloSharding::replicate().to_string(), "{replicated}");
  EXPECT_EQ(HloSharding::manual().to_string(), "{manual}");
  EXPECT_EQ(HloSharding::maximal(3).to_string(), "{maximal device=3}");
  EXPECT_EQ(HloSharding::iota_tiled({2, 1}).to_string(), "{devices=[2,1]<=[2]}");
  EXPECT_EQ(HloSharding::tiled({2, 1}, {1, 0}).to_string(), "{devices=[2,1]1,0}");
  EXPECT_EQ(HloSharding::iota_tiled({2, 1, 2}, true).to_string(), "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  EXPECT_EQ(HloSharding::tuple({HloSharding::replicate(), HloSharding::tiled({2}, {0, 1})}).to_string(),
            "{{replicated}, {devices=[2]<=[2]}}");
}

TEST(HloSharding, ParsesWhatItPrintsAndXlasOtherForms) {
  const std::vector<HloSharding> all = {
      HloSharding::replicate(),
      HloSharding::manual(),
      HloSharding::maximal(0),
      HloSharding::iota_tiled({4, 1}),
      HloSharding::tiled({2, 2}, {0, 2, 1, 3}),
      HloSharding::iota_tiled({1, 2, 2}, true),
      HloSharding::tuple({HloSharding::maximal(1), HloSharding::iota_tiled({1, 4})}),
  };
  for (const HloSharding& s : all) EXPECT_EQ(HloSharding::parse(s.to_string()), s) << s.to_string();
  // The explicit list of an iota assignment is the same sharding; spaces inside the braces are allowed.
  EXPECT_EQ(HloSharding::parse("{devices=[2,1]0,1}"), HloSharding::iota_tiled({2, 1}));
  EXPECT_EQ(HloSharding::parse("{ maximal device=7 }"), HloSharding::maximal(7));
  EXPECT_EQ(HloSharding::parse("{{replicated},{manual}}"), HloSharding::tuple({HloSharding::replicate(), HloSharding::manual()}));
  // XLA's iota with a reshape and a transpose: 0..7 as [2, 4], transposed to [4, 2], read row-major.
  const HloSharding t = HloSharding::parse("{devices=[4,2]<=[2,4]T(1,0)}");
  EXPECT_EQ(t.devices(), (std::vector<int64_t>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(t.to_string(), "{devices=[4,2]0,4,1,5,2,6,3,7}");
  EXPECT_EQ(HloSharding::parse("{devices=[2,2,2]<=[2,2,2]T(2,0,1) last_tile_dim_replicate}").devices(),
            (std::vector<int64_t>{0, 2, 4, 6, 1, 3, 5, 7}));
}

// XLA's sharding metadata: `metadata={op_name="..."}` inside the braces,
// parsed back; == ignores it (as XLA's), the text (and so the lazy graph's
// hash, which hashes the text) does not.
TEST(HloSharding, CarriesAnOpNameThatEqualityIgnores) {
  const HloSharding unit = HloSharding::iota_tiled({4, 1}).with_op_name("fsdp/bert.encoder.layer.3");
  EXPECT_EQ(unit.to_string(), "{devices=[4,1]<=[4] metadata={op_name=\"fsdp/bert.encoder.layer.3\"}}");
  EXPECT_EQ(HloSharding::parse(unit.to_string()).op_name(), "fsdp/bert.encoder.layer.3");
  EXPECT_EQ(HloSharding::parse("{replicated metadata={op_name=\"fsdp\"}}").op_name(), "fsdp");
  EXPECT_EQ(HloSharding::parse("{devices=[2,1,2]<=[4] last_tile_dim_replicate metadata={ op_name=\"u\" }}").op_name(), "u");
  EXPECT_EQ(unit, HloSharding::iota_tiled({4, 1}));
  EXPECT_NE(unit.to_string(), HloSharding::iota_tiled({4, 1}).to_string());
  EXPECT_THROW(HloSharding::replicate().with_op_name("a\"b"), Error);
  EXPECT_THROW(HloSharding::tuple({HloSharding::replicate()}).with_op_name("u"), Error);
  EXPECT_NE(error_of("{replicated metadata={op_name=\"unclosed}}").find("expected a closing"), std::string::npos);
}

TEST(HloSharding, TileIndexAndTileShape) {
  // Two tiles along dimension 0, each held by two devices (the last grid dimension replicates).
  const HloSharding s = HloSharding::iota_tiled({2, 1, 2}, true);
  EXPECT_EQ(s.tiled_rank(), 2);
  EXPECT_EQ(s.tile_index(0), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(s.tile_index(3), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(s.tile_shape({8, 6}), (Shape{4, 6}));
  EXPECT_EQ(s.tile_shape({7, 6}), (Shape{4, 6}));  // rounded up: XLA pads the last tile
  const HloSharding g = HloSharding::tiled({2, 2}, {3, 2, 1, 0});
  EXPECT_EQ(g.tile_index(2), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(g.tile_shape({10, 4}), (Shape{5, 2}));
  EXPECT_EQ(HloSharding::replicate().tile_shape({10, 4}), (Shape{10, 4}));
  EXPECT_THROW(g.tile_index(4), Error);
  EXPECT_THROW(g.tile_shape({10, 4, 2}), Error);
  EXPECT_THROW(HloSharding::manual().tiled_rank(), Error);
}

TEST(HloSharding, RejectsInvalidShardingsWithOneClearError) {
  EXPECT_THROW(HloSharding::tiled({2, 2}, {0, 1, 2}), Error);      // 4 cells, 3 devices
  EXPECT_THROW(HloSharding::tiled({2}, {0, 0}), Error);            // a device twice
  EXPECT_THROW(HloSharding::tiled({0, 2}, {}), Error);             // no tiles along a dimension
  EXPECT_THROW(HloSharding::tiled({2}, {0, 1}, true), Error);      // replicated dimension without a tiled one
  EXPECT_THROW(HloSharding::maximal(-1), Error);
  EXPECT_THROW(HloSharding::tuple({HloSharding::tuple({})}), Error);
  try {
    HloSharding::tiled({2, 2}, {0, 1, 2});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[HloSharding] devices=[2,2] over devices {0,1,2}: the tile grid has 4 cells, expected as many devices, got 3");
  }
  EXPECT_EQ(error_of("{devices=[2,1]0,1"), "[HloSharding] cannot read sharding '{devices=[2,1]0,1': expected '}' at character 18 (the end)");
  EXPECT_EQ(error_of("{replicate}"),
            "[HloSharding] cannot read sharding '{replicate}': expected replicated, manual, maximal device=N, devices=[...] or a tuple {{...}, "
            "...} at character 2 ('replicate}')");
  EXPECT_EQ(error_of("{devices=[2]<=[2]T(1)}"), "[HloSharding] iota tile assignment T(1) is not a permutation of the 1 dimensions of <=[2]");
  EXPECT_NE(error_of("{{{replicated}}}").find("expected a sharding, not a nested tuple"), std::string::npos);
  EXPECT_NE(error_of("{replicated} x").find("expected the end of the sharding at character 14"), std::string::npos);
  EXPECT_NE(error_of("{maximal device=-1}").find("expected a non-negative integer"), std::string::npos);
}

// A module whose parameter is tiled in two along dimension 0, and two equal
// adds of it, the second of them annotated as replicated.
HloModule annotated_module() {
  HloBuilder b("sharded");
  const int x = b.parameter({4, 6}, DType::kFloat32);
  const int a = b.binary(HloOpcode::kAdd, x, x);
  const int c = b.binary(HloOpcode::kAdd, x, x);
  HloModule m = b.build({a, c});
  m.instructions[static_cast<size_t>(x)].sharding = HloSharding::iota_tiled({2, 1});
  m.instructions[static_cast<size_t>(c)].sharding = HloSharding::replicate();
  return m;
}

int count_of(const HloModule& m, HloOpcode opcode) {
  int n = 0;
  for (const HloInstruction& in : m.instructions) n += in.opcode == opcode;
  return n;
}

TEST(HloSharding, AnInstructionsShardingIsPrintedSerializedAndKeptByRewrites) {
  HloModule m = annotated_module();
  verify(m);
  const std::string text = m.to_string();
  EXPECT_NE(text.find("  %parameter.0 = f32[4,6]{1,0} parameter(0), sharding={devices=[2,1]<=[2]}\n"), std::string::npos) << text;
  EXPECT_NE(text.find("add(f32[4,6]{1,0} %parameter.0, f32[4,6]{1,0} %parameter.0), sharding={replicated}\n"), std::string::npos) << text;
  // The compile cache's bytes keep it.
  const HloModule back = deserialize_module(serialize_module(m));
  EXPECT_EQ(back.to_string(), text);
  EXPECT_EQ(back.instructions[0].sharding, HloSharding::iota_tiled({2, 1}));
  // A pass that rebuilds the module keeps a parameter's sharding (HloBuilder::copy).
  rewrite_module(m, [](HloBuilder&, const HloInstruction&, const std::vector<int>&) { return Rewritten{}; });
  EXPECT_EQ(m.instructions[0].sharding, HloSharding::iota_tiled({2, 1}));
  EXPECT_EQ(m.to_string(), text);
}

TEST(HloSharding, CseMergesOnlyValuesOfOneSharding) {
  HloModule differently = annotated_module();  // one add replicated, the other not annotated
  Cse().run(differently);
  EXPECT_EQ(count_of(differently, HloOpcode::kAdd), 2);
  HloModule alike = annotated_module();
  alike.instructions[1].sharding = HloSharding::replicate();
  Cse().run(alike);
  EXPECT_EQ(count_of(alike, HloOpcode::kAdd), 1);
}

TEST(HloSharding, TheVerifierWantsOneTileCountPerDimension) {
  HloModule outputs = annotated_module();  // the ROOT tuple's sharding: one per output
  outputs.instructions[static_cast<size_t>(outputs.root)].sharding = HloSharding::tuple({HloSharding::replicate(), HloSharding::maximal(0)});
  verify(outputs);
  outputs.instructions[static_cast<size_t>(outputs.root)].sharding = HloSharding::tuple({HloSharding::replicate()});
  EXPECT_THROW(verify(outputs), Error);
  HloModule m = annotated_module();
  m.instructions[0].sharding = HloSharding::iota_tiled({2});
  try {
    verify(m);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("parameter.0: sharding {devices=[2]<=[2]} tiles 1 dimensions, expected one tile count per "
                                         "dimension of [4, 6]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace lazytrain::hlo
