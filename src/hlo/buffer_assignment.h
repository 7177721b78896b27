// BufferAssignment: where each value of a scheduled module lives while it runs,
// decided at compile time, as XLA's BufferAssignment does with its heap
// simulator. The values a backend computes into memory it is handed share one
// arena: each gets an offset, and two values whose live ranges overlap never
// share bytes. The arena is allocated once per executable and reused by every
// execution, so a training step allocates nothing for its intermediates after
// the first.
//
// Instructions run in module order (ids are the schedule). A value lives from
// its instruction to its last use. Values that share storage are one buffer:
// an output that is a view of an operand (a reshape; a collective or an
// interpreted fusion that may hand back an operand), and an output computed
// over an operand in place (an elementwise kernel or a scatter-add writing
// into an operand that is read here for the last time). A buffer stays out of
// the arena (its storage is made at run time) when it holds a parameter, a
// constant, a value the backend allocates itself, or an output of the module
// (which outlives the execution).
//
// A multi-output fusion has no buffer of its own: each of its elements is the
// buffer of its get-tuple-element, live from the fusion (which writes it) on,
// and may be computed in place over an operand of the fusion.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "hlo/hlo_instruction.h"

namespace lazytrain::hlo {

// How a backend makes an instruction's output.
enum class OutputStorage {
  kArena,     // written into storage the backend is handed (an arena slot)
  kExternal,  // storage the instruction makes or returns itself (parameters, constants, collectives, interpreted fusions)
};
// A pure view (a reshape) makes no storage: give it kArena and list its
// operand in may_alias, so that it shares its operand's buffer wherever that
// lives. kExternal on a view would keep its operand's whole buffer out of the arena.

struct BufferAssignmentOptions {
  std::function<OutputStorage(const HloInstruction&)> storage;
  // Operand positions whose storage the output may be (views); the output and
  // those operands are then one buffer.
  std::function<std::vector<size_t>(const HloInstruction&)> may_alias;
  // Operand positions the output may be computed over in place (each element
  // read only to write the same element; same bytes). For a get-tuple-element:
  // positions among its multi-output fusion's operands.
  std::function<std::vector<size_t>(const HloInstruction&)> in_place_candidates;
  int64_t alignment = 64;
};

struct BufferAssignment {
  // Per instruction: its byte offset in the arena, or -1 when its storage is
  // made at run time.
  std::vector<int64_t> offset;
  // Per instruction: the operand position it is computed over in place, or -1
  // (for a get-tuple-element: the position among its fusion's operands).
  std::vector<int> in_place_operand;
  // Per instruction: whether its storage outlives the execution (it is an
  // output, or shares a buffer with one).
  std::vector<bool> outlives;
  int64_t arena_bytes = 0;
  // The sum of the arena's buffers' sizes: what allocating each value apart
  // would hold if none were freed (arena_bytes / this is the packing).
  int64_t unpacked_bytes = 0;
  int64_t arena_values = 0;  // instructions whose output lives in the arena
};

// Throws Error when the module's ids are not its positions.
BufferAssignment assign_buffers(const HloModule& module, const BufferAssignmentOptions& options);

}  // namespace lazytrain::hlo
