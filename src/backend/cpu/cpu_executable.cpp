#include "backend/cpu/cpu_executable.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <mutex>
#include <set>

#include "backend/cpu/dot_epilogue_fusion.h"
#include "backend/cpu/host_kernels.h"
#include "backend/cpu/kernel_emitter.h"
#include "backend/cpu/matmul_dims.h"
#include "backend/interpreter/kernels.h"
#include "backend/literal_buffer.h"
#include "core/env_vars.h"
#include "core/error.h"
#include "hlo/buffer_assignment.h"
#include "hlo/collective_cases.h"
#include "hlo/evaluator/hlo_evaluator.h"
#include "hlo/op_metadata.h"
#include "kernels/onednn_matmul.h"
#include "runtime/collective_stream.h"
#include "runtime/collectives.h"
#include "runtime/metrics.h"
#include "runtime/profiler.h"

namespace lazytrain::backend::cpu {

namespace {

using hlo::HloOpcode;
using kernels::MatmulEpilogue;
using kernels::OneDnnMatmul;
using runtime::Buffer;

// The opcodes of a fusion's computation, parameters and the root tuple left
// out: "broadcast multiply add tanh".
std::string fused_ops(const hlo::HloInstruction& fusion) {
  std::string ops;
  for (const auto& in : fusion.fused_computation->instructions) {
    if (in.opcode == HloOpcode::kParameter || in.opcode == HloOpcode::kTuple) continue;
    ops += (ops.empty() ? "" : " ") + hlo::opcode_name(in.opcode);
  }
  return ops;
}

// Says once per process per kind of fallback fusion (its ops, shape and
// reason) that it runs on the interpreter.
void warn_fallback_once(const hlo::HloModule& module, const hlo::HloInstruction& fusion, const std::string& reason) {
  static std::mutex mutex;
  static std::set<std::string>* seen = new std::set<std::string>();
  const std::string ops = fused_ops(fusion);
  const std::string shape = hlo::shape_text(module, fusion);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!seen->insert(hlo::fusion_kind_name(fusion.fusion_kind) + "|" + shape + "|" + ops + "|" + reason).second) return;
  }
  std::fprintf(stderr, "warning: [cpu backend] %s of %s (%s, %s: %s) runs on the interpreter: %s; counted as InterpreterFallback.%s\n",
               fusion.name().c_str(), module.name.c_str(), hlo::fusion_kind_name(fusion.fusion_kind).c_str(), shape.c_str(), ops.c_str(),
               reason.c_str(), fusion.name().c_str());
}

// The asynchronous collectives of one execution, by start id: a start queues
// its exchange on the device's collective thread (runtime/collective_stream.h)
// and its done takes the result. An execution that fails between the two
// still waits for what it started, so no exchange outlives its execution.
class InFlightCollectives {
 public:
  InFlightCollectives() = default;
  InFlightCollectives(const InFlightCollectives&) = delete;
  InFlightCollectives& operator=(const InFlightCollectives&) = delete;
  ~InFlightCollectives() {
    for (auto& [id, result] : started_) {
      if (result.valid()) result.wait();  // its error, if any, is the failure's consequence
    }
  }

  // Queues `start`'s collective over `operand` on the calling thread's device.
  void start(const hlo::HloInstruction& start, Buffer operand) {
    const runtime::ReplicaGroups& groups = start.replica_groups;
    const runtime::ReduceOp op = interpreter::reduce_op(start.reduce_kind);
    const int64_t dimension = start.dimensions.empty() ? 0 : start.dimensions[0];
    std::function<Buffer()> exchange;
    // `groups` lives in the executable's module, which outlives this (the destructor waits).
    switch (hlo::synchronous_collective(start.opcode)) {
      case HloOpcode::kAllReduce: exchange = [operand, op, &groups] { return runtime::all_reduce(operand, op, groups); }; break;
      case HloOpcode::kAllGather: exchange = [operand, dimension, &groups] { return runtime::all_gather(operand, dimension, groups); }; break;
      case HloOpcode::kReduceScatter:
        exchange = [operand, op, dimension, &groups] { return runtime::reduce_scatter(operand, op, dimension, groups); };
        break;
      default: throw Error("[cpu backend] " + start.name() + " is not the start of a collective");
    }
    started_[start.id] = runtime::start_collective(runtime::current_device(), std::move(exchange));
  }

