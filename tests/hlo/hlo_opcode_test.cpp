// The opcode table (HLO_OPCODE_LIST): names, arities and the properties the
// passes ask about, pinned to what the passes used to list by hand. The count
// check's failure is a compile test (hlo_opcode_count_check_fail.cc).
#include "hlo/hlo_opcode.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace lazytrain::hlo {
namespace {

static_assert(opcode_arity(HloOpcode::kSelect) == 3 && opcode_arity(HloOpcode::kTuple) == -1);
static_assert(is_elementwise_binary(HloOpcode::kCompare) && !is_elementwise_binary(HloOpcode::kSelect));

std::set<HloOpcode> with(bool (*property)(HloOpcode)) {
  std::set<HloOpcode> out;
  for (int k = 0; k < kHloOpcodeCount; ++k) {
    if (property(static_cast<HloOpcode>(k))) out.insert(static_cast<HloOpcode>(k));
  }
  return out;
}

TEST(HloOpcode, NamesAreXlasAndUnique) {
  std::set<std::string> names;
  for (int k = 0; k < kHloOpcodeCount; ++k) {
    const std::string& name = opcode_name(static_cast<HloOpcode>(k));
    EXPECT_FALSE(name.empty()) << k;
    EXPECT_TRUE(names.insert(name).second) << name;
  }
  EXPECT_EQ(opcode_name(HloOpcode::kExp), "exponential");
  EXPECT_EQ(opcode_name(HloOpcode::kRngBitGenerator), "rng-bit-generator");
  EXPECT_EQ(opcode_name(HloOpcode::kShiftRightLogical), "shift-right-logical");
  EXPECT_EQ(opcode_name(HloOpcode::kFusion), "fusion");
  EXPECT_EQ(opcode_name(HloOpcode::kGetTupleElement), "get-tuple-element");
  EXPECT_EQ(static_cast<int>(HloOpcode::kFusion), kHloOpcodeCount - 1);
}

TEST(HloOpcode, PropertiesAreThoseThePassesUsedToList) {
  using O = HloOpcode;
  EXPECT_EQ(with([](O o) { return is_elementwise(o); }),
            (std::set<O>{O::kNegate, O::kExp, O::kLog, O::kSqrt, O::kRsqrt, O::kTanh, O::kErf, O::kAbs, O::kCosine, O::kSine, O::kNot,
                         O::kConvert, O::kAdd, O::kSubtract, O::kMultiply, O::kDivide, O::kMaximum, O::kMinimum, O::kPower,
                         O::kAnd, O::kOr, O::kShiftRightLogical, O::kCompare, O::kSelect}));
  EXPECT_EQ(with([](O o) { return is_elementwise_unary(o); }),
            (std::set<O>{O::kNegate, O::kExp, O::kLog, O::kSqrt, O::kRsqrt, O::kTanh, O::kErf, O::kAbs, O::kCosine, O::kSine, O::kNot, O::kConvert}));
  EXPECT_EQ(with([](O o) { return is_expensive(o); }),
            (std::set<O>{O::kExp, O::kLog, O::kTanh, O::kErf, O::kCosine, O::kSine, O::kPower, O::kSqrt, O::kRsqrt, O::kDivide}));
  EXPECT_EQ(with([](O o) { return never_folded(o); }), (std::set<O>{O::kParameter, O::kConstant, O::kIota, O::kRngBitGenerator, O::kPartitionId, O::kTuple,
                                                                     O::kGetTupleElement, O::kAllReduce, O::kAllGather, O::kReduceScatter, O::kOptimizationBarrier,
                                                                     O::kAllReduceStart, O::kAllReduceDone, O::kAllGatherStart, O::kAllGatherDone,
                                                                     O::kReduceScatterStart, O::kReduceScatterDone}));
  EXPECT_EQ(with([](O o) { return never_merged(o); }),
            (std::set<O>{O::kParameter, O::kRngBitGenerator, O::kTuple, O::kAllReduce, O::kAllGather, O::kReduceScatter,
                         O::kOptimizationBarrier, O::kAllReduceStart, O::kAllReduceDone, O::kAllGatherStart, O::kAllGatherDone,
                         O::kReduceScatterStart, O::kReduceScatterDone}));
  EXPECT_EQ(with([](O o) { return is_collective(o); }), (std::set<O>{O::kAllReduce, O::kAllGather, O::kReduceScatter, O::kAllReduceStart,
                                                                      O::kAllGatherStart, O::kReduceScatterStart}));
  EXPECT_EQ(with([](O o) { return is_async_collective_start(o); }), (std::set<O>{O::kAllReduceStart, O::kAllGatherStart, O::kReduceScatterStart}));
  EXPECT_EQ(with([](O o) { return is_async_collective_done(o); }), (std::set<O>{O::kAllReduceDone, O::kAllGatherDone, O::kReduceScatterDone}));
  for (O sync : {O::kAllReduce, O::kAllGather, O::kReduceScatter}) {
    EXPECT_EQ(synchronous_collective(async_collective_start(sync)), sync);
    EXPECT_EQ(synchronous_collective(async_collective_done(async_collective_start(sync))), sync);
    EXPECT_EQ(opcode_name(async_collective_start(sync)), opcode_name(sync) + "-start");
    EXPECT_EQ(opcode_name(async_collective_done(async_collective_start(sync))), opcode_name(sync) + "-done");
  }
  EXPECT_EQ(with([](O o) { return is_splat_preserving(o); }), (std::set<O>{O::kReshape, O::kTranspose, O::kBroadcast, O::kSlice}));
}

TEST(HloOpcode, AritiesMatchTheOperationSemantics) {
  using O = HloOpcode;
  EXPECT_EQ(opcode_arity(O::kParameter), 0);
  EXPECT_EQ(opcode_arity(O::kRngBitGenerator), 1);
  EXPECT_EQ(opcode_arity(O::kConvert), 1);
  EXPECT_EQ(opcode_arity(O::kCompare), 2);
  EXPECT_EQ(opcode_arity(O::kScatter), 3);
  EXPECT_EQ(opcode_arity(O::kReduce), 2);
  EXPECT_EQ(opcode_arity(O::kOptimizationBarrier), 2);
  EXPECT_EQ(opcode_arity(O::kConcatenate), -1);
  EXPECT_EQ(opcode_arity(O::kDynamicSlice), -1);
  EXPECT_EQ(opcode_arity(O::kPartitionId), 0);
  EXPECT_EQ(opcode_arity(O::kFusion), -1);
  EXPECT_EQ(opcode_arity(O::kGetTupleElement), 1);
}

}  // namespace
}  // namespace lazytrain::hlo
