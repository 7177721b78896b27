// safetensors: Hugging Face's tensor file format (model.safetensors).
//
// Layout (source: huggingface/safetensors, safetensors/src/tensor.rs):
//   8 bytes   N, little-endian u64: length of the header
//   N bytes   JSON header, UTF-8, padded with spaces to a multiple of 8:
//             {"__metadata__":{"format":"pt"},
//              "<name>":{"dtype":"F32","shape":[2,3],"data_offsets":[begin,end]}, ...}
//   the rest  byte buffer: every tensor's raw little-endian row-major bytes;
//             data_offsets are relative to the start of this buffer.
//
// Writing follows the reference serializer byte for byte: tensors are laid
// out by descending dtype alignment, then by name (so every tensor is aligned
// for its element type); the header is compact JSON with "__metadata__" first
// and the tensors in buffer order, each as dtype, shape, data_offsets.
// Reading accepts any tensor order but requires the buffer to be covered
// exactly: no holes, no overlaps, no trailing bytes (as the reference does).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/literal.h"

namespace lazytrain::train {

// One tensor: safetensors dtype name ("F32", "BF16", "F16", "I64", "I32",
// "BOOL", ...), shape (empty = scalar), and its raw bytes (numel * itemsize).
struct TensorRecord {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  bool operator==(const TensorRecord&) const = default;
};

// A host Literal as a record (its dtype's safetensors name, shape and bytes),
// and back. to_literal throws Error for a dtype lazytrain has no DType for.
TensorRecord to_tensor_record(const Literal& literal);
Literal to_literal(const TensorRecord& record);

// Bytes per element of a safetensors dtype: BOOL, U8, I8, F8_E5M2, F8_E4M3,
// F8_E8M0 -> 1; I16, U16, F16, BF16 -> 2; I32, U32, F32 -> 4; C64, F64, I64,
// U64 -> 8. Returns 0 for an unknown name (sub-byte F4/F6 types are unsupported).
int64_t safetensors_dtype_size(const std::string& dtype);

// The whole file as bytes (8-byte length, padded header, buffer). Throws
// lazytrain::Error naming `path_for_errors` for an unknown dtype, a negative
// dimension, a name "__metadata__", or data whose size is not numel * itemsize.
std::string serialize_safetensors(const std::map<std::string, TensorRecord>& tensors,
                                  const std::map<std::string, std::string>& metadata = {},
                                  const std::string& path_for_errors = "<memory>");

// Writes `tensors` (and optional "__metadata__" string pairs, e.g.
// {"format": "pt"} as transformers writes) to `path` atomically: the data goes
// to "<path>.tmp.<pid>" in the same directory, is fsynced and renamed over
// `path`. On any failure the temporary file is removed, no file appears at
// `path` (an existing one is left untouched), and lazytrain::Error is thrown.
void save_safetensors(const std::string& path, const std::map<std::string, TensorRecord>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Reads every tensor of `path`, validating the file: it exists, the header
// length fits in the file (and is at most 100,000,000 bytes), the header is a
// UTF-8 JSON object with no key twice in one object and no value nested deeper
// than a shape's dimensions, "__metadata__" maps strings to strings, every
// dtype is known, shapes are non-negative integers whose byte count does not
// overflow, data_offsets agree with shape * itemsize, and the tensors cover the
// buffer exactly. Memory is bounded by the file's size, whatever the header says.
// Throws one lazytrain::Error naming the file (and the tensor, when one is at
// fault) and what was expected, never another exception type, e.g.
//   "[safetensors] '<file>': header length 99999 exceeds file size 100; expected a safetensors file"
// Text quoted from a damaged header is cut short and its non-ASCII bytes are
// written \xNN, so the message is always valid UTF-8.
// If `metadata` is given, it receives the "__metadata__" pairs (empty if none).
std::map<std::string, TensorRecord> load_safetensors(const std::string& path,
                                                     std::map<std::string, std::string>* metadata = nullptr);

}  // namespace lazytrain::train