  // Waits for the collective of start `start_id` and returns its result.
  Buffer done(int start_id) {
    auto it = started_.find(start_id);
    check(it != started_.end(), "cpu backend", "a done runs before its start");
    Buffer result = it->second.get();
    started_.erase(it);
    return result;
  }

 private:
  std::map<int, std::future<Buffer>> started_;
};

class CpuExecutable : public Executable {
 public:
  CpuExecutable(hlo::HloModule module, std::shared_ptr<SharedLibrary> library, std::map<int, KernelFn> kernels, bool profile, KernelIsa isa)
      : module_(std::move(module)), library_(std::move(library)), kernels_(std::move(kernels)), profile_(profile), isa_(isa) {
    last_use_.assign(module_.instructions.size(), -1);
    for (const auto& in : module_.instructions) {
      for (int o : in.operands) last_use_[o] = in.id;
    }
    for (const auto& in : module_.instructions) {
      if (in.opcode == HloOpcode::kGetTupleElement) elements_[in.operands[0]].push_back(in.id);
      if (hlo::is_async_collective_done(in.opcode)) {
        // The exchange reads its operand's storage until the done: a parameter it
        // reads (through reshapes) must not be overwritten in place before then.
        int source = module_.at(in.operands[0]).operands[0];
        while (module_.at(source).opcode == HloOpcode::kReshape) source = module_.at(source).operands[0];
        int& end = exchange_end_[source];
        end = std::max(end, in.id);
      }
    }
    for (const auto& [id, fn] : kernels_) {
      const hlo::HloInstruction& fusion = module_.at(id);
      if (!hlo::is_multi_output_fusion(fusion)) {
        in_place_operands_[id] = in_place_candidates(fusion, fusion);
        continue;
      }
      // Each element of a multi-output fusion may be written over an operand of its own.
      const std::vector<const hlo::HloInstruction*> outputs = hlo::fusion_outputs(fusion);
      for (int gte : elements_[id]) in_place_operands_[gte] = in_place_candidates(fusion, *outputs[static_cast<size_t>(module_.at(gte).tuple_index)]);
    }
    // A scatter-add adds its updates into a copy of operand 0; it may add into
    // operand 0 itself once nothing else reads it (the embedding gradient: the
    // decoder's weight gradient plus the looked-up rows, without a copy of the
    // vocabulary-sized matrix).
    for (const auto& in : module_.instructions) {
      if (in.opcode == HloOpcode::kScatter) in_place_operands_[in.id] = {0};
    }
    // oneDNN primitives: created once per executable, for every dot and dot epilogue fusion.
    const int64_t retries_before = kernels::onednn_create_retries();
    for (const auto& in : module_.instructions) {
      if (in.opcode == HloOpcode::kConstant) constants_[in.id] = buffer_from_literal(in.literal);
      if (in.opcode == HloOpcode::kDot) {
        matmuls_[in.id] = std::make_unique<OneDnnMatmul>(matmul_dims(module_.at(in.operands[0]).shape, in));
      } else if (auto epilogue = dot_epilogue_of(in)) {
        const hlo::HloModule& f = *in.fused_computation;
        for (const auto& inner : f.instructions) {
          if (inner.opcode == HloOpcode::kDot) {
            matmuls_[in.id] = std::make_unique<OneDnnMatmul>(matmul_dims(f.at(inner.operands[0]).shape, inner),
                                                             MatmulEpilogue{epilogue->bias, epilogue->residual});
          }
        }
      }
    }
    if (const int64_t retries = kernels::onednn_create_retries() - retries_before; retries > 0) {
      runtime::counter("OneDnnCreateRetries").add(retries);
    }
    find_fallbacks();
    label_instructions();
    assign_buffers();
  }

