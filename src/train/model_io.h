// Saving a model the Hugging Face way: <dir>/config.json and <dir>/model.safetensors
// with the model's parameter names (tied weights stored once), each file written
// atomically so a failed save leaves no partial file.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "nn/module.h"

namespace lazytrain::train {

// Moves every parameter to the host (syncing pending values) and writes
// model.safetensors, plus config.json from `config`. Throws Error naming the
// file when it cannot be written.
void save_pretrained(const nn::Module& model, const nlohmann::json& config, const std::string& directory);

// Loads <path> (a model.safetensors) into the parameters of `model` with the same
// names. Throws Error naming the file and tensor for a missing tensor, a shape or
// dtype mismatch; extra tensors in the file are an error too.
void load_safetensors_into(nn::Module& model, const std::string& path);

}  // namespace lazytrain::train
