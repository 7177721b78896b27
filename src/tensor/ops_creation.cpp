// Creation ops: full/zeros/ones, arange, host data, random numbers.
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>
#include <mutex>
#include <random>
#include <sstream>

#include "core/error.h"
#include "core/literal.h"
#include "runtime/collectives.h"
#include "runtime/metrics.h"
#include "runtime/transfer.h"
#include "tensor/host_rand.h"
#include "tensor/lowering.h"

namespace lazytrain {

using namespace detail;

Tensor full(const Shape& shape, double value, DType dtype) {
  for (int64_t d : shape) check(d >= 0, "aten::full", "negative dimension in shape " + shape_str(shape));
  // The fill value is an operand (a constant for 0 and ±1, else device data).
  return make_op("aten::full", {scalar_operand(value, dtype, runtime::current_device())}, shape, dtype, {},
                 +[](LoweringContext& c, const Node& n) { return operand_as(c, n, 0, n.dtype(), n.shape()).id(); });
}
Tensor zeros(const Shape& shape, DType dtype) { return full(shape, 0.0, dtype); }
Tensor ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }

Tensor arange(int64_t start, int64_t end, int64_t step, DType dtype) {
  check(step != 0, "aten::arange", "step must be nonzero");
  int64_t n = std::max<int64_t>(0, (end - start + step - (step > 0 ? 1 : -1)) / step);
  return make_op("aten::arange", {}, {n}, dtype, {{"start", start}, {"step", step}}, +[](LoweringContext& c, const Node& n) {
    XlaOp i = iota(c.builder(), n.shape(), n.dtype(), 0);
    return (i * static_cast<double>(n.int_attr("step")) + static_cast<double>(n.int_attr("start"))).id();
  });
}
Tensor arange(int64_t end, DType dtype) { return arange(0, end, 1, dtype); }

Tensor from_buffer(const void* data, const Shape& shape, DType dtype) {
  for (int64_t d : shape) check(d >= 0, "from_buffer", "negative dimension in shape " + shape_str(shape));
  return Tensor(lazy::make_device_data(
      runtime::transfer_to_device(data, numel(shape) * itemsize(dtype), shape, dtype, runtime::current_device())));
}

Tensor from_vector(const std::vector<float>& data, const Shape& shape) {
  check(static_cast<int64_t>(data.size()) == numel(shape), "from_vector",
        std::to_string(data.size()) + " values do not fill shape " + shape_str(shape));
  return from_buffer(data.data(), shape, DType::kFloat32);
}

Tensor from_vector(const std::vector<int64_t>& data, const Shape& shape) {
  check(static_cast<int64_t>(data.size()) == numel(shape), "from_vector",
        std::to_string(data.size()) + " values do not fill shape " + shape_str(shape));
  return from_buffer(data.data(), shape, DType::kInt64);
}

namespace {

runtime::Buffer scalar_buffer(double value, DType dtype, const runtime::Device& device) {
  return runtime::transfer_to_device(Literal::scalar(value, dtype), device);
}

// Device data of the numbers given to ops, by (value bits, dtype, device).
// Cleared when full: a loop whose number changes every step adds one entry per step.
struct ScalarDataCache {
  static constexpr size_t kCapacity = 1024;
  std::mutex mutex;
  std::map<std::tuple<uint64_t, DType, runtime::Device>, lazy::NodePtr> nodes;
};
ScalarDataCache& scalar_data_cache() {
  static ScalarDataCache cache;
  return cache;
}
}  // namespace

Tensor scalar_tensor(double value, DType dtype) {
  return Tensor(lazy::make_device_data(scalar_buffer(value, dtype, runtime::current_device())));
}

namespace detail {

bool is_special_scalar(double value) { return value == 0.0 || std::fabs(value) == 1.0; }

Tensor scalar_operand(double value, DType dtype, const runtime::Device& device) {
  if (is_special_scalar(value)) return constant(value, dtype);
  ScalarDataCache& cache = scalar_data_cache();
  const std::tuple<uint64_t, DType, runtime::Device> key{std::bit_cast<uint64_t>(value), dtype, device};
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.nodes.find(key);
  if (it == cache.nodes.end()) {
    if (cache.nodes.size() >= ScalarDataCache::kCapacity) cache.nodes.clear();
    // The cache's reference keeps the node from ever being donated to an executable.
    it = cache.nodes.emplace(key, lazy::make_device_data(scalar_buffer(value, dtype, device))).first;
  }
  return Tensor(it->second);
}

}  // namespace detail

