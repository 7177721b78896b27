#include "backend/cpu/host_kernels.h"

#include "core/error.h"
#include "hlo/custom_call.h"
#include "kernels/attention.h"
#include "kernels/random_bits.h"
#include "kernels/vector_math.h"

namespace lazytrain::backend::cpu {

namespace {

using hlo::HloOpcode;

// The custom-call's operands and keys (hlo/custom_call.h) as the attention kernel takes them.
kernels::SdpaProblem describe_sdpa(const hlo::HloInstruction& in, const std::vector<hlo::ArrayRef>& args, bool backward, KernelIsa isa) {
  const hlo::CustomCallConfig config(in.backend_config);
  kernels::SdpaProblem p;
  p.avx512 = isa == KernelIsa::kAvx512;  // F, BW, DQ and VL: more than the kernel needs (F, DQ, VL)
  const Shape& qs = args[0].shape();
  const size_t rank = qs.size();
  p.L = qs[rank - 2];
  p.E = qs[rank - 1];
  p.S = args[1].shape()[rank - 2];
  p.Ev = args[2].shape()[rank - 1];
  for (size_t d = 0; d + 2 < rank; ++d) p.batch *= qs[d];
  p.scale = args.at(3).data<float>()[0];
  p.causal = config.number("is_causal") != 0;
  size_t next = backward ? 6 : 4;
  if (config.number("has_mask") != 0) {
    const hlo::ArrayRef& m = args.at(next++);
    const Shape& ms = m.shape();
    const std::vector<int64_t> strides = contiguous_strides(ms);
    p.mask = m.raw();
    p.mask_is_pred = m.dtype() == DType::kBool;
    p.mask_row_stride = ms[rank - 2] == 1 ? 0 : strides[rank - 2];
    p.mask_col_stride = ms[rank - 1] == 1 ? 0 : strides[rank - 1];
    p.mask_batch_offset.assign(static_cast<size_t>(p.batch), 0);
    for (int64_t b = 0; b < p.batch; ++b) {
      int64_t rest = b, offset = 0;
      for (int64_t d = static_cast<int64_t>(rank) - 3; d >= 0; --d) {
        const int64_t coord = rest % qs[d];
        rest /= qs[d];
        if (ms[d] != 1) offset += coord * strides[d];
      }
      p.mask_batch_offset[static_cast<size_t>(b)] = offset;
    }
  }
  if (config.number("has_dropout") != 0) {
    p.dropout_p = args.at(next).data<float>()[0];
    p.seed = static_cast<uint64_t>(args.at(next + 1).data<int64_t>()[0]);
  }
  return p;
}

bool vector_function(HloOpcode opcode, kernels::VectorFunction& f) {
  switch (opcode) {
    case HloOpcode::kExp: f = kernels::VectorFunction::kExp; return true;
    case HloOpcode::kLog: f = kernels::VectorFunction::kLog; return true;
    case HloOpcode::kTanh: f = kernels::VectorFunction::kTanh; return true;
    case HloOpcode::kErf: f = kernels::VectorFunction::kErf; return true;
    default: return false;
  }
}

}  // namespace

bool run_host_kernel(const hlo::HloInstruction& in, const std::vector<hlo::ArrayRef>& args, const hlo::MutableArrayRef& out,
                     KernelIsa isa) {
  if (in.opcode == HloOpcode::kCustomCall) {
    if (in.custom_call_target == hlo::kSdpaForwardTarget) {
      kernels::sdpa_forward(describe_sdpa(in, args, false, isa), args[0].dtype(), args[0].raw(), args[1].raw(), args[2].raw(),
                            out.data<float>());
      return true;
    }
    if (in.custom_call_target == hlo::kSdpaBackwardTarget) {
      kernels::sdpa_backward(describe_sdpa(in, args, true, isa), args[0].dtype(), args[0].raw(), args[1].raw(), args[2].raw(),
                             args[4].data<float>(), args[5].raw(), out.data<float>());
      return true;
    }
    return false;
  }
  if (in.opcode == HloOpcode::kRngBitGenerator) {
    kernels::splitmix_bits(static_cast<uint64_t>(*args[0].data<int64_t>()), out.numel(), out.data<int32_t>(),
                           isa == KernelIsa::kAvx512);
    return true;
  }
  kernels::VectorFunction f;
  if (vector_function(in.opcode, f) && is_floating_point(in.dtype)) {
    kernels::vector_unary(f, in.dtype, args[0].raw(), out.raw(), out.numel());
    return true;
  }
  return false;
}

}  // namespace lazytrain::backend::cpu
