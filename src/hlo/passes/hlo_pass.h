// HloPass: one rewrite of an HloModule (simplification, CSE, fusion, ...), and
// the pipeline that runs passes in order.
//
// Passes rewrite by reconstruction: walk the old module in order and emit into
// an HloBuilder (HloBuilder::copy keeps an instruction with new operand ids),
// then replace the module. Parameters keep their numbers and order; the ROOT
// tuple keeps its outputs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hlo/hlo_instruction.h"

namespace lazytrain::hlo {

class HloPass {
 public:
  virtual ~HloPass() = default;
  // A short name for dumps and errors: "algebraic-simplifier", "cse", ...
  virtual std::string name() const = 0;
  // Rewrites `module`; returns true when anything changed. The result verifies.
  virtual bool run(HloModule& module) = 0;
};

// What stands for an old instruction in the rebuilt module: `id` (-1: copy it
// unchanged) and whether that is a real replacement (not just the copy).
struct Rewritten {
  int id = -1;
  bool replaced = false;
};
// Rewrites `module` by reconstruction: for each instruction in order (ROOT
// excluded), `replace(builder, instruction, new_operand_ids)` says what stands for
// it. Returns true when anything was replaced or the rebuilt module lost dead
// instructions. The module keeps its num_partitions and its ROOT's sharding.
using ReplaceFn = std::function<Rewritten(class HloBuilder& builder, const HloInstruction& instruction, const std::vector<int>& operands)>;
bool rewrite_module(HloModule& module, const ReplaceFn& replace);

// Rebuilds `module` with its instructions in `order` (every id but the ROOT's,
// each after its operands; parameters first, in number order), the ROOT last.
// Returns false, leaving the module alone, when `order` is the module's own.
// The schedulers' last step (memory_scheduler.h, latency_hiding_scheduler.h).
bool reorder_module(HloModule& module, const std::vector<int>& order);

using PassDumpFn = std::function<void(const std::string& pass_name, const HloModule& module)>;

// Runs `passes` in order, verifying the module after each (Error names the pass
// that broke it), and calls `dump` after each pass that changed something.
// A partitioned module (num_partitions > 1) keeps its num_partitions and its
// ROOT's sharding (its outputs' layouts) through every pass.
// Returns true when any pass changed the module.
bool run_passes(HloModule& module, const std::vector<std::unique_ptr<HloPass>>& passes, const PassDumpFn& dump = {});

}  // namespace lazytrain::hlo
