// Saving and loading a model the Hugging Face way: <dir>/config.json and
// <dir>/model.safetensors with the model's parameter names (tied weights stored
// once), each file written atomically so a failed save leaves no partial file.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/module.h"

namespace lazytrain::train {

// Moves every parameter to the host (syncing pending values) and writes
// model.safetensors (metadata {"format": "pt"}, as transformers writes), plus
// config.json from `config`. A tied weight is stored once, under the name
// named_parameters() lists it by (transformers' save_pretrained with
// safe_serialization drops the aliases named in _tied_weights_keys, e.g.
// cls.predictions.decoder.weight). Throws Error naming the file when it cannot
// be written.
void save_pretrained(const nn::Module& model, const nlohmann::json& config, const std::string& directory);

// What load_safetensors_into did besides filling a parameter from its own name.
struct LoadReport {
  // Buffers Hugging Face checkpoints carry and lazytrain computes instead
  // ("bert.embeddings.position_ids", "...token_type_ids", GPT-2's "h.N.attn.bias"
  // causal mask and "h.N.attn.masked_bias"): skipped silently,
  // as transformers drops non-persistent buffers.
  std::vector<std::string> ignored_buffers;
  // Weights of heads the model does not have ("bert.pooler.*",
  // "cls.seq_relationship.*" of a BertForPreTraining checkpoint, "roberta.pooler.*"):
  // skipped with warning(), as transformers' from_pretrained warns.
  std::vector<std::string> unused_weights;
  // Stored copies of tied weights ("cls.predictions.decoder.weight" beside the
  // word embeddings), checked equal to the tensor they alias.
  std::vector<std::string> tied_copies;
  // Tensors converted from the file's floating dtype to the parameter's
  // (F16/BF16/F64 -> F32, as from_pretrained casts to the model's dtype).
  std::vector<std::string> converted;
  // Legacy names renamed on load: "<module>.gamma" -> ".weight", ".beta" ->
  // ".bias" (transformers' from_pretrained does the same for old BERT files).
  std::vector<std::string> renamed;
  // The submodule name given to a base model's checkpoint ("transformer" for
  // Hugging Face's gpt2 files, which store "wte.weight", "h.0.attn.c_attn.weight"),
  // as from_pretrained adds base_model_prefix; "" when the names matched as stored.
  std::string added_prefix;

  // One line for the user when unused_weights is not empty ("" otherwise):
  // "warning: some weights of '<path>' were not used ...: a, b".
  std::string warning(const std::string& path) const;
};

// Loads <path> (a model.safetensors, any tensor order) into the parameters of
// `model` with the same names. Accepts checkpoints that store a tied weight
// under its alias name too or omit it, legacy gamma/beta names, Hugging Face's
// extra buffers and unused heads (see LoadReport), a base model's names without
// the head model's prefix (LoadReport::added_prefix), and F16/BF16/F64 tensors for
// floating parameters (converted, rounding to nearest even).
//
// All or nothing: the file is read and every tensor checked and converted
// before any parameter changes. Throws one Error naming the file and every
// problem at once, e.g.
//   [load_safetensors] '<path>': missing: a, b; unexpected: c; shape mismatch:
//   d has [2, 3], the model expects [3, 2]; dtype mismatch: e is I64, the model expects F32
// and "tied copy differs: 'cls.predictions.decoder.weight' is not equal to
// 'bert.embeddings.word_embeddings.weight'" for a stored alias whose values
// differ from the tensor it is tied to; when no parameter is found at all the
// message opens with "none of the model's N parameters is in the file (is it a
// checkpoint of this model type?)". A malformed file raises the safetensors
// reader's Error (load_safetensors), which names the file too.
LoadReport load_safetensors_into(nn::Module& model, const std::string& path);

}  // namespace lazytrain::train