  const hlo::HloModule& module() const override { return module_; }

  std::vector<Buffer> execute(const std::vector<Buffer>& arguments) override { return execute(arguments, {}, nullptr); }

  std::vector<Buffer> execute(const std::vector<Buffer>& arguments, const std::vector<bool>& donated, std::vector<bool>* overwritten) override {
    check(static_cast<int>(arguments.size()) == module_.num_parameters, "cpu backend",
          "expects " + std::to_string(module_.num_parameters) + " arguments, got " + std::to_string(arguments.size()));
    check(donated.empty() || donated.size() == arguments.size(), "cpu backend",
          "expects one donation flag per argument, got " + std::to_string(donated.size()));
    std::vector<Buffer> values(module_.instructions.size());
    std::vector<std::vector<Buffer>> tuples(module_.instructions.size());  // multi-output fusions' elements
    std::vector<Buffer> outputs;
    std::vector<const void*> pointers;
    std::map<std::string, double> totals;  // LAZYTRAIN_PROFILE_STDERR: milliseconds per kind of instruction
    const bool tracing = runtime::is_tracing();
    ArenaLease arena(*this);
    InFlightCollectives in_flight;  // after the arena: waited for before the arena goes back
    // Nothing is overwritten until an instruction runs (a failure before, e.g. no
    // arena, keeps every argument); an instruction that fails says what it may have taken.
    if (overwritten) overwritten->assign(arguments.size(), false);
    for (const auto& in : module_.instructions) {
      if (in.opcode == HloOpcode::kTuple) {
        for (int o : in.operands) outputs.push_back(values[o]);
        break;
      }
      const int64_t t0 = profile_ || tracing ? runtime::now_ns() : 0;
      count_if_fallback(in);
      auto kernel = kernels_.find(in.id);
      auto matmul = matmuls_.find(in.id);
      try {
        if (in.opcode == HloOpcode::kConstant) {
          values[in.id] = constants_.at(in.id);  // shared: never overwritten in place (not unique)
        } else if (hlo::is_async_collective_start(in.opcode)) {
          in_flight.start(in, values[in.operands[0]]);  // the exchange holds its operand until it ran
        } else if (hlo::is_async_collective_done(in.opcode)) {
          values[in.id] = in_flight.done(in.operands[0]);
        } else if (hlo::is_multi_output_fusion(in)) {
          tuples[in.id] = run_multi_output_fusion(in, values, donated, arena.buffer);
        } else if (in.opcode == HloOpcode::kGetTupleElement) {
          values[in.id] = tuples[in.operands[0]].at(static_cast<size_t>(in.tuple_index));
        } else if (matmul != matmuls_.end()) {
          Buffer out = output_storage(in, values, donated, arena.buffer);
          const Buffer* bias = in.operands.size() > 2 ? &values[in.operands[2]] : nullptr;
          const Buffer* residual = in.operands.size() > 3 ? &values[in.operands[3]] : nullptr;
          matmul->second->run(values[in.operands[0]].raw(), values[in.operands[1]].raw(), bias ? bias->raw() : nullptr,
                              residual ? residual->raw() : nullptr, out.raw());
          values[in.id] = std::move(out);
        } else if (kernel != kernels_.end()) {
          Buffer out = output_storage(in, values, donated, arena.buffer);
          pointers.clear();
          for (int o : in.operands) pointers.push_back(values[o].raw());
          kernel->second(pointers.data(), out.raw());
          values[in.id] = std::move(out);
        } else if (writes_into_storage(in)) {
          Buffer out = output_storage(in, values, donated, arena.buffer);
          std::vector<hlo::ArrayRef> refs;
          for (int o : in.operands) refs.emplace_back(values[o].raw(), values[o].shape(), values[o].dtype());
          const hlo::MutableArrayRef out_ref(out.raw(), out.shape(), out.dtype());
          if (!run_host_kernel(in, refs, out_ref, isa_)) hlo::evaluate_into(in, refs, out_ref);
          values[in.id] = std::move(out);
        } else {
          interpreter::Operands args;
          for (int o : in.operands) args.push_back(&values[o]);
          values[in.id] = interpreter::evaluate_instruction(in, args, arguments);
        }
      } catch (...) {
        if (overwritten) *overwritten = donated_storage_taken_by(in, donated);
        hlo::rethrow_with_origin(in);  // names the op and the user's line
      }
      if (tracing) trace_instruction(in, t0);
      if (profile_) note_profile(in, kernel != kernels_.end(), matmul != matmuls_.end(), runtime::now_ns() - t0, totals);
      for (int o : in.operands) {
        if (last_use_[o] != in.id) continue;
        values[o] = Buffer();
        tuples[o].clear();
      }
    }
    if (profile_) print_totals(totals);
    return outputs;
  }

