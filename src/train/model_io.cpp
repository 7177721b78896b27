#include "train/model_io.h"

#include <cstring>

#include "core/error.h"
#include "core/atomic_file.h"
#include "train/json_file.h"
#include "train/safetensors.h"

namespace lazytrain::train {

void save_pretrained(const nn::Module& model, const nlohmann::json& config, const std::string& directory) {
  std::map<std::string, TensorRecord> records;
  for (const auto& [name, tensor] : model.named_parameters()) {
    const Literal b = tensor.to_literal();  // through the device boundary
    TensorRecord r;
    r.dtype = safetensors_name(b.dtype());
    r.shape = b.shape();
    r.data.resize(static_cast<size_t>(b.nbytes()));
    if (b.nbytes() > 0) std::memcpy(r.data.data(), b.raw(), r.data.size());
    records.emplace(name, std::move(r));
  }
  save_safetensors(directory + "/model.safetensors", records, {{"format", "pt"}});
  write_json_file(directory + "/config.json", config);
}

void load_safetensors_into(nn::Module& model, const std::string& path) {
  std::map<std::string, TensorRecord> records = load_safetensors(path);
  auto params = model.named_parameters();
  for (const auto& [name, tensor] : params) {
    auto it = records.find(name);
    if (it == records.end()) throw Error("[load_safetensors] '" + path + "' has no tensor '" + name + "'");
    const TensorRecord& r = it->second;
    if (r.shape != tensor.shape() || dtype_from_safetensors_name(r.dtype) != tensor.dtype()) {
      throw Error("[load_safetensors] '" + path + "': tensor '" + name + "' is " + r.dtype + shape_str(r.shape) + ", expected " +
                  safetensors_name(tensor.dtype()) + shape_str(tensor.shape()));
    }
    runtime::DeviceGuard on_parameter_device(tensor.device());
    tensor.set_data(from_buffer(r.data.data(), r.shape, tensor.dtype()));
    records.erase(it);
  }
  // Hugging Face may store tied copies of the decoder; they alias loaded tensors.
  std::erase_if(records, [](const auto& r) { return r.first.ends_with("decoder.weight") || r.first.ends_with("decoder.bias"); });
  if (!records.empty()) {
    throw Error("[load_safetensors] '" + path + "' has a tensor the model does not: '" + records.begin()->first + "'");
  }
}

}  // namespace lazytrain::train
