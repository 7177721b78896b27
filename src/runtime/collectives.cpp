#include "runtime/collectives.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "core/half.h"
#include "runtime/local_rendezvous.h"
#include "runtime/mpi_world.h"
#include "runtime/profiler.h"

namespace lazytrain::runtime {

namespace {

struct WorldState {
  std::mutex mutex;
  ReplicaWorld world;
  bool initialised = false;
  std::atomic<double> timeout_seconds{300.0};
  std::atomic<int> in_flight{0};  // replicas inside a collective or rendezvous
  // One meeting point per (channel, local members of a group); kept for the process.
  std::map<std::pair<bool, std::vector<int64_t>>, std::unique_ptr<LocalRendezvous>> rendezvous;
};
WorldState& world_state() {
  static WorldState* s = new WorldState();  // never destroyed: replica threads may outlive statics
  return *s;
}

ReplicaWorld world_locked(WorldState& s) {
  if (!s.initialised) {
    if (MpiWorld* mpi = MpiWorld::get()) {
      s.world.num_processes = mpi->size();
      s.world.process_rank = mpi->rank();
    }
    s.initialised = true;
  }
  return s.world;
}

// Counts a replica inside a collective for set_local_replicas' check.
struct InFlight {
  InFlight() { ++world_state().in_flight; }
  ~InFlight() { --world_state().in_flight; }
};

std::string ordinals_text(const std::vector<int64_t>& ordinals) {
  std::string s = "{";
  for (size_t i = 0; i < ordinals.size(); ++i) s += (i ? "," : "") + std::to_string(ordinals[i]);
  return s + "}";
}

// Arguments of a collective's trace event: its input, the replicas of its
// group and whether they span processes.
void describe(TraceMe& trace, const Buffer& x, size_t replicas, bool spans_processes) {
  if (!trace) return;
  trace.arg("bytes", x.nbytes()).arg("shape", xla_name(x.dtype()) + shape_str(x.shape())).arg("replicas", static_cast<int64_t>(replicas));
  trace.arg("across_processes", static_cast<int64_t>(spans_processes));
}

// What one replica knows of its group for one collective.
struct GroupView {
  std::vector<int64_t> members;  // global ordinals, group order
  int position = 0;              // this replica's index in `members`
  std::vector<int64_t> local;    // the members in this process, group order
  int local_index = 0;           // this replica's index in `local`
  bool spans_processes = false;
  LocalRendezvous* rendezvous = nullptr;
};

GroupView view_of(const ReplicaGroups& groups, bool host_channel, const std::string& what) {
  WorldState& s = world_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const ReplicaWorld world = world_locked(s);
  const Device device = current_device();
  check(device.ordinal < world.local_replicas, what,
        device.to_string() + " is not a replica: this process runs " + std::to_string(world.local_replicas) + " (cpu:0.." +
            "cpu:" + std::to_string(world.local_replicas - 1) + ")");
  const int64_t me = world.global_ordinal(device.ordinal);
  GroupView v;
  if (groups.empty()) {
    for (int64_t r = 0; r < world.world_size(); ++r) v.members.push_back(r);
  } else {
    for (const auto& g : groups) {
      if (std::find(g.begin(), g.end(), me) != g.end()) v.members = g;
    }
    check(!v.members.empty(), what, "replica " + std::to_string(me) + " is in none of the replica groups");
  }
  for (size_t i = 0; i < v.members.size(); ++i) {
    const int64_t r = v.members[i];
    check(r < world.world_size(), what, "replica group " + ordinals_text(v.members) + " names replica " + std::to_string(r) +
                                            " of a world of " + std::to_string(world.world_size()));
    if (r == me) v.position = static_cast<int>(i);
    if (r / world.local_replicas == world.process_rank) {
      if (r == me) v.local_index = static_cast<int>(v.local.size());
      v.local.push_back(r);
    } else {
      v.spans_processes = true;
    }
  }
  if (v.spans_processes) {
    bool whole_world = static_cast<int>(v.members.size()) == world.world_size();
    for (size_t i = 0; whole_world && i < v.members.size(); ++i) whole_world = v.members[i] == static_cast<int64_t>(i);
    check(whole_world, what, "replica group " + ordinals_text(v.members) +
                                 " spans processes without being every replica in order; across processes only that group is supported");
  }
  auto& slot = s.rendezvous[{host_channel, v.local}];
  if (!slot) slot = std::make_unique<LocalRendezvous>(v.local);
  v.rendezvous = slot.get();
  return v;
}

// out[i] = inputs[0][i] op inputs[1][i] op ... over [begin, end), inputs in
// order; one op per loop, two inputs at a time, so the loops vectorise.
template <typename T, typename Op>
void reduce_loop(const std::vector<const T*>& inputs, T* out, int64_t begin, int64_t end, Op f) {
  for (int64_t i = begin; i < end; ++i) out[i] = inputs[0][i];
  for (size_t k = 1; k < inputs.size(); ++k) {
    const T* __restrict in = inputs[k];
    T* __restrict acc = out;
    for (int64_t i = begin; i < end; ++i) acc[i] = f(acc[i], in[i]);
  }
}

template <typename T>
void reduce_typed(ReduceOp op, const std::vector<const T*>& inputs, T* out, int64_t begin, int64_t end) {
  switch (op) {
    case ReduceOp::kSum: return reduce_loop(inputs, out, begin, end, [](T a, T b) { return a + b; });
    case ReduceOp::kProduct: return reduce_loop(inputs, out, begin, end, [](T a, T b) { return a * b; });
    case ReduceOp::kMax: return reduce_loop(inputs, out, begin, end, [](T a, T b) { return std::max(a, b); });
    case ReduceOp::kMin: return reduce_loop(inputs, out, begin, end, [](T a, T b) { return std::min(a, b); });
  }
}

// 16-bit floats: accumulated in float, rounded once.
template <typename H>
void reduce_half(ReduceOp op, const std::vector<const H*>& inputs, H* out, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    float acc = static_cast<float>(inputs[0][i]);
    for (size_t k = 1; k < inputs.size(); ++k) {
      const float v = static_cast<float>(inputs[k][i]);
      switch (op) {
        case ReduceOp::kSum: acc += v; break;
        case ReduceOp::kProduct: acc *= v; break;
        case ReduceOp::kMax: acc = std::max(acc, v); break;
        case ReduceOp::kMin: acc = std::min(acc, v); break;
      }
    }
    out[i] = H(acc);
  }
}

template <typename T>
std::vector<const T*> typed(const std::vector<const void*>& inputs) {
  std::vector<const T*> out;
  for (const void* p : inputs) out.push_back(static_cast<const T*>(p));
  return out;
}

// out[begin, end) = the reduction of inputs[*][begin, end), inputs in order.
void reduce_range(DType dtype, ReduceOp op, const std::vector<const void*>& inputs, void* out, int64_t begin, int64_t end,
                  const std::string& what) {
  switch (dtype) {
    case DType::kFloat32: return reduce_typed(op, typed<float>(inputs), static_cast<float*>(out), begin, end);
    case DType::kInt32: return reduce_typed(op, typed<int32_t>(inputs), static_cast<int32_t*>(out), begin, end);
    case DType::kInt64: return reduce_typed(op, typed<int64_t>(inputs), static_cast<int64_t*>(out), begin, end);
    case DType::kBFloat16: return reduce_half(op, typed<BFloat16>(inputs), static_cast<BFloat16*>(out), begin, end);
    case DType::kFloat16: return reduce_half(op, typed<Half>(inputs), static_cast<Half*>(out), begin, end);
    case DType::kBool: break;
  }
  throw Error("[" + what + "] cannot reduce " + xla_name(dtype));
}

// A round's guard: ends the round (final sync) on every path out of a
// collective, so a member never frees a buffer another still reads. When the
// collective threw, the world is aborted instead (the others must not wait).
class Round {
 public:
  Round(const GroupView& v, std::string what) : v_(v), what_(std::move(what)) {}
  ~Round() noexcept(false) {
    if (std::uncaught_exceptions() > uncaught_) {
      set_collective_abort("replica " + std::to_string(v_.members[static_cast<size_t>(v_.position)]) + " failed in " + what_);
      return;
    }
    v_.rendezvous->sync(v_.local_index, what_, collective_timeout());
  }

