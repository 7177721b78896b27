#include "core/dtype.h"

#include "core/error.h"

namespace lazytrain {

int64_t itemsize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kBFloat16: return 2;
    case DType::kFloat16: return 2;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kBool: return 1;
  }
  return 0;
}

bool is_floating_point(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kBFloat16 || dtype == DType::kFloat16;
}

std::string xla_name(DType dtype) {
  static const char* names[kNumDTypes] = {"f32", "bf16", "f16", "s32", "s64", "pred"};
  return names[static_cast<int>(dtype)];
}

std::string torch_name(DType dtype) {
  static const char* names[kNumDTypes] = {"float32", "bfloat16", "float16", "int32", "int64", "bool"};
  return names[static_cast<int>(dtype)];
}

std::string scalar_type_name(DType dtype) {
  static const char* names[kNumDTypes] = {"Float", "BFloat16", "Half", "Int", "Long", "Bool"};
  return names[static_cast<int>(dtype)];
}

bool can_cast(DType from, DType to) {
  auto category = [](DType t) { return t == DType::kBool ? 0 : is_floating_point(t) ? 2 : 1; };
  return category(from) <= category(to);
}

std::string safetensors_name(DType dtype) {
  static const char* names[kNumDTypes] = {"F32", "BF16", "F16", "I32", "I64", "BOOL"};
  return names[static_cast<int>(dtype)];
}

DType dtype_from_safetensors_name(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (safetensors_name(static_cast<DType>(i)) == name) return static_cast<DType>(i);
  }
  throw Error("[dtype] unknown safetensors dtype '" + name + "'; expected F32, BF16, F16, I32, I64 or BOOL");
}

namespace {
int rank(DType t) {
  switch (t) {
    case DType::kBool: return 0;
    case DType::kInt32: return 1;
    case DType::kInt64: return 2;
    case DType::kFloat16: return 3;
    case DType::kBFloat16: return 3;
    case DType::kFloat32: return 4;
  }
  return 0;
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if ((a == DType::kFloat16 && b == DType::kBFloat16) || (a == DType::kBFloat16 && b == DType::kFloat16)) {
    return DType::kFloat32;
  }
  return rank(a) >= rank(b) ? a : b;
}

}  // namespace lazytrain
