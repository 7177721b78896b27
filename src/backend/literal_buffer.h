// Copies between host Literals (HLO constants, evaluator values) and device
// Buffers, for backends that run constants or hand values to the evaluator.
#pragma once

#include "core/literal.h"
#include "runtime/buffer.h"

namespace lazytrain::backend {

// A new buffer holding `literal`'s shape, dtype and bytes.
runtime::Buffer buffer_from_literal(const Literal& literal);
// A new literal holding `buffer`'s shape, dtype and bytes (it must be defined).
Literal literal_from_buffer(const runtime::Buffer& buffer);

}  // namespace lazytrain::backend
