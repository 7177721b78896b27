// HLO_COLLECTIVE_CASES: the case labels of every opcode for which
// is_collective() holds (hlo_opcode.h: all-reduce, all-gather, reduce-scatter
// and their -start forms), for the switches that treat them alike (shape
// inference, the printer, the evaluator, the backends), so that a new
// collective is listed here once instead of in each switch. Use it as one label:
//
//   switch (in.opcode) {
//     HLO_COLLECTIVE_CASES: return infer_collective(...);
//     case HloOpcode::kParameter: ...
//
// HLO_COLLECTIVE_DONE_CASES likewise names the -done halves of the async
// collectives (is_async_collective_done()).
//
// The static_asserts below fail to compile when a list and its predicate
// disagree (an opcode given kPropertyCollective and not listed, or the reverse).
#pragma once

#include "hlo/hlo_opcode.h"

namespace lazytrain::hlo {

#define HLO_COLLECTIVE_CASES                                                                        \
  case HloOpcode::kAllReduce:                                                                       \
  case HloOpcode::kAllGather:                                                                       \
  case HloOpcode::kReduceScatter:                                                                   \
  case HloOpcode::kAllReduceStart:                                                                  \
  case HloOpcode::kAllGatherStart:                                                                  \
  case HloOpcode::kReduceScatterStart

#define HLO_COLLECTIVE_DONE_CASES                                                                   \
  case HloOpcode::kAllReduceDone:                                                                   \
  case HloOpcode::kAllGatherDone:                                                                   \
  case HloOpcode::kReduceScatterDone

// Whether HLO_COLLECTIVE_CASES names exactly the opcodes is_collective() holds for.
constexpr bool collective_cases_match_is_collective() {
  for (int i = 0; i < kHloOpcodeCount; ++i) {
    const auto opcode = static_cast<HloOpcode>(i);
    bool listed = false;
    switch (opcode) {
      HLO_COLLECTIVE_CASES:
        listed = true;
        break;
      default:
        break;
    }
    if (listed != is_collective(opcode)) return false;
  }
  return true;
}

static_assert(collective_cases_match_is_collective(),
              "HLO_COLLECTIVE_CASES and is_collective() differ: list every opcode with kPropertyCollective (collective_cases.h)");

// Whether HLO_COLLECTIVE_DONE_CASES names exactly the opcodes is_async_collective_done() holds for.
constexpr bool collective_done_cases_match() {
  for (int i = 0; i < kHloOpcodeCount; ++i) {
    const auto opcode = static_cast<HloOpcode>(i);
    bool listed = false;
    switch (opcode) {
      HLO_COLLECTIVE_DONE_CASES:
        listed = true;
        break;
      default:
        break;
    }
    if (listed != is_async_collective_done(opcode)) return false;
  }
  return true;
}

static_assert(collective_done_cases_match(),
              "HLO_COLLECTIVE_DONE_CASES and is_async_collective_done() differ: list every -done opcode (collective_cases.h)");

}  // namespace lazytrain::hlo