 private:
  const GroupView& v_;
  std::string what_;
  int uncaught_ = std::uncaught_exceptions();
};

// Every member of the group must pass an input of one shape and dtype: a
// shape computed from the ordinal is a user's bug, and reducing anyway would
// read past the smaller inputs. Error naming each replica's input otherwise
// (every member sees the same slots, so every member throws it).
void check_same_inputs(const GroupView& v, const std::vector<LocalRendezvous::Slot>& slots, const std::string& what) {
  const Buffer& first = slots[0].in;
  const bool same = std::all_of(slots.begin(), slots.end(), [&](const LocalRendezvous::Slot& s) {
    return s.in.shape() == first.shape() && s.in.dtype() == first.dtype();
  });
  if (same) return;
  std::string inputs;
  for (size_t k = 0; k < slots.size(); ++k) {
    inputs += (k ? ", " : "") + std::string("replica ") + std::to_string(v.local[k]) + " " + xla_name(slots[k].in.dtype()) + shape_str(slots[k].in.shape());
  }
  throw Error("[" + what + "] the replicas passed tensors of different shapes or dtypes: " + inputs +
              "; every replica must pass the same shape and dtype (is a shape computed from the ordinal?)");
}

}  // namespace

const ReplicaWorld& replica_world() {
  WorldState& s = world_state();
  static thread_local ReplicaWorld copy;
  std::lock_guard<std::mutex> lock(s.mutex);
  copy = world_locked(s);
  return copy;
}

