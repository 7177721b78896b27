#include "hlo/hlo_sharding.h"

#include <functional>

#include <algorithm>
#include <cctype>
#include <numeric>
#include <set>

#include "core/error.h"

namespace lazytrain::hlo {
namespace {

[[noreturn]] void fail(const std::string& message) { throw Error("[HloSharding] " + message); }

std::string join(const std::vector<int64_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out;
}

int64_t product(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<>()); }

bool is_iota(const std::vector<int64_t>& devices) {
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// The devices of XLA's iota tile assignment `<=[reshape]T(perm)`: 0 .. n-1
// laid out as `reshape` (row-major), transposed by `perm`, read row-major.
std::vector<int64_t> iota_devices(const std::vector<int64_t>& reshape, const std::vector<int64_t>& perm) {
  const size_t rank = reshape.size();
  std::vector<int64_t> transposed(rank), strides(rank, 1);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * reshape[d];
  for (size_t d = 0; d < rank; ++d) transposed[d] = reshape[static_cast<size_t>(perm[d])];
  std::vector<int64_t> out(static_cast<size_t>(product(reshape)));
  std::vector<int64_t> index(rank, 0);  // index into `transposed`
  for (int64_t& device : out) {
    device = 0;
    for (size_t d = 0; d < rank; ++d) device += index[d] * strides[static_cast<size_t>(perm[d])];
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < transposed[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// A cursor over the text being parsed; every error names the whole text and the position.
class Reader {
 public:
  explicit Reader(const std::string& text) : text_(text) {}

  [[noreturn]] void expected(const std::string& what) const {
    fail("cannot read sharding '" + text_ + "': expected " + what + " at character " + std::to_string(pos_ + 1) +
         (pos_ < text_.size() ? " ('" + text_.substr(pos_, 12) + "')" : " (the end)"));
  }
  void skip_spaces() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  // Consumes `word` if the text continues with it.
  bool take(const std::string& word) {
    if (text_.compare(pos_, word.size(), word) != 0) return false;
    pos_ += word.size();
    return true;
  }
  void require(const std::string& word) {
    if (!take(word)) expected("'" + word + "'");
  }
  int64_t integer() {
    size_t end = pos_;
    while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
    if (end == pos_ || end - pos_ > 18) expected("a non-negative integer");
    const int64_t value = std::stoll(text_.substr(pos_, end - pos_));
    pos_ = end;
    return value;
  }
  // "a,b,c" (at least one).
  std::vector<int64_t> integers() {
    std::vector<int64_t> out = {integer()};
    while (take(",")) out.push_back(integer());
    return out;
  }
  // The text up to the next '"', which it consumes.
  std::string until_quote() {
    const size_t end = text_.find('"', pos_);
    if (end == std::string::npos) expected("a closing '\"'");
    std::string out = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }
  std::vector<int64_t> bracketed(const char open, const char close) {
    require(std::string(1, open));
    std::vector<int64_t> out = integers();
    require(std::string(1, close));
    return out;
  }

 private:
  const std::string& text_;
  size_t pos_ = 0;
};

HloSharding read_sharding(Reader& r, bool inside_tuple);

HloSharding read_tiled(Reader& r) {
  const std::vector<int64_t> tile_dims = r.bracketed('[', ']');
  std::vector<int64_t> devices;
  if (r.take("<=")) {
    const std::vector<int64_t> reshape = r.bracketed('[', ']');
    std::vector<int64_t> perm(reshape.size());
    std::iota(perm.begin(), perm.end(), 0);
    if (r.take("T")) {
      perm = r.bracketed('(', ')');
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      for (size_t d = 0; d < sorted.size(); ++d) {
        if (sorted.size() != reshape.size() || sorted[d] != static_cast<int64_t>(d)) {
          fail("iota tile assignment T(" + join(perm) + ") is not a permutation of the " + std::to_string(reshape.size()) +
               " dimensions of <=[" + join(reshape) + "]");
        }
      }
    }
    devices = iota_devices(reshape, perm);
  } else {
    devices = r.integers();
  }
  r.skip_spaces();
  const bool replicate_last = r.take("last_tile_dim_replicate");
  return HloSharding::tiled(tile_dims, devices, replicate_last);
}

HloSharding read_sharding(Reader& r, bool inside_tuple) {
  r.skip_spaces();
  r.require("{");
  r.skip_spaces();
  HloSharding out;
  if (r.peek() == '{') {
    if (inside_tuple) r.expected("a sharding, not a nested tuple");
    std::vector<HloSharding> elements = {read_sharding(r, true)};
    r.skip_spaces();
    while (r.take(",")) {
      elements.push_back(read_sharding(r, true));
      r.skip_spaces();
    }
    out = HloSharding::tuple(std::move(elements));
  } else if (r.take("replicated")) {
    out = HloSharding::replicate();
  } else if (r.take("manual")) {
    out = HloSharding::manual();
  } else if (r.take("maximal")) {
    r.skip_spaces();
    r.require("device=");
    out = HloSharding::maximal(r.integer());
  } else if (r.take("devices=")) {
    out = read_tiled(r);
  } else {
    r.expected("replicated, manual, maximal device=N, devices=[...] or a tuple {{...}, ...}");
  }
  r.skip_spaces();
  if (out.kind() != HloSharding::Kind::kTuple && r.take("metadata={")) {
    r.skip_spaces();
    r.require("op_name=\"");
    out = out.with_op_name(r.until_quote());
    r.skip_spaces();
    r.require("}");
    r.skip_spaces();
  }
  r.require("}");
  return out;
}

}  // namespace

HloSharding HloSharding::replicate() { return HloSharding(); }

HloSharding HloSharding::manual() {
  HloSharding s;
  s.kind_ = Kind::kManual;
  return s;
}

HloSharding HloSharding::maximal(int64_t device) {
  if (device < 0) fail("maximal sharding on device " + std::to_string(device) + ": expected a device >= 0");
  HloSharding s;
  s.kind_ = Kind::kMaximal;
  s.device_ = device;
  return s;
}

HloSharding HloSharding::tiled(std::vector<int64_t> tile_dims, std::vector<int64_t> devices, bool last_tile_dim_replicate) {
  const std::string what = "devices=[" + join(tile_dims) + "] over devices {" + join(devices) + "}";
  if (tile_dims.empty() || (last_tile_dim_replicate && tile_dims.size() < 2)) {
    fail(what + ": expected one tile count per dimension" + std::string(last_tile_dim_replicate ? " and the replicated one" : ""));
  }
  for (int64_t t : tile_dims) {
    if (t < 1) fail(what + ": expected tile counts >= 1");
  }
  if (product(tile_dims) != static_cast<int64_t>(devices.size())) {
    fail(what + ": the tile grid has " + std::to_string(product(tile_dims)) + " cells, expected as many devices, got " +
         std::to_string(devices.size()));
  }
  std::set<int64_t> seen;
  for (int64_t d : devices) {
    if (d < 0 || !seen.insert(d).second) fail(what + ": expected distinct devices >= 0");
  }
  HloSharding s;
  s.kind_ = Kind::kTiled;
  s.tile_dims_ = std::move(tile_dims);
  s.devices_ = std::move(devices);
  s.last_tile_dim_replicate_ = last_tile_dim_replicate;
  return s;
}

HloSharding HloSharding::iota_tiled(std::vector<int64_t> tile_dims, bool last_tile_dim_replicate) {
  std::vector<int64_t> devices(static_cast<size_t>(std::max<int64_t>(0, product(tile_dims))));
  std::iota(devices.begin(), devices.end(), 0);
  return tiled(std::move(tile_dims), std::move(devices), last_tile_dim_replicate);
}

HloSharding HloSharding::tuple(std::vector<HloSharding> elements) {
  for (const HloSharding& e : elements) {
    if (e.kind_ == Kind::kTuple) fail("a tuple sharding's elements must not be tuples (XLA's tuple shardings are flat)");
  }
  HloSharding s;
  s.kind_ = Kind::kTuple;
  s.elements_ = std::move(elements);
  return s;
}

HloSharding HloSharding::with_op_name(std::string op_name) const {
  if (kind_ == Kind::kTuple) fail("sharding metadata belongs to a tuple's elements, not to the tuple");
  if (op_name.find_first_of("\"{}") != std::string::npos) {
    fail("sharding metadata op_name '" + op_name + "': expected no '\"', '{' or '}' (the text form quotes it as is)");
  }
  HloSharding s = *this;
  s.op_name_ = std::move(op_name);
  return s;
}

bool HloSharding::operator==(const HloSharding& other) const {
  return kind_ == other.kind_ && device_ == other.device_ && tile_dims_ == other.tile_dims_ && devices_ == other.devices_ &&
         last_tile_dim_replicate_ == other.last_tile_dim_replicate_ && elements_ == other.elements_;
}

uint64_t HloSharding::hash() const {
  uint64_t h = 0;
  const auto mix = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 12) + (h >> 4); };
  mix(static_cast<uint64_t>(kind_));
  mix(static_cast<uint64_t>(device_));
  mix(tile_dims_.size());
  for (int64_t d : tile_dims_) mix(static_cast<uint64_t>(d));
  mix(devices_.size());
  for (int64_t d : devices_) mix(static_cast<uint64_t>(d));
  mix(last_tile_dim_replicate_ ? 1 : 0);
  mix(std::hash<std::string>{}(op_name_));
  mix(elements_.size());
  for (const HloSharding& e : elements_) mix(e.hash());
  return h;
}

std::string HloSharding::to_string() const {
  const std::string metadata = op_name_.empty() ? "" : " metadata={op_name=\"" + op_name_ + "\"}";
  switch (kind_) {
    case Kind::kReplicated: return "{replicated" + metadata + "}";
    case Kind::kManual: return "{manual" + metadata + "}";
    case Kind::kMaximal: return "{maximal device=" + std::to_string(device_) + metadata + "}";
    case Kind::kTiled: {
      const std::string assignment = is_iota(devices_) ? "<=[" + std::to_string(devices_.size()) + "]" : join(devices_);
      return "{devices=[" + join(tile_dims_) + "]" + assignment + (last_tile_dim_replicate_ ? " last_tile_dim_replicate" : "") + metadata + "}";
    }
    case Kind::kTuple: {
      std::string out = "{";
      for (size_t i = 0; i < elements_.size(); ++i) out += (i ? ", " : "") + elements_[i].to_string();
      return out + "}";
    }
  }
  return "";
}

HloSharding HloSharding::parse(const std::string& text) {
  Reader r(text);
  HloSharding s = read_sharding(r, false);
  r.skip_spaces();
  if (!r.at_end()) r.expected("the end of the sharding");
  return s;
}

int64_t HloSharding::tiled_rank() const {
  if (kind_ != Kind::kTiled) fail(to_string() + " is not tiled: it has no tile grid");
  return static_cast<int64_t>(tile_dims_.size()) - (last_tile_dim_replicate_ ? 1 : 0);
}

std::vector<int64_t> HloSharding::tile_index(int64_t device) const {
  if (kind_ != Kind::kTiled) fail(to_string() + " is not tiled: device " + std::to_string(device) + " has no tile index");
  const auto it = std::find(devices_.begin(), devices_.end(), device);
  if (it == devices_.end()) fail(to_string() + " does not place device " + std::to_string(device));
  int64_t cell = it - devices_.begin();
  std::vector<int64_t> index(tile_dims_.size());
  for (size_t d = tile_dims_.size(); d-- > 0;) {
    index[d] = cell % tile_dims_[d];
    cell /= tile_dims_[d];
  }
  return index;
}

Shape HloSharding::tile_shape(const Shape& shape) const {
  if (kind_ != Kind::kTiled) return shape;
  if (tiled_rank() != static_cast<int64_t>(shape.size())) {
    fail(to_string() + " tiles " + std::to_string(tiled_rank()) + " dimensions, expected a value of that rank, got one of rank " +
         std::to_string(shape.size()));
  }
  Shape out = shape;
  for (size_t d = 0; d < out.size(); ++d) out[d] = (out[d] + tile_dims_[d] - 1) / tile_dims_[d];
  return out;
}

}  // namespace lazytrain::hlo
