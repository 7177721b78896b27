// dot through oneDNN's matmul primitive (AVX-512 / AMX kernels where the CPU has them).
#include <map>
#include <memory>
#include <mutex>

#include "backend/interpreter/kernels.h"
#include "backend/onednn_matmul.h"

namespace lazytrain::backend::interpreter {

Buffer eval_dot(const hlo::HloInstruction& in, const Operands& args) {
  const Buffer& lhs = *args[0];
  const Buffer& rhs = *args[1];
  // Primitives are costly to create: one per (lhs shape, dims, output), kept for
  // the process and never destroyed: an execution still running on the device's
  // worker thread when the process exits must not see them torn down.
  static std::mutex& mutex = *new std::mutex;
  static auto& cache = *new std::map<std::vector<int64_t>, std::shared_ptr<OneDnnMatmul>>;
  std::vector<int64_t> key = lhs.shape();
  key.push_back(-1);
  for (const auto* dims : {&in.dot.lhs_batch_dimensions, &in.dot.lhs_contracting_dimensions, &in.dot.rhs_contracting_dimensions}) {
    key.insert(key.end(), dims->begin(), dims->end());
    key.push_back(-1);
  }
  key.insert(key.end(), in.shape.begin(), in.shape.end());
  key.push_back(static_cast<int64_t>(in.dtype));
  std::shared_ptr<OneDnnMatmul> matmul;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto& entry = cache[key];
    if (!entry) entry = std::make_shared<OneDnnMatmul>(lhs.shape(), in);
    matmul = entry;
  }
  Buffer out(in.shape, in.dtype);
  matmul->run(lhs, rhs, nullptr, nullptr, out);
  return out;
}

}  // namespace lazytrain::backend::interpreter