void set_local_replicas(int n) {
  check(n >= 1, "set_local_replicas", "a process runs at least 1 replica, got " + std::to_string(n));
  WorldState& s = world_state();
  check(s.in_flight.load() == 0, "set_local_replicas", "replicas are inside a collective: change the replica count between runs");
  std::lock_guard<std::mutex> lock(s.mutex);
  world_locked(s);
  s.world.local_replicas = n;
  s.rendezvous.clear();
  clear_collective_abort();
}

namespace {
std::atomic<bool> spmd_mode_on{false};
}  // namespace

void set_spmd_mode(bool on) { spmd_mode_on = on; }
bool spmd_mode() { return spmd_mode_on; }

void set_collective_timeout(double seconds) {
  check(seconds > 0, "collective_timeout", "must be > 0 seconds, got " + std::to_string(seconds));
  world_state().timeout_seconds.store(seconds);
}

double collective_timeout() { return world_state().timeout_seconds.load(); }

int global_ordinal(const Device& device) {
  const ReplicaWorld& world = replica_world();
  check(device.ordinal < world.local_replicas, "ordinal",
        device.to_string() + " is not a replica: this process runs " + std::to_string(world.local_replicas));
  return world.global_ordinal(device.ordinal);
}

Buffer all_reduce(const Buffer& x, ReduceOp op, const ReplicaGroups& groups) {
  const std::string what = "all-reduce";
  TraceMe trace("collective", what);
  InFlight in_flight;
  GroupView v = view_of(groups, false, what);
  describe(trace, x, v.members.size(), v.spans_processes);
  if (v.members.size() == 1) return x;
  const double timeout = collective_timeout();
  Buffer out(x.shape(), x.dtype(), current_device());
  Round round(v, what);
  LocalRendezvous::Slot mine;
  mine.in = x;
  mine.out = out;
  const auto& slots = v.rendezvous->arrive(v.local_index, mine, what, timeout);
  check_same_inputs(v, slots, what);
  // This member reduces its chunk of the elements; then it copies the others' chunks.
  const int64_t n = x.numel(), item = itemsize(x.dtype());
  const int64_t L = v.rendezvous->size();
  auto chunk_begin = [&](int64_t k) { return n * k / L; };
  std::vector<const void*> inputs;
  for (const auto& slot : slots) inputs.push_back(slot.in.raw());
  reduce_range(x.dtype(), op, inputs, out.raw(), chunk_begin(v.local_index), chunk_begin(v.local_index + 1), what);
  v.rendezvous->sync(v.local_index, what, timeout);
  for (int64_t k = 0; k < L; ++k) {
    if (k == v.local_index) continue;
    std::memcpy(static_cast<char*>(out.raw()) + chunk_begin(k) * item, static_cast<const char*>(slots[static_cast<size_t>(k)].out.raw()) + chunk_begin(k) * item,
                static_cast<size_t>((chunk_begin(k + 1) - chunk_begin(k)) * item));
  }
  if (v.spans_processes) {
    // The process's sum, reduced with the other processes' by the leader, then copied by the others.
    v.rendezvous->sync(v.local_index, what, timeout);
    if (v.local_index == 0) {
      TraceMe mpi("collective", "MPI all-reduce");
      if (mpi) mpi.arg("bytes", out.nbytes());
      MpiWorld::get()->all_reduce(out.raw(), n, x.dtype(), op, timeout, what);
    }
    v.rendezvous->sync(v.local_index, what, timeout);
    if (v.local_index != 0) std::memcpy(out.raw(), slots[0].out.raw(), static_cast<size_t>(n * item));
  }
  return out;
}