namespace {

struct Generator {
  std::atomic<uint64_t> seed{0x5eed};
  std::atomic<uint64_t> offset{0};
  std::mt19937_64 host{0x5eed};
};
// One generator per device (PyTorch/XLA keeps an RNG state per device), so
// replicas on their own threads draw independently and, seeded alike, alike.
struct Generators {
  std::mutex mutex;
  uint64_t seed = 0x5eed;  // what manual_seed last set: a new device's generator starts there
  std::map<runtime::Device, std::unique_ptr<Generator>> by_device;
};
Generators& generators() {
  static Generators* g = new Generators();  // never destroyed: replica threads may outlive statics
  return *g;
}
// The current device's generator (runtime/device.h).
Generator& generator() {
  Generators& all = generators();
  std::lock_guard<std::mutex> lock(all.mutex);
  auto& g = all.by_device[runtime::current_device()];
  if (!g) {
    g = std::make_unique<Generator>();
    g->seed = all.seed;
    g->host.seed(all.seed);
  }
  return *g;
}

// A fresh per-op seed, as device data so that it never enters the graph hash.
Tensor draw_seed() {
  Generator& g = generator();
  uint64_t s = g.seed.load() * 0x9E3779B97F4A7C15ull + (g.offset++) * 0xBF58476D1CE4E5B9ull + 1;
  // Data-parallel replicas, seeded alike, draw different dropout masks for their
  // different rows, as the rows of one large batch would: the replica's ordinal
  // enters each device seed (nothing changes with one replica). Their generator
  // states stay equal, so one checkpointed state resumes every replica.
  const runtime::ReplicaWorld& world = runtime::replica_world();
  if (world.world_size() > 1 && runtime::current_device().ordinal < world.local_replicas) {
    s += static_cast<uint64_t>(runtime::global_ordinal(runtime::current_device())) * 0x94D049BB133111EBull;
  }
  int64_t value = static_cast<int64_t>(s >> 1);
  return from_buffer(&value, {}, DType::kInt64);
}

}  // namespace

Tensor detail::next_seed() { return draw_seed(); }

namespace {

// Uniform [0, 1) floats with 24 random bits each, from rng-bit-generator.
XlaOp lower_uniform(XlaOp seed, const Shape& shape) {
  XlaOp bits = shift_right_logical(rng_bit_generator(seed, shape), 8);
  return convert(bits, DType::kFloat32) * (1.0 / 16777216.0);
}

}  // namespace

void manual_seed(uint64_t seed) {
  Generators& all = generators();
  std::lock_guard<std::mutex> lock(all.mutex);
  all.seed = seed;
  auto& g = all.by_device[runtime::current_device()];
  if (!g) g = std::make_unique<Generator>();
  g->seed = seed;
  g->offset = 0;
  g->host.seed(seed);
}

RngState get_rng_state() {
  Generator& g = generator();
  std::ostringstream host;
  host << g.host;
  return {g.seed.load(), g.offset.load(), host.str()};
}

void set_rng_state(const RngState& state) {
  std::mt19937_64 host;
  std::istringstream in(state.host);
  in >> host;
  check(!in.fail(), "set_rng_state", "the host generator state is not a std::mt19937_64 state");
  Generator& g = generator();
  g.seed = state.seed;
  g.offset = state.offset;
  g.host = host;
}

std::vector<float> host_randn(int64_t count) {
  // Box-Muller on raw 53-bit draws: the same values on every standard library.
  std::mt19937_64& g = generator().host;
  std::vector<float> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; i += 2) {
    double u1 = (static_cast<double>(g() >> 11) + 1.0) / 9007199254740993.0;
    double u2 = static_cast<double>(g() >> 11) / 9007199254740992.0;
    double r = std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<float>(r * std::cos(2.0 * M_PI * u2));
    if (i + 1 < count) out[i + 1] = static_cast<float>(r * std::sin(2.0 * M_PI * u2));
  }
  return out;
}

std::vector<float> host_rand(int64_t count) {
  // One raw 53-bit draw per value, as host_randn draws them.
  std::mt19937_64& g = generator().host;
  std::vector<float> out(static_cast<size_t>(count));
  for (float& v : out) v = static_cast<float>(static_cast<double>(g() >> 11) / 9007199254740992.0);
  return out;
}

Tensor rand(const Shape& shape, DType dtype) {
  check(is_floating_point(dtype), "aten::rand", "dtype must be floating point, got " + torch_name(dtype));
  return make_op("aten::rand", {draw_seed()}, shape, dtype, {}, +[](LoweringContext& c, const Node& n) {
    return convert(lower_uniform(operand(c, n, 0), n.shape()), n.dtype()).id();
  });
}

Tensor randn(const Shape& shape, DType dtype) {
  check(is_floating_point(dtype), "aten::randn", "dtype must be floating point, got " + torch_name(dtype));
  // Box-Muller: sqrt(-2 ln(1-u1)) * cos(2 pi u2), u2 from the seed + 1.
  return make_op("aten::randn", {draw_seed()}, shape, dtype, {}, +[](LoweringContext& c, const Node& n) {
    XlaOp seed = operand(c, n, 0);
    XlaOp seed2 = seed + 1;
    XlaOp u1 = lower_uniform(seed, n.shape());
    XlaOp u2 = lower_uniform(seed2, n.shape());
    XlaOp radius = sqrt(-2.0 * log(1 - u1));
    XlaOp angle = 6.283185307179586 * u2;
    return convert(radius * cos(angle), n.dtype()).id();
  });
}

}  // namespace lazytrain
