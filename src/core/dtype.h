// DType: the element types lazytrain tensors and HLO values can hold.
//
// Names follow PyTorch for the user (torch.float32 → "float32") and XLA for
// HLO text ("f32", "bf16", "f16", "s32", "s64", "pred").
#pragma once

#include <cstdint>
#include <string>

namespace lazytrain {

enum class DType : uint8_t { kFloat32, kBFloat16, kFloat16, kInt32, kInt64, kBool };
inline constexpr int kNumDTypes = 6;

// Bytes per element: 4, 2, 2, 4, 8, 1.
int64_t itemsize(DType dtype);
// True for float32, bfloat16, float16.
bool is_floating_point(DType dtype);
// XLA's primitive type name: f32, bf16, f16, s32, s64, pred.
std::string xla_name(DType dtype);
// PyTorch's name: float32, bfloat16, float16, int32, int64, bool.
std::string torch_name(DType dtype);
// torch's c10::ScalarType name, as its error messages print it: Float, BFloat16, Half, Int, Long, Bool.
std::string scalar_type_name(DType dtype);
// torch.can_cast: false where the cast lowers the category (floating to integral, anything else to bool).
bool can_cast(DType from, DType to);
// safetensors' dtype string: F32, BF16, F16, I32, I64, BOOL.
std::string safetensors_name(DType dtype);
// Inverse of safetensors_name; throws Error for an unknown name.
DType dtype_from_safetensors_name(const std::string& name);

// torch.promote_types for two tensor operands: bool < int32 < int64 < float16/bfloat16
// < float32; float16 with bfloat16 gives float32.
DType promote_types(DType a, DType b);

}  // namespace lazytrain
