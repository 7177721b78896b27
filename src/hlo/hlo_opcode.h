// HloOpcode: the primitive operations of lazytrain's HLO, named as XLA names them.
#pragma once

#include <string>

namespace lazytrain::hlo {

// Adding an opcode: add it here and to kOpcodeNames (hlo_opcode.cpp: the
// static_assert fails until you do), to the verifier's shape rule and to every backend.
enum class HloOpcode {
  kParameter, kConstant, kIota, kRngBitGenerator,
  // elementwise unary
  kNegate, kExp, kLog, kSqrt, kRsqrt, kTanh, kErf, kAbs, kCosine, kNot, kConvert,
  // elementwise binary
  kAdd, kSubtract, kMultiply, kDivide, kMaximum, kMinimum, kPower, kAnd, kOr, kShiftRightLogical,
  kCompare, kSelect,
  // data movement
  kBroadcast, kReshape, kTranspose, kSlice, kConcatenate, kGather, kScatter,
  // compute
  kDot, kReduce,
  kTuple,
  kFusion,  // calls a fused computation (HloInstruction::fused_computation)
  kCount  // not an opcode: the number of opcodes
};

// XLA's text name: "add", "rng-bit-generator", "shift-right-logical", ...
const std::string& opcode_name(HloOpcode opcode);
bool is_elementwise_unary(HloOpcode opcode);
bool is_elementwise_binary(HloOpcode opcode);

enum class ComparisonDirection { kEq, kNe, kLt, kLe, kGt, kGe };
// XLA's names: EQ, NE, LT, LE, GT, GE.
std::string direction_name(ComparisonDirection direction);

// The reduction computation of a kReduce (XLA spells it as a called computation).
enum class ReduceKind { kAdd, kMax, kMin, kMul };
std::string reduce_kind_name(ReduceKind kind);

// What a fusion computes, as XLA names it: kLoop (elementwise, one output
// element per iteration), kInput (a reduction fed by fused producers), kOutput
// (a dot with a fused elementwise epilogue).
enum class FusionKind { kLoop, kInput, kOutput };
std::string fusion_kind_name(FusionKind kind);

}  // namespace lazytrain::hlo
