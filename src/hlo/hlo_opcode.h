// HloOpcode: the primitive operations of lazytrain's HLO, named as XLA names them.
//
// HLO_OPCODE_LIST is the one table of opcodes (XLA's HLO_OPCODE_LIST in
// hlo_opcode.h): each entry V(enum, text name, arity, properties) gives the
// enum, opcode_name, opcode_arity and every property a pass asks about, so an
// opcode cannot exist half-declared and no pass keeps a list of its own.
#pragma once

#include <cstdint>
#include <string>

namespace lazytrain::hlo {

// Opcode properties (bit flags), as the passes ask about them.
enum HloOpcodeProperty : uint32_t {
  // One output element from the operands' elements at the same index (unary,
  // binary, compare, select, convert): fusible into loops, foldable on splats.
  kPropertyElementwise = 1u << 0,
  // Costly per element (transcendental functions, power, divide: XLA's
  // InstructionFusion::IsExpensive): fusion never duplicates it into consumers.
  kPropertyExpensive = 1u << 1,
  // Never replaced by a constant: no operands to fold (parameter, constant,
  // iota), random bits, or the ROOT tuple.
  kPropertyNeverFold = 1u << 2,
  // Never merged with an equal instruction by CSE: the argument list
  // (parameter), two draws of random bits, or the ROOT tuple.
  kPropertyNeverMerge = 1u << 3,
  // Rearranges one operand's elements: a splat operand gives a splat result of
  // the same value (reshape, transpose, broadcast, slice).
  kPropertySplatPreserving = 1u << 4,
  // Exchanges values with the other replicas (all-reduce, all-gather,
  // reduce-scatter): every replica must run it, in the same order, so no pass
  // folds, merges, fuses or reorders it (XLA's collectives are side-effecting).
  kPropertyCollective = 1u << 5,
};

// Arity -1: any number of operands.
#define HLO_OPCODE_LIST(V)                                                                             \
  V(kParameter, "parameter", 0, kPropertyNeverFold | kPropertyNeverMerge)                              \
  V(kConstant, "constant", 0, kPropertyNeverFold)                                                      \
  V(kIota, "iota", 0, kPropertyNeverFold)                                                              \
  V(kRngBitGenerator, "rng-bit-generator", 1, kPropertyNeverFold | kPropertyNeverMerge)                \
  /* partition-id: the running device's partition (its global ordinal), s32[] (XLA's is u32[]: lazytrain has no unsigned type) */ \
  V(kPartitionId, "partition-id", 0, kPropertyNeverFold)                                               \
  V(kNegate, "negate", 1, kPropertyElementwise)                                                        \
  V(kExp, "exponential", 1, kPropertyElementwise | kPropertyExpensive)                                 \
  V(kLog, "log", 1, kPropertyElementwise | kPropertyExpensive)                                         \
  V(kSqrt, "sqrt", 1, kPropertyElementwise | kPropertyExpensive)                                       \
  V(kRsqrt, "rsqrt", 1, kPropertyElementwise | kPropertyExpensive)                                     \
  V(kTanh, "tanh", 1, kPropertyElementwise | kPropertyExpensive)                                       \
  V(kErf, "erf", 1, kPropertyElementwise | kPropertyExpensive)                                         \
  V(kAbs, "abs", 1, kPropertyElementwise)                                                              \
  V(kCosine, "cosine", 1, kPropertyElementwise | kPropertyExpensive)                                   \
  V(kSine, "sine", 1, kPropertyElementwise | kPropertyExpensive)                                       \
  V(kNot, "not", 1, kPropertyElementwise)                                                              \
  V(kConvert, "convert", 1, kPropertyElementwise)                                                      \
  V(kAdd, "add", 2, kPropertyElementwise)                                                              \
  V(kSubtract, "subtract", 2, kPropertyElementwise)                                                    \
  V(kMultiply, "multiply", 2, kPropertyElementwise)                                                    \
  V(kDivide, "divide", 2, kPropertyElementwise | kPropertyExpensive)                                   \
  V(kMaximum, "maximum", 2, kPropertyElementwise)                                                      \
  V(kMinimum, "minimum", 2, kPropertyElementwise)                                                      \
  V(kPower, "power", 2, kPropertyElementwise | kPropertyExpensive)                                     \
  V(kAnd, "and", 2, kPropertyElementwise)                                                              \
  V(kOr, "or", 2, kPropertyElementwise)                                                                \
  V(kShiftRightLogical, "shift-right-logical", 2, kPropertyElementwise)                                \
  V(kCompare, "compare", 2, kPropertyElementwise)                                                      \
  V(kSelect, "select", 3, kPropertyElementwise)                                                        \
  V(kBroadcast, "broadcast", 1, kPropertySplatPreserving)                                              \
  V(kReshape, "reshape", 1, kPropertySplatPreserving)                                                  \
  V(kTranspose, "transpose", 1, kPropertySplatPreserving)                                              \
  V(kSlice, "slice", 1, kPropertySplatPreserving)                                                      \
  /* dynamic-slice(x, start...): a window of sizes `dimensions` at scalar starts, clamped into x (XLA's) */ \
  V(kDynamicSlice, "dynamic-slice", -1, 0)                                                             \
  V(kConcatenate, "concatenate", -1, 0)                                                                \
  V(kGather, "gather", 2, 0)                                                                           \
  V(kScatter, "scatter", 3, 0)                                                                         \
  V(kDot, "dot", 2, 0)                                                                                 \
  V(kReduce, "reduce", 2, 0)                                                                           \
  /* opt-barrier(x, after): x, computed no earlier than `after` and never merged (rematerialization) */ \
  V(kOptimizationBarrier, "opt-barrier", 2, kPropertyNeverFold | kPropertyNeverMerge)                  \
  V(kTuple, "tuple", -1, kPropertyNeverFold | kPropertyNeverMerge)                                     \
  /* get-tuple-element(t), index=k: element k of a multi-output fusion (HloInstruction::tuple_index) */ \
  V(kGetTupleElement, "get-tuple-element", 1, kPropertyNeverFold)                                      \
  /* cross-replica collectives (HloInstruction::replica_groups): values of other replicas */           \
  V(kAllReduce, "all-reduce", 1, kPropertyNeverFold | kPropertyNeverMerge | kPropertyCollective)       \
  V(kAllGather, "all-gather", 1, kPropertyNeverFold | kPropertyNeverMerge | kPropertyCollective)       \
  V(kReduceScatter, "reduce-scatter", 1, kPropertyNeverFold | kPropertyNeverMerge | kPropertyCollective) \
  /* asynchronous collectives (issue 34; XLA's *-start / *-done pairs, made by AsyncCollectiveCreator):  \
     X-start(x) issues collective X on the device's collective stream and has X's shape; X-done(start) \
     waits for it and is its value. Compute placed between the two overlaps the exchange. */           \
  V(kAllReduceStart, "all-reduce-start", 1, kPropertyNeverFold | kPropertyNeverMerge | kPropertyCollective) \
  V(kAllReduceDone, "all-reduce-done", 1, kPropertyNeverFold | kPropertyNeverMerge)                    \
  V(kAllGatherStart, "all-gather-start", 1, kPropertyNeverFold | kPropertyNeverMerge | kPropertyCollective) \
  V(kAllGatherDone, "all-gather-done", 1, kPropertyNeverFold | kPropertyNeverMerge)                    \
  V(kReduceScatterStart, "reduce-scatter-start", 1, kPropertyNeverFold | kPropertyNeverMerge | kPropertyCollective) \
  V(kReduceScatterDone, "reduce-scatter-done", 1, kPropertyNeverFold | kPropertyNeverMerge)            \
  /* calls a host kernel named by HloInstruction::custom_call_target (hlo/custom_call.h) */          \
  V(kCustomCall, "custom-call", -1, 0)                                                                 \
  /* calls a fused computation (HloInstruction::fused_computation) */                                 \
  V(kFusion, "fusion", -1, 0)

#define HLO_OPCODE_ENUM_ENTRY(enum_name, text, arity, properties) enum_name,
enum class HloOpcode { HLO_OPCODE_LIST(HLO_OPCODE_ENUM_ENTRY) };
#undef HLO_OPCODE_ENUM_ENTRY

// The count check (ggml's static_assert on GGML_OP_COUNT): the number of
// entries of `list` must be kHloOpcodeCount. Adding an opcode fails to compile
// until this number is raised, which is the moment to give it a shape rule
// (shape_inference.cpp), an evaluator kernel (hlo/evaluator), a CPU emitter
// case or interpreter fallback, and a case in tests/support/random_hlo.cpp.
inline constexpr int kHloOpcodeCount = 53;
#define HLO_OPCODE_COUNT_ONE(enum_name, text, arity, properties) +1
#define HLO_OPCODE_COUNT_CHECK(list)                                   \
  static_assert((0 list(HLO_OPCODE_COUNT_ONE)) == kHloOpcodeCount, \
                "the opcode list and kHloOpcodeCount differ: see the checklist in hlo_opcode.h")
HLO_OPCODE_COUNT_CHECK(HLO_OPCODE_LIST);

// XLA's text name: "add", "rng-bit-generator", "shift-right-logical", ...
const std::string& opcode_name(HloOpcode opcode);
#define HLO_OPCODE_ARITY_ENTRY(enum_name, text, arity, properties) arity,
#define HLO_OPCODE_PROPERTIES_ENTRY(enum_name, text, arity, properties) uint32_t{properties},
inline constexpr int kHloOpcodeArity[] = {HLO_OPCODE_LIST(HLO_OPCODE_ARITY_ENTRY)};
inline constexpr uint32_t kHloOpcodeProperties[] = {HLO_OPCODE_LIST(HLO_OPCODE_PROPERTIES_ENTRY)};
#undef HLO_OPCODE_ARITY_ENTRY
#undef HLO_OPCODE_PROPERTIES_ENTRY

// The number of operands `opcode` takes; -1 for any number (concatenate, tuple, fusion).
constexpr int opcode_arity(HloOpcode opcode) { return kHloOpcodeArity[static_cast<int>(opcode)]; }
// The opcode's HloOpcodeProperty bits.
constexpr uint32_t opcode_properties(HloOpcode opcode) { return kHloOpcodeProperties[static_cast<int>(opcode)]; }

constexpr bool is_elementwise(HloOpcode opcode) { return opcode_properties(opcode) & kPropertyElementwise; }
// Elementwise with one operand: negate ... convert.
constexpr bool is_elementwise_unary(HloOpcode opcode) { return is_elementwise(opcode) && opcode_arity(opcode) == 1; }
// Elementwise with two operands: add ... shift-right-logical, and compare.
constexpr bool is_elementwise_binary(HloOpcode opcode) { return is_elementwise(opcode) && opcode_arity(opcode) == 2; }
constexpr bool is_expensive(HloOpcode opcode) { return opcode_properties(opcode) & kPropertyExpensive; }
constexpr bool never_folded(HloOpcode opcode) { return opcode_properties(opcode) & kPropertyNeverFold; }
constexpr bool never_merged(HloOpcode opcode) { return opcode_properties(opcode) & kPropertyNeverMerge; }
constexpr bool is_splat_preserving(HloOpcode opcode) { return opcode_properties(opcode) & kPropertySplatPreserving; }
constexpr bool is_collective(HloOpcode opcode) { return opcode_properties(opcode) & kPropertyCollective; }

// The asynchronous pairs: all-reduce <-> all-reduce-start <-> all-reduce-done, and
// the same for all-gather and reduce-scatter.
constexpr bool is_async_collective_start(HloOpcode opcode) {
  return opcode == HloOpcode::kAllReduceStart || opcode == HloOpcode::kAllGatherStart || opcode == HloOpcode::kReduceScatterStart;
}
constexpr bool is_async_collective_done(HloOpcode opcode) {
  return opcode == HloOpcode::kAllReduceDone || opcode == HloOpcode::kAllGatherDone || opcode == HloOpcode::kReduceScatterDone;
}
// The collective a start (or done) runs; any other opcode is returned unchanged.
constexpr HloOpcode synchronous_collective(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kAllReduceDone: return HloOpcode::kAllReduce;
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllGatherDone: return HloOpcode::kAllGather;
    case HloOpcode::kReduceScatterStart:
    case HloOpcode::kReduceScatterDone: return HloOpcode::kReduceScatter;
    default: return opcode;
  }
}
// all-reduce -> all-reduce-start (all-gather, reduce-scatter alike); other opcodes unchanged.
constexpr HloOpcode async_collective_start(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAllReduce: return HloOpcode::kAllReduceStart;
    case HloOpcode::kAllGather: return HloOpcode::kAllGatherStart;
    case HloOpcode::kReduceScatter: return HloOpcode::kReduceScatterStart;
    default: return opcode;
  }
}
// all-reduce-start -> all-reduce-done (all-gather, reduce-scatter alike); other opcodes unchanged.
constexpr HloOpcode async_collective_done(HloOpcode start) {
  switch (start) {
    case HloOpcode::kAllReduceStart: return HloOpcode::kAllReduceDone;
    case HloOpcode::kAllGatherStart: return HloOpcode::kAllGatherDone;
    case HloOpcode::kReduceScatterStart: return HloOpcode::kReduceScatterDone;
    default: return start;
  }
}

enum class ComparisonDirection { kEq, kNe, kLt, kLe, kGt, kGe };
// XLA's names: EQ, NE, LT, LE, GT, GE.
std::string direction_name(ComparisonDirection direction);

// The reduction computation of a kReduce (XLA spells it as a called computation).
// kLogAddExp is the computation log(exp(a) + exp(b)): reduced from -inf it is
// logsumexp (torch.logsumexp), which a backend may compute in one pass per row
// (online softmax) where max-then-sum-of-exp reads its operand twice. Floating
// point only, and never a collective's combiner.
enum class ReduceKind { kAdd, kMax, kMin, kMul, kLogAddExp };
std::string reduce_kind_name(ReduceKind kind);

// What a fusion computes, as XLA names it: kLoop (elementwise, one output
// element per iteration), kInput (a reduction fed by fused producers), kOutput
// (a dot with a fused elementwise epilogue).
enum class FusionKind { kLoop, kInput, kOutput };
std::string fusion_kind_name(FusionKind kind);

}  // namespace lazytrain::hlo