 private:
  // Which donated arguments an execution that failed at `failed` may have
  // overwritten: a donated argument's storage is taken only at its parameter's
  // last read (reusable_operand), so one whose last reader comes later is intact.
  std::vector<bool> donated_storage_taken_by(const hlo::HloInstruction& failed, const std::vector<bool>& donated) const {
    std::vector<bool> taken(static_cast<size_t>(module_.num_parameters), false);
    for (const auto& in : module_.instructions) {
      if (in.opcode != HloOpcode::kParameter) continue;
      const auto number = static_cast<size_t>(in.parameter_number);
      const int last = last_use_[in.id];
      taken[number] = !donated.empty() && donated[number] && last >= 0 && last <= failed.id;
    }
    return taken;
  }

  // Instructions that the interpreter's evaluate_into computes into storage
  // they are handed (everything but values that are made elsewhere or are
  // views: parameters, constants, reshapes, collectives, fusions without a
  // generated kernel, which run on the interpreter whole).
  bool writes_into_storage(const hlo::HloInstruction& in) const {
    switch (in.opcode) {
      case HloOpcode::kParameter:
      case HloOpcode::kConstant:
      case HloOpcode::kReshape:
      HLO_COLLECTIVE_CASES:
      HLO_COLLECTIVE_DONE_CASES:
      case HloOpcode::kPartitionId:
      case HloOpcode::kTuple:
        return false;
      case HloOpcode::kFusion:
        // A multi-output fusion writes its elements into its get-tuple-elements' storage.
        return !hlo::is_multi_output_fusion(in) && (kernels_.count(in.id) > 0 || matmuls_.count(in.id) > 0);
      case HloOpcode::kGetTupleElement:
        return kernels_.count(in.operands[0]) > 0;
      default:
        return true;
    }
  }

  // Static buffer assignment (hlo/buffer_assignment.h): the arena slot of every
  // intermediate, and which outputs are computed over an operand in place.
  void assign_buffers() {
    hlo::BufferAssignmentOptions options;
    // A reshape makes no storage (it shows its operand's), so it is not
    // external: its buffer is its operand's, wherever that lives.
    options.storage = [this](const hlo::HloInstruction& in) {
      return writes_into_storage(in) || in.opcode == HloOpcode::kReshape ? hlo::OutputStorage::kArena : hlo::OutputStorage::kExternal;
    };
    options.may_alias = [this](const hlo::HloInstruction& in) {
      std::vector<size_t> operands;
      // A reshape is a view; a collective of one replica, or an interpreted
      // fusion, may hand back an operand's storage.
      const bool interpreted_fusion = in.opcode == HloOpcode::kFusion && !kernels_.count(in.id) && !matmuls_.count(in.id);
      // An asynchronous pair shares its operand's buffer too (a collective of
      // one replica hands back its operand): the set is kept out of the arena,
      // since the start makes its storage. The queued exchange holds the
      // operand alive until it ran; exchange_end_ keeps it from being
      // overwritten in place before then.
      const bool collective = hlo::is_collective(in.opcode) || hlo::is_async_collective_done(in.opcode);
      const bool views = in.opcode == HloOpcode::kReshape || collective || interpreted_fusion ||
                         (in.opcode == HloOpcode::kGetTupleElement && !writes_into_storage(in));
      if (views) {
        for (size_t k = 0; k < in.operands.size(); ++k) operands.push_back(k);
      }
      return operands;
    };
    options.in_place_candidates = [this](const hlo::HloInstruction& in) {
      const auto it = in_place_operands_.find(in.id);
      return it == in_place_operands_.end() ? std::vector<size_t>{} : it->second;
    };
    assignment_ = hlo::assign_buffers(module_, options);
    runtime::metric("ArenaBytes", runtime::MetricKind::kBytes).add_sample(static_cast<double>(assignment_.arena_bytes));
  }

