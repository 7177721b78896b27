// The HLO evaluator's kernels: one function per family of opcodes, each writing
// an instruction's value into storage its caller owns. Internal to hlo/evaluator.
#pragma once

#include <type_traits>
#include <vector>

#include "core/half.h"
#include "hlo/evaluator/array_ref.h"
#include "hlo/hlo_instruction.h"

namespace lazytrain::hlo::evaluator {

using Operands = std::vector<ArrayRef>;

void eval_elementwise(const HloInstruction& in, const Operands& args, const MutableArrayRef& out);  // unary, binary, compare, select, convert
void eval_data_movement(const HloInstruction& in, const Operands& args, const MutableArrayRef& out);  // broadcast, reshape, transpose, slice, dynamic-slice, concatenate
void eval_gather(const HloInstruction& in, const Operands& args, const MutableArrayRef& out);
void eval_scatter(const HloInstruction& in, const Operands& args, const MutableArrayRef& out);
void eval_dot(const HloInstruction& in, const Operands& args, const MutableArrayRef& out);  // a plain loop
void eval_reduce(const HloInstruction& in, const Operands& args, const MutableArrayRef& out);
void eval_custom_call(const HloInstruction& in, const Operands& args, const MutableArrayRef& out);  // hlo/custom_call.h targets
void eval_generator(const HloInstruction& in, const Operands& args, const MutableArrayRef& out);  // iota, rng-bit-generator

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

// Elements at which it pays to split a loop over the cores.
inline constexpr int64_t kParallelThreshold = 1 << 20;
// Bytes at which it pays to split a copy (transpose, slice, concatenate, broadcast)
// over the cores: 256 KiB take about 13 us on one core, well over a parallel
// region's few. GPT-2's head splits and merges ([4, 64, 2304] and [4, 12, 64, 64]
// at seq 64) ran on one thread of two.
inline constexpr int64_t kParallelCopyBytes = 1 << 18;

}  // namespace lazytrain::hlo::evaluator