Buffer all_gather(const Buffer& x, int64_t dimension, const ReplicaGroups& groups) {
  const std::string what = "all-gather";
  TraceMe trace("collective", what);
  InFlight in_flight;
  GroupView v = view_of(groups, false, what);
  describe(trace, x, v.members.size(), v.spans_processes);
  check(dimension >= 0 && dimension < static_cast<int64_t>(x.shape().size()), what, "dimension out of range");
  const int64_t G = static_cast<int64_t>(v.members.size());
  Shape shape = x.shape();
  shape[static_cast<size_t>(dimension)] *= G;
  Buffer out(shape, x.dtype(), current_device());
  const int64_t bytes = x.nbytes();
  // Across processes, the leader gathers every member's input into one block, member-major.
  LocalRendezvous::Slot mine;
  mine.in = x;
  mine.out = out;
  if (v.spans_processes && v.local_index == 0) mine.scratch = std::make_shared<std::vector<char>>(static_cast<size_t>(bytes * G));
  Round round(v, what);
  const auto& slots = v.rendezvous->arrive(v.local_index, mine, what, collective_timeout());
  check_same_inputs(v, slots, what);
  std::vector<const char*> sources(static_cast<size_t>(G));
  if (v.spans_processes) {
    const int64_t L = v.rendezvous->size();
    if (v.local_index == 0) {
      std::vector<char> local(static_cast<size_t>(bytes * L));
      for (int64_t k = 0; k < L; ++k) std::memcpy(local.data() + k * bytes, slots[static_cast<size_t>(k)].in.raw(), static_cast<size_t>(bytes));
      TraceMe mpi("collective", "MPI all-gather");
      if (mpi) mpi.arg("bytes", bytes * L);
      MpiWorld::get()->all_gather(local.data(), mine.scratch->data(), bytes * L, collective_timeout(), what);
    }
    v.rendezvous->sync(v.local_index, what, collective_timeout());
    for (int64_t g = 0; g < G; ++g) sources[static_cast<size_t>(g)] = slots[0].scratch->data() + g * bytes;
  } else {
    for (int64_t g = 0; g < G; ++g) sources[static_cast<size_t>(g)] = static_cast<const char*>(slots[static_cast<size_t>(g)].in.raw());
  }
  // out[outer][g][inner] = source g's [outer][inner].
  int64_t outer = 1;
  for (int64_t d = 0; d < dimension; ++d) outer *= x.shape()[static_cast<size_t>(d)];
  const int64_t inner = outer == 0 ? 0 : bytes / std::max<int64_t>(outer, 1);
  char* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t g = 0; g < G; ++g) std::memcpy(dst + (o * G + g) * inner, sources[static_cast<size_t>(g)] + o * inner, static_cast<size_t>(inner));
  }
  return out;
}

Buffer reduce_scatter(const Buffer& x, ReduceOp op, int64_t dimension, const ReplicaGroups& groups) {
  const std::string what = "reduce-scatter";
  TraceMe trace("collective", what);
  if (trace) trace.arg("bytes", x.nbytes()).arg("shape", xla_name(x.dtype()) + shape_str(x.shape()));
  check(dimension >= 0 && dimension < static_cast<int64_t>(x.shape().size()), what, "dimension out of range");
  Buffer reduced = all_reduce(x, op, groups);
  GroupView v = view_of(groups, false, what);
  const int64_t G = static_cast<int64_t>(v.members.size());
  Shape shape = x.shape();
  check(shape[static_cast<size_t>(dimension)] % G == 0, what, "dimension " + std::to_string(dimension) + " of " + shape_str(shape) +
                                                                  " does not split into " + std::to_string(G) + " shards");
  shape[static_cast<size_t>(dimension)] /= G;
  Buffer out(shape, x.dtype(), current_device());
  int64_t outer = 1;
  for (int64_t d = 0; d < dimension; ++d) outer *= x.shape()[static_cast<size_t>(d)];
  const int64_t shard = outer == 0 ? 0 : out.nbytes() / std::max<int64_t>(outer, 1);
  const char* src = static_cast<const char*>(reduced.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * shard, src + (o * G + v.position) * shard, static_cast<size_t>(shard));
  return out;
}

