// Helpers for the SPMD tests: a device's tile of a whole value, and a
// partitioned module run on n replica devices of this process (one thread
// each, as the runtime runs replicas), compared with the whole module.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "backend/registry.h"
#include "hlo/hlo_instruction.h"
#include "hlo/passes/sharding_propagation.h"
#include "hlo/passes/spmd_partitioner.h"
#include "runtime/collectives.h"
#include "runtime/device.h"
#include "hlo_pass_test_util.h"

namespace lazytrain::hlo::testing {

// Device `device`'s tile of `full` laid out as `sharding` (the whole value when not tiled).
inline Buffer tile_of(const Buffer& full, const HloSharding& sharding, int64_t device) {
  if (!sharding.is_tiled()) return full;
  const Shape& shape = full.shape();
  const Shape tile = sharding.tile_shape(shape);
  std::vector<int64_t> start = sharding.tile_index(device);
  start.resize(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) start[d] *= tile[d];
  Buffer out(tile, full.dtype());
  const auto size = static_cast<size_t>(itemsize(full.dtype()));
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t k = 0; k < out.numel(); ++k) {
    int64_t from = 0;
    for (size_t d = 0; d < shape.size(); ++d) from = from * shape[d] + start[d] + index[d];
    std::memcpy(static_cast<uint8_t*>(out.raw()) + static_cast<size_t>(k) * size, static_cast<const uint8_t*>(full.raw()) + static_cast<size_t>(from) * size, size);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < tile[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// `global` after sharding propagation and the SPMD partitioner.
inline HloModule partitioned(HloModule global) {
  ShardingPropagation().run(global);
  SpmdPartitioner().run(global);
  verify(global);
  return global;
}

// Runs `local` (partitioned) on devices cpu:0 .. cpu:n-1 of this process with
// each parameter's tile of `arguments`; returns each device's outputs.
inline std::vector<std::vector<Buffer>> run_on_devices(const HloModule& local, int n, const std::vector<Buffer>& arguments,
                                                       const std::string& backend = "interpreter") {
  auto executable = backend::make_compiler(backend)->compile(local);
  runtime::set_local_replicas(n);
  std::vector<std::vector<Buffer>> outputs(static_cast<size_t>(n));
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      runtime::DeviceGuard guard(runtime::Device{"cpu", i});
      try {
        std::vector<Buffer> tiles;
        for (const HloInstruction& in : local.instructions) {
          if (in.opcode != HloOpcode::kParameter) continue;
          const Buffer& whole = arguments[static_cast<size_t>(in.parameter_number)];
          tiles.push_back(in.sharding ? tile_of(whole, *in.sharding, i) : whole);
        }
        outputs[static_cast<size_t>(i)] = executable->execute(tiles);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(i)] = e.what();
        runtime::abort_collectives(e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  runtime::set_local_replicas(1);
  for (int i = 0; i < n; ++i) EXPECT_EQ(errors[static_cast<size_t>(i)], "") << "device " << i;
  return outputs;
}

// Same shapes and dtypes, and |a - e| <= rtol * (|e| + the largest |e| of the
// output): sums split over devices add in another order.
inline void expect_close(const std::vector<Buffer>& expected, const std::vector<Buffer>& actual, double rtol) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t k = 0; k < expected.size(); ++k) {
    ASSERT_EQ(expected[k].shape(), actual[k].shape()) << "output " << k;
    ASSERT_EQ(expected[k].dtype(), actual[k].dtype()) << "output " << k;
    double scale = 0;
    for (int64_t i = 0; i < expected[k].numel(); ++i) scale = std::max(scale, std::abs(element(expected[k], i)));
    for (int64_t i = 0; i < expected[k].numel(); ++i) {
      const double e = element(expected[k], i), a = element(actual[k], i);
      ASSERT_LE(std::abs(e - a), rtol * (std::abs(e) + scale)) << "output " << k << " element " << i << ": " << a << " vs " << e;
    }
  }
}

// The whole module's outputs on random arguments, and the partitioned
// module's on n devices: every device's output is its tile of the whole one
// (within rtol). Returns the partitioned module for structure checks.
inline HloModule expect_partitioned_matches(const HloModule& global, int n, double rtol = 1e-5, const std::string& backend = "interpreter") {
  const std::vector<Buffer> arguments = random_arguments(global, 11);
  const std::vector<Buffer> expected = run(global, arguments);
  HloModule local = partitioned(global);
  EXPECT_EQ(local.num_partitions, n);
  const auto outputs = run_on_devices(local, n, arguments, backend);
  const HloSharding& layouts = *local.at(local.root).sharding;
  for (int i = 0; i < n; ++i) {
    std::vector<Buffer> tiles;
    for (size_t k = 0; k < expected.size(); ++k) tiles.push_back(tile_of(expected[k], layouts.tuple_elements()[k], i));
    SCOPED_TRACE("device " + std::to_string(i));
    expect_close(tiles, outputs[static_cast<size_t>(i)], rtol);
  }
  return local;
}

inline int count_opcode(const HloModule& m, HloOpcode opcode) {
  int n = 0;
  for (const HloInstruction& in : m.instructions) n += in.opcode == opcode;
  return n;
}

}  // namespace lazytrain::hlo::testing