  // The arena of one execution, taken from the executable's free arenas (one
  // per concurrent execution: replicas share a cached executable) and given
  // back when the execution ends, however it ends.
  struct ArenaLease {
    explicit ArenaLease(CpuExecutable& e) : executable(e) {
      std::lock_guard<std::mutex> lock(e.arena_mutex_);
      if (!e.free_arenas_.empty()) {
        buffer = std::move(e.free_arenas_.back());
        e.free_arenas_.pop_back();
      }
      if (!buffer.defined() && e.assignment_.arena_bytes > 0) {
        buffer = Buffer(Shape{e.assignment_.arena_bytes}, DType::kBool);
        runtime::counter("ArenaAllocations").add(1);
      }
    }
    ~ArenaLease() {
      if (!buffer.defined()) return;
      std::lock_guard<std::mutex> lock(executable.arena_mutex_);
      executable.free_arenas_.push_back(std::move(buffer));
    }
    CpuExecutable& executable;
    Buffer buffer;
  };

  // Where `in`'s output is written: over the operand buffer assignment chose,
  // its arena slot, a donated argument or an intermediate it may overwrite
  // (reusable_operand), or new storage.
  Buffer output_storage(const hlo::HloInstruction& in, const std::vector<Buffer>& values, const std::vector<bool>& donated,
                        const Buffer& arena) const {
    std::vector<int> taken;
    return storage_for(in, in, values, donated, arena, taken);
  }

  // Where `output` (the value of `writer`, or one element's get-tuple-element
  // of multi-output `writer`) is written, chosen as output_storage says; an
  // operand position of `writer` in `taken` is not reused, and one reused is
  // added to it.
  Buffer storage_for(const hlo::HloInstruction& writer, const hlo::HloInstruction& output, const std::vector<Buffer>& values,
                     const std::vector<bool>& donated, const Buffer& arena, std::vector<int>& taken) const {
    const auto id = static_cast<size_t>(output.id);
    if (const int k = assignment_.in_place_operand[id]; k >= 0) return values[writer.operands[static_cast<size_t>(k)]].reshaped(output.shape);
    if (const int64_t offset = assignment_.offset[id]; offset >= 0) return arena.view(offset, output.shape, output.dtype);
    if (const auto candidates = in_place_operands_.find(output.id); candidates != in_place_operands_.end()) {
      if (Buffer out = reusable_operand(writer, output, candidates->second, values, donated, taken); out.defined()) return out;
    }
    return new_storage(output);
  }

  Buffer new_storage(const hlo::HloInstruction& in) const {
    if (!assignment_.outlives[static_cast<size_t>(in.id)]) {
      static runtime::Counter& intermediates = runtime::counter("IntermediateAllocations");
      intermediates.add(1);
    }
    return Buffer(in.shape, in.dtype);
  }

