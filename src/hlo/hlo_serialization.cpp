#include "hlo/hlo_serialization.h"

#include <cstring>

#include "core/error.h"

namespace lazytrain::hlo {

namespace {

// 2: replica_groups, channel_id; 3: custom_call_target, backend_config; 4: tuple_index; 5: metadata;
// 6: sharding (its text, "" for none)
constexpr uint32_t kFormat = 8;  // 8: the asynchronous collectives (*-start, *-done)

class Writer {
 public:
  void u64(uint64_t v) { out_.append(reinterpret_cast<const char*>(&v), 8); }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void str(std::string_view s) {
    u64(s.size());
    out_.append(s);
  }
  void ints(const std::vector<int64_t>& v) {
    u64(v.size());
    for (int64_t x : v) i64(x);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  uint64_t u64() {
    need(8);
    uint64_t v;
    std::memcpy(&v, in_.data() + pos_, 8);
    pos_ += 8;
    return v;
  }
  int64_t i64() { return static_cast<int64_t>(u64()); }
  std::string str() {
    uint64_t n = u64();
    need(n);
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  std::vector<int64_t> ints() {
    uint64_t n = u64();
    need(n * 8);
    std::vector<int64_t> v(n);
    for (auto& x : v) x = i64();
    return v;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  void need(uint64_t n) const {
    if (n > in_.size() - pos_) throw Error("[hlo deserialize] truncated input at byte " + std::to_string(pos_));
  }
  std::string_view in_;
  size_t pos_ = 0;
};

void write_module(Writer& w, const HloModule& m) {
  w.str(m.name);
  w.i64(m.num_parameters);
  w.i64(m.root);
  w.i64(m.num_partitions);
  w.u64(m.instructions.size());
  for (const HloInstruction& in : m.instructions) {
    w.i64(in.id);
    w.i64(static_cast<int64_t>(in.opcode));
    w.ints(in.shape);
    w.i64(static_cast<int64_t>(in.dtype));
    w.ints(std::vector<int64_t>(in.operands.begin(), in.operands.end()));
    w.ints(in.dimensions);
    w.ints(in.slice_starts);
    w.ints(in.slice_limits);
    w.ints(in.slice_strides);
    w.i64(static_cast<int64_t>(in.direction));
    w.i64(static_cast<int64_t>(in.reduce_kind));
    w.ints(in.dot.lhs_batch_dimensions);
    w.ints(in.dot.rhs_batch_dimensions);
    w.ints(in.dot.lhs_contracting_dimensions);
    w.ints(in.dot.rhs_contracting_dimensions);
    w.i64(in.parameter_number);
    w.i64(in.literal.defined() ? 1 : 0);
    if (in.literal.defined()) {
      w.ints(in.literal.shape());
      w.i64(static_cast<int64_t>(in.literal.dtype()));
      w.str(std::string_view(static_cast<const char*>(in.literal.raw()), static_cast<size_t>(in.literal.nbytes())));
    }
    w.u64(in.replica_groups.size());
    for (const auto& group : in.replica_groups) w.ints(group);
    w.i64(in.channel_id);
    w.str(in.custom_call_target);
    w.str(in.backend_config);
    w.i64(in.tuple_index);
    w.str(in.metadata.op_type);
    w.str(in.metadata.source_file);
    w.i64(in.metadata.source_line);
    w.i64(in.metadata.ir_position);
    w.str(in.sharding ? in.sharding->to_string() : "");
    w.i64(static_cast<int64_t>(in.fusion_kind));
    w.i64(in.fused_computation ? 1 : 0);
    if (in.fused_computation) write_module(w, *in.fused_computation);
  }
}

template <typename E>
E checked_enum(int64_t v, int64_t count, const char* what) {
  if (v < 0 || v >= count) throw Error(std::string("[hlo deserialize] invalid ") + what + " " + std::to_string(v));
  return static_cast<E>(v);
}

HloModule read_module(Reader& r) {
  HloModule m;
  m.name = r.str();
  m.num_parameters = static_cast<int>(r.i64());
  m.root = static_cast<int>(r.i64());
  m.num_partitions = r.i64();
  uint64_t n = r.u64();
  if (n > (uint64_t{1} << 24)) throw Error("[hlo deserialize] implausible instruction count " + std::to_string(n));
  for (uint64_t k = 0; k < n; ++k) {
    HloInstruction in;
    in.id = static_cast<int>(r.i64());
    in.opcode = checked_enum<HloOpcode>(r.i64(), kHloOpcodeCount, "opcode");
    in.shape = r.ints();
    in.dtype = checked_enum<DType>(r.i64(), kNumDTypes, "dtype");
    for (int64_t o : r.ints()) in.operands.push_back(static_cast<int>(o));
    in.dimensions = r.ints();
    in.slice_starts = r.ints();
    in.slice_limits = r.ints();
    in.slice_strides = r.ints();
    in.direction = checked_enum<ComparisonDirection>(r.i64(), 6, "comparison direction");
    in.reduce_kind = checked_enum<ReduceKind>(r.i64(), 5, "reduce kind");
    in.dot.lhs_batch_dimensions = r.ints();
    in.dot.rhs_batch_dimensions = r.ints();
    in.dot.lhs_contracting_dimensions = r.ints();
    in.dot.rhs_contracting_dimensions = r.ints();
    in.parameter_number = r.i64();
    if (r.i64()) {
      Shape s = r.ints();
      DType t = checked_enum<DType>(r.i64(), kNumDTypes, "dtype");
      std::string bytes = r.str();
      Literal b(s, t);
      if (static_cast<int64_t>(bytes.size()) != b.nbytes()) throw Error("[hlo deserialize] literal size mismatch");
      if (!bytes.empty()) std::memcpy(b.mutable_raw(), bytes.data(), bytes.size());
      in.literal = std::move(b);
    }
    uint64_t groups = r.u64();
    if (groups > (uint64_t{1} << 20)) throw Error("[hlo deserialize] implausible replica group count " + std::to_string(groups));
    for (uint64_t g = 0; g < groups; ++g) in.replica_groups.push_back(r.ints());
    in.channel_id = r.i64();
    in.custom_call_target = r.str();
    in.backend_config = r.str();
    in.tuple_index = r.i64();
    in.metadata.op_type = r.str();
    in.metadata.source_file = r.str();
    in.metadata.source_line = r.i64();
    in.metadata.ir_position = r.i64();
    if (std::string sharding = r.str(); !sharding.empty()) in.sharding = HloSharding::parse(sharding);
    in.fusion_kind = checked_enum<FusionKind>(r.i64(), 3, "fusion kind");
    if (r.i64()) in.fused_computation = std::make_shared<HloModule>(read_module(r));
    m.instructions.push_back(std::move(in));
  }
  return m;
}

}  // namespace

std::string serialize_module(const HloModule& module) {
  Writer w;
  w.u64(kFormat);
  write_module(w, module);
  return w.take();
}

HloModule deserialize_module(std::string_view bytes) {
  Reader r(bytes);
  uint64_t format = r.u64();
  if (format != kFormat) throw Error("[hlo deserialize] format " + std::to_string(format) + ", expected " + std::to_string(kFormat));
  HloModule m = read_module(r);
  if (!r.done()) throw Error("[hlo deserialize] trailing bytes");
  verify(m);
  return m;
}

}  // namespace lazytrain::hlo