std::vector<double> host_all_gather(const std::string& tag, const std::vector<double>& values) {
  const std::string what = "rendezvous '" + tag + "'";
  if (spmd_mode() && replica_world().local_replicas > 1) {
    // SPMD: one thread a process stands for all its devices. Alone, it meets itself.
    check(replica_world().num_processes == 1, what,
          "in SPMD mode processes meet on the host only with one device each, this one has " + std::to_string(replica_world().local_replicas));
    return values;
  }
  TraceMe trace("collective", "rendezvous");
  if (trace) trace.arg("tag", tag).arg("values", static_cast<int64_t>(values.size()));
  InFlight in_flight;
  GroupView v = view_of({}, true, what);
  const uint64_t tag_hash = std::hash<std::string>{}(tag) ^ (values.size() * 0x9E3779B97F4A7C15ull);
  const double timeout = collective_timeout();
  const int64_t L = v.rendezvous->size();
  const int64_t count = static_cast<int64_t>(values.size());
  const int64_t total = count * static_cast<int64_t>(v.members.size());
  LocalRendezvous::Slot mine;
  mine.label = tag;
  mine.tag = tag_hash;
  mine.values = std::make_shared<const std::vector<double>>(values);
  // The leader's block: every replica's values, in ordinal order.
  if (v.local_index == 0) mine.scratch = std::make_shared<std::vector<char>>(static_cast<size_t>(total) * sizeof(double));
  Round round(v, what);
  const auto& slots = v.rendezvous->arrive(v.local_index, mine, what, timeout);
  std::string differ;
  for (size_t k = 0; k < slots.size(); ++k) {
    if (slots[k].tag != tag_hash) differ += (differ.empty() ? "" : ", ") + std::to_string(v.local[k]) + " at '" + slots[k].label + "'";
  }
  if (!differ.empty()) throw Error("[" + what + "] replicas reached a different rendezvous (or passed another number of values): " + differ);
  if (v.local_index == 0) {
    std::vector<double> local;
    for (const auto& slot : slots) local.insert(local.end(), slot.values->begin(), slot.values->end());
    double* gathered = reinterpret_cast<double*>(mine.scratch->data());
    if (v.spans_processes) {
      // Each process's block starts with its tag, so the processes check theirs too.
      const int64_t block = 1 + count * L;
      std::vector<double> ours(static_cast<size_t>(block));
      std::memcpy(ours.data(), &tag_hash, sizeof(double));
      std::copy(local.begin(), local.end(), ours.begin() + 1);
      const int64_t P = static_cast<int64_t>(v.members.size()) / L;
      std::vector<double> all(static_cast<size_t>(block * P));
      MpiWorld::get()->host_all_gather(ours.data(), all.data(), block * static_cast<int64_t>(sizeof(double)), timeout, what);
      std::string ranks;
      for (int64_t p = 0; p < P; ++p) {
        uint64_t theirs = 0;
        std::memcpy(&theirs, all.data() + p * block, sizeof(double));
        if (theirs != tag_hash) ranks += (ranks.empty() ? "" : ", ") + std::to_string(p);
        std::copy(all.begin() + p * block + 1, all.begin() + (p + 1) * block, gathered + p * count * L);
      }
      if (!ranks.empty()) throw Error("[" + what + "] process ranks " + ranks + " reached a different rendezvous (or passed another number of values)");
    } else {
      std::copy(local.begin(), local.end(), gathered);
    }
  }
  v.rendezvous->sync(v.local_index, what, timeout);
  const double* result = reinterpret_cast<const double*>(slots[0].scratch->data());
  return std::vector<double>(result, result + total);
}

void host_rendezvous(const std::string& tag) { host_all_gather(tag, {}); }

void abort_collectives(const std::string& reason) { set_collective_abort(reason); }

}  // namespace lazytrain::runtime