  // Runs multi-output `fusion`: its kernel writes every element in one loop,
  // each into its get-tuple-element's storage (storage_for; an operand is
  // reused for one element at most); without a kernel, the interpreter evaluates it.
  std::vector<Buffer> run_multi_output_fusion(const hlo::HloInstruction& fusion, const std::vector<Buffer>& values,
                                              const std::vector<bool>& donated, const Buffer& arena) const {
    if (!kernels_.count(fusion.id)) {
      interpreter::Operands args;
      for (int o : fusion.operands) args.push_back(&values[o]);
      return interpreter::evaluate_fusion(fusion, args);
    }
    const std::vector<const hlo::HloInstruction*> outputs = hlo::fusion_outputs(fusion);
    std::vector<Buffer> tuple(outputs.size());
    std::vector<int> taken;  // operand positions an element is written over
    const auto elements = elements_.find(fusion.id);
    const std::vector<int> no_elements;
    const std::vector<int>& gtes = elements == elements_.end() ? no_elements : elements->second;
    for (int gte : gtes) {
      if (const int k = assignment_.in_place_operand[static_cast<size_t>(gte)]; k >= 0) taken.push_back(k);
    }
    for (int gte : gtes) {
      const hlo::HloInstruction& in = module_.at(gte);
      Buffer& out = tuple[static_cast<size_t>(in.tuple_index)];
      if (!out.defined()) out = storage_for(fusion, in, values, donated, arena, taken);  // once per element
    }
    std::vector<void*> pointers_out;
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (!tuple[k].defined()) tuple[k] = Buffer(outputs[k]->shape, outputs[k]->dtype);  // an element nothing reads
      pointers_out.push_back(tuple[k].raw());
    }
    std::vector<const void*> pointers;
    for (int o : fusion.operands) pointers.push_back(values[o].raw());
    kernels_.at(fusion.id)(pointers.data(), pointers_out.data());
    return tuple;
  }

  // What a trace records of an instruction: category nullptr for none.
  struct Label {
    const char* category = nullptr;
    std::string name;
    std::vector<std::pair<const char*, runtime::TraceArgValue>> args;
  };

  // A fusion run on the interpreter: counts InterpreterFallback and InterpreterFallback.<fusion>.
  void count_if_fallback(const hlo::HloInstruction& in) const {
    if (in.opcode != HloOpcode::kFusion) return;
    const auto fallback = fallback_counters_.find(in.id);
    if (fallback == fallback_counters_.end()) return;
    static runtime::Counter& all = runtime::counter("InterpreterFallback");
    all.add(1);
    fallback->second->add(1);
  }

  // The trace's event for `in` (begun at `t0`): kernel, dot, collective or interpreter; none for no work.
  void trace_instruction(const hlo::HloInstruction& in, int64_t t0) const {
    const Label& label = labels_[in.id];
    if (label.category) runtime::record_span(label.category, label.name, t0, runtime::now_ns(), label.args);
  }

  // Fusions with neither a kernel nor a oneDNN matmul run on the interpreter: say why, once, and count them.
  void find_fallbacks() {
    for (const auto& in : module_.instructions) {
      if (in.opcode != HloOpcode::kFusion || kernels_.count(in.id) || matmuls_.count(in.id)) continue;
      std::string reason;
      if (emit_fusion_kernel(in, "kernel", &reason)) {
        reason = "no C++ compiler ran to build its kernel ($CXX or c++)";  // the compiler warned once for all of them
      } else {
        warn_fallback_once(module_, in, reason);
      }
      fallback_reasons_[in.id] = reason;
      fallback_counters_[in.id] = &runtime::counter("InterpreterFallback." + in.name());
    }
  }

  // The trace events' names and arguments, made once.
  void label_instructions() {
    labels_.resize(module_.instructions.size());
    for (const auto& in : module_.instructions) {
      Label& l = labels_[in.id];
      switch (in.opcode) {
        case HloOpcode::kParameter:
        case HloOpcode::kConstant:
        case HloOpcode::kTuple:
        case HloOpcode::kGetTupleElement:
        case HloOpcode::kReshape: continue;  // no work
        default: break;
      }
      l.name = in.name();
      l.args.emplace_back("shape", hlo::shape_text(module_, in));
      if (auto matmul = matmuls_.find(in.id); matmul != matmuls_.end()) {
        l.category = "dot";
        const hlo::HloModule& m = in.opcode == HloOpcode::kDot ? module_ : *in.fused_computation;
        const hlo::HloInstruction& dot = in.opcode == HloOpcode::kDot ? in : *std::find_if(m.instructions.begin(), m.instructions.end(),
                                                                                           [](const hlo::HloInstruction& i) { return i.opcode == HloOpcode::kDot; });
        l.args.emplace_back("lhs", hlo::shape_text(m, m.at(dot.operands[0])));
        l.args.emplace_back("rhs", hlo::shape_text(m, m.at(dot.operands[1])));
        l.args.emplace_back("dtype", xla_name(dot.dtype));
        l.args.emplace_back("onednn", matmul->second->implementation());
        if (in.opcode == HloOpcode::kFusion) l.args.emplace_back("epilogue", fused_ops(in));
      } else if (kernels_.count(in.id)) {
        l.category = "kernel";
        l.args.emplace_back("fusion_kind", hlo::fusion_kind_name(in.fusion_kind));
        l.args.emplace_back("ops", fused_ops(in));
      } else if (hlo::is_collective(in.opcode) || hlo::is_async_collective_done(in.opcode)) {
        // A start's exchange itself is traced on the device's collective thread; its done shows the wait.
        l.category = "collective";
      } else {
        l.category = "interpreter";
        if (auto fallback = fallback_reasons_.find(in.id); fallback != fallback_reasons_.end()) {
          l.args.emplace_back("fusion_kind", hlo::fusion_kind_name(in.fusion_kind));
          l.args.emplace_back("ops", fused_ops(in));
          l.args.emplace_back("fallback", fallback->second);
        }
      }
    }
  }

  // Operands of a loop fusion that its kernel reads only at the output's own
  // linear index (element i of the operand feeds element i of the output, never
  // through a broadcast) with the output's shape and dtype: the kernel may write
  // its output over such an operand once nothing else needs it (XLA's
  // CanShareOperandBufferWithUser for elementwise fusions). `output` is the
  // fusion itself, or the value of one element of a multi-output fusion.
  static std::vector<size_t> in_place_candidates(const hlo::HloInstruction& fusion, const hlo::HloInstruction& output) {
    std::vector<size_t> out;
    if (fusion.opcode != HloOpcode::kFusion || fusion.fusion_kind != hlo::FusionKind::kLoop) return out;
    const hlo::HloModule& body = *fusion.fused_computation;
    std::vector<bool> broadcast_read(body.instructions.size(), false);
    for (const auto& in : body.instructions) {
      if (in.opcode == HloOpcode::kBroadcast) broadcast_read[in.operands[0]] = true;
    }
    for (const auto& in : body.instructions) {
      if (in.opcode != HloOpcode::kParameter || broadcast_read[in.id]) continue;
      if (in.dtype == output.dtype && numel(in.shape) == numel(output.shape)) out.push_back(static_cast<size_t>(in.parameter_number));
    }
    return out;
  }

  // Storage the kernel (or in-place scatter) `in` may write `output` into (its
  // own value, or an element's get-tuple-element): a candidate operand of `in`
  // read for the last time here, not in `taken`, owned by nobody else (an
  // intermediate) or donated by the caller (an argument). Undefined when there
  // is none; a position it returns is added to `taken`.
  Buffer reusable_operand(const hlo::HloInstruction& in, const hlo::HloInstruction& output, const std::vector<size_t>& candidates,
                          const std::vector<Buffer>& values, const std::vector<bool>& donated, std::vector<int>& taken) const {
    for (size_t k : candidates) {
      if (std::count(taken.begin(), taken.end(), static_cast<int>(k))) continue;
      const int o = in.operands[k];
      if (last_use_[o] != in.id || !values[o].defined()) continue;
      const hlo::HloInstruction& producer = module_.at(o);
      const bool donated_argument = producer.opcode == HloOpcode::kParameter && !donated.empty() &&
                                    donated[static_cast<size_t>(producer.parameter_number)];
      // An exchange still reading it (a donated argument's storage is not
      // protected by sharing: the caller's reference is counted too).
      if (const auto exchange = exchange_end_.find(o); exchange != exchange_end_.end() && exchange->second > in.id) continue;
      if (!donated_argument && (producer.opcode == HloOpcode::kParameter || !values[o].unique())) continue;
      // External memory (an aliased DLPack input) is its owner's to write, donated or not.
      if (!values[o].writable()) continue;
      // The same value read through two operands must not be overwritten under the other.
      if (std::count(in.operands.begin(), in.operands.end(), o) != 1) continue;
      taken.push_back(static_cast<int>(k));
      return values[o].reshaped(output.shape);
    }
    return Buffer();
  }

  // LAZYTRAIN_PROFILE_STDERR: adds `ns` to its kind's total; prints an instruction over 2 ms.
  void note_profile(const hlo::HloInstruction& in, bool generated, bool matmul, int64_t ns, std::map<std::string, double>& totals) const {
    const double ms = static_cast<double>(ns) * 1e-6;
    totals[generated                                   ? std::string("generated kernels")
           : matmul && in.opcode == HloOpcode::kFusion ? std::string("dot with epilogue")
                                                       : hlo::opcode_name(in.opcode)] += ms;
    if (ms > 2) {
      std::fprintf(stderr, "[profile] %8.1f ms  %s %s%s\n", ms, in.name().c_str(), hlo::shape_text(module_, in).c_str(), generated ? " (generated)" : "");
    }
  }

  // One line per execution: where its time went, largest first.
  void print_totals(const std::map<std::string, double>& totals) const {
    std::vector<std::pair<double, std::string>> sorted;
    double all = 0;
    for (const auto& [kind, ms] : totals) {
      sorted.emplace_back(ms, kind);
      all += ms;
    }
    std::sort(sorted.rbegin(), sorted.rend());
    std::string line;
    for (const auto& [ms, kind] : sorted) {
      if (ms >= 0.5) line += ", " + kind + " " + std::to_string(static_cast<int>(ms + 0.5));
    }
    std::fprintf(stderr, "[profile] %s: %.1f ms in all%s (ms)\n", module_.name.c_str(), all, line.c_str());
  }

  hlo::HloModule module_;
  std::shared_ptr<SharedLibrary> library_;  // keeps the kernels loaded
  std::map<int, KernelFn> kernels_;
  std::vector<int> last_use_;
  std::map<int, std::vector<size_t>> in_place_operands_;  // kernel, scatter or get-tuple-element -> operand indices (of the fusion, for an element)
  std::map<int, std::vector<int>> elements_;               // multi-output fusion -> its get-tuple-elements
  std::map<int, int> exchange_end_;                       // value an asynchronous collective reads -> its last done
  std::map<int, std::unique_ptr<OneDnnMatmul>> matmuls_;  // dots and dot epilogue fusions
  std::map<int, Buffer> constants_;                       // each constant's value, copied once
  std::map<int, std::string> fallback_reasons_;           // fusions run on the interpreter, and why
  std::map<int, runtime::Counter*> fallback_counters_;    // their InterpreterFallback.<name> counters
  std::vector<Label> labels_;                             // by instruction id
  // CompilerOptions::profile (LAZYTRAIN_PROFILE_STDERR): per-execution totals by instruction kind.
  bool profile_ = false;
  KernelIsa isa_;  // the host kernels' (kernels/) AVX-512 or AVX2 paths
  hlo::BufferAssignment assignment_;
  std::mutex arena_mutex_;
  std::vector<Buffer> free_arenas_;
};

}  // namespace

std::unique_ptr<Executable> make_cpu_executable(hlo::HloModule module, std::shared_ptr<SharedLibrary> library, std::map<int, KernelFn> kernels,
                                                bool profile, std::optional<KernelIsa> isa) {
  // Unset: LAZYTRAIN_KERNEL_ISA's choice (CompilerOptions::kernel_isa's default).
  const KernelIsa resolved = isa ? *isa : resolve_kernel_isa(environment().kernel_isa);
  return std::make_unique<CpuExecutable>(std::move(module), std::move(library), std::move(kernels), profile, resolved);
}

}  // namespace lazytrain::backend::cpu
