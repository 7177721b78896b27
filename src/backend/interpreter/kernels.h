// Kernels of the HLO interpreter: one function per family of opcodes. Each takes
// the instruction and its operand buffers and returns the result buffer.
#pragma once

#include <vector>

#include "core/half.h"
#include "hlo/hlo_instruction.h"
#include "runtime/buffer.h"

namespace lazytrain::backend::interpreter {

using runtime::Buffer;
using Operands = std::vector<const Buffer*>;

Buffer eval_elementwise(const hlo::HloInstruction& in, const Operands& args);  // unary, binary, compare, select, convert
Buffer eval_data_movement(const hlo::HloInstruction& in, const Operands& args);  // broadcast, reshape, transpose, slice, concatenate
Buffer eval_gather(const hlo::HloInstruction& in, const Operands& args);
Buffer eval_scatter(const hlo::HloInstruction& in, const Operands& args);
Buffer eval_dot(const hlo::HloInstruction& in, const Operands& args);  // oneDNN matmul
Buffer eval_reduce(const hlo::HloInstruction& in, const Operands& args);
Buffer eval_generator(const hlo::HloInstruction& in, const Operands& args);  // iota, rng-bit-generator

// Evaluates one instruction of a module on its operand buffers; `arguments` are
// the module's parameters (for kParameter). Fusions run their fused computation.
Buffer evaluate_instruction(const hlo::HloInstruction& in, const Operands& args, const std::vector<Buffer>& arguments);

// Calls f.template operator()<T>() with the C++ storage type of `dtype`.
template <typename F>
void dispatch_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: f.template operator()<float>(); break;
    case DType::kBFloat16: f.template operator()<BFloat16>(); break;
    case DType::kFloat16: f.template operator()<Half>(); break;
    case DType::kInt32: f.template operator()<int32_t>(); break;
    case DType::kInt64: f.template operator()<int64_t>(); break;
    case DType::kBool: f.template operator()<uint8_t>(); break;
  }
}

// The type arithmetic happens in: float for the floating types, else the type itself.
template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>, float, T>;

// out[i...] = src[sum_k i_k * src_strides[k]] over every index of out_shape;
// strides in elements of `elem_bytes` bytes. Used by broadcast, transpose, slice.
void strided_copy(const void* src, const std::vector<int64_t>& src_strides, void* dst, const Shape& out_shape,
                  int64_t elem_bytes);

// Elements at which it pays to split a loop over the two cores.
inline constexpr int64_t kParallelThreshold = 1 << 20;

}  // namespace lazytrain::backend::interpreter
