// Uniform host draws for parameter initialisation (torch.nn.init.uniform_,
// the kaiming_uniform_ default of Python's nn.Linear): the host generator that
// manual_seed resets and host_randn draws from (tensor/ops.h), so a seeded
// model initialises the same way in every run.
#pragma once

#include <cstdint>
#include <vector>

namespace lazytrain {

// `count` float32 values uniform in [0, 1): one raw 53-bit draw each, rounded
// to float32 (so a value may round up to 1.0f).
std::vector<float> host_rand(int64_t count);

}  // namespace lazytrain
