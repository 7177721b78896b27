#include "train/model_io.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "core/error.h"
#include "core/half.h"
#include "train/json_file.h"
#include "train/safetensors.h"

namespace lazytrain::train {

void save_pretrained(const nn::Module& model, const nlohmann::json& config, const std::string& directory) {
  std::map<std::string, TensorRecord> records;
  for (const auto& [name, tensor] : model.named_parameters()) {
    records.emplace(name, to_tensor_record(tensor.to_literal()));  // through the device boundary
  }
  save_safetensors(directory + "/model.safetensors", records, {{"format", "pt"}});
  write_json_file(directory + "/config.json", config);
}

namespace {

// Names a list in an error, at most 20 of them: "a, b, ... and 7 more".
std::string name_list(const std::vector<std::string>& names) {
  constexpr size_t kShown = 20;
  std::string out;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > kShown) out += ", ... and " + std::to_string(names.size() - kShown) + " more";
  return out;
}

// Tensors of Hugging Face BERT/RoBERTa checkpoints that these models do not
// have. Buffers: BertEmbeddings' position_ids (persistent before transformers
// 4.31, PR #24505) and token_type_ids. Weights: the pooler and next-sentence
// head of BertForPreTraining/BertModel checkpoints, which from_pretrained of a
// *ForMaskedLM reports as "Some weights of the model checkpoint ... were not used".
// GPT-2's attn.bias (the causal mask, [1, 1, n_positions, n_positions]) and
// attn.masked_bias, persistent in checkpoints older than transformers 4.31.
bool is_hf_buffer(const std::string& name) {
  return name.ends_with("embeddings.position_ids") || name.ends_with("embeddings.token_type_ids") ||
         name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
}
bool is_hf_unused_weight(const std::string& name) {
  return name.starts_with("bert.pooler.") || name.starts_with("roberta.pooler.") || name.starts_with("cls.seq_relationship.");
}

bool is_float_name(const std::string& st) { return st == "F64" || st == "F32" || st == "F16" || st == "BF16"; }

// The record's values as `to` (a floating DType), rounding to nearest even.
std::vector<uint8_t> convert_floats(const TensorRecord& r, DType to) {
  const size_t n = r.data.size() / static_cast<size_t>(safetensors_dtype_size(r.dtype));
  std::vector<float> values(n);
  const uint8_t* src = r.data.data();
  for (size_t i = 0; i < n; ++i) {
    if (r.dtype == "F64") {
      double d;
      std::memcpy(&d, src + 8 * i, 8);
      values[i] = static_cast<float>(d);
    } else if (r.dtype == "F32") {
      std::memcpy(&values[i], src + 4 * i, 4);
    } else if (r.dtype == "F16") {
      Half h;
      std::memcpy(&h, src + 2 * i, 2);
      values[i] = static_cast<float>(h);
    } else {  // BF16
      uint16_t bits;
      std::memcpy(&bits, src + 2 * i, 2);
      values[i] = scalar_ops::bf16_to_float(bits);
    }
  }
  std::vector<uint8_t> out(n * static_cast<size_t>(itemsize(to)));
  for (size_t i = 0; i < n; ++i) {
    if (to == DType::kFloat32) {
      std::memcpy(out.data() + 4 * i, &values[i], 4);
    } else if (to == DType::kFloat16) {
      const Half h = static_cast<Half>(values[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    } else {
      const BFloat16 b(values[i]);
      std::memcpy(out.data() + 2 * i, &b.bits, 2);
    }
  }
  return out;
}

// Checks a record against the parameter it fills; appends a problem, or returns
// the parameter's bytes (taken from the record, or converted when the file
// stores another float type).
struct Checked {
  bool ok = false;
  bool converted = false;
  std::vector<uint8_t> bytes;
};
Checked check_record(const std::string& name, TensorRecord& r, const Tensor& param, std::vector<std::string>& shape_problems,
                     std::vector<std::string>& dtype_problems) {
  Checked c;
  if (r.shape != param.shape()) {
    shape_problems.push_back(name + " has " + shape_str(r.shape) + ", the model expects " + shape_str(param.shape()));
    return c;
  }
  const std::string want = safetensors_name(param.dtype());
  if (r.dtype == want) {
    c.bytes = std::move(r.data);  // each record fills one parameter: no copy of a large model
  } else if (is_float_name(r.dtype) && is_floating_point(param.dtype())) {
    c.bytes = convert_floats(r, param.dtype());
    c.converted = true;
  } else {
    dtype_problems.push_back(name + " is " + r.dtype + ", the model expects " + want);
    return c;
  }
  c.ok = true;
  return c;
}

}  // namespace

std::string LoadReport::warning(const std::string& path) const {
  if (unused_weights.empty()) return "";
  return "warning: some weights of '" + path + "' were not used (the model has no such module; expected when it comes from " +
         "BertForPreTraining or a base model): " + name_list(unused_weights);
}

LoadReport load_safetensors_into(nn::Module& model, const std::string& path) {
  std::map<std::string, TensorRecord> records = load_safetensors(path);
  const auto params = model.named_parameters();
  std::map<std::string, Tensor> by_name(params.begin(), params.end());
  std::map<std::string, std::string> alias_of;  // tied alias -> listed name
  for (const auto& [alias, listed] : model.tied_parameters()) alias_of.emplace(alias, listed);
  auto known = [&](const std::string& n) { return by_name.count(n) || alias_of.count(n); };

  LoadReport report;
  // A base-model checkpoint (Hugging Face's GPT2Model: "wte.weight", "h.0...")
  // loaded into a model that holds the base as a submodule ("transformer.wte.weight"):
  // from_pretrained adds base_model_prefix the same way when no stored name carries it.
  std::map<std::string, size_t> prefix_hits;
  for (const auto& [name, r] : records) {
    if (known(name)) continue;
    for (const auto& [param_name, param] : params) {
      const size_t dot = param_name.find('.');
      if (dot != std::string::npos && param_name.compare(dot + 1, std::string::npos, name) == 0) ++prefix_hits[param_name.substr(0, dot)];
    }
  }
  for (const auto& [prefix, hits] : prefix_hits) {
    const bool prefix_stored =
        std::any_of(records.begin(), records.end(), [&](const auto& r) { return r.first.starts_with(prefix + "."); });
    if (prefix_stored || hits * 2 < records.size()) continue;  // most of the file must be the base model
    std::map<std::string, TensorRecord> prefixed;
    for (auto& [name, r] : records) prefixed.emplace(known(name) ? name : prefix + "." + name, std::move(r));
    records = std::move(prefixed);
    report.added_prefix = prefix;
    break;
  }

  // Legacy LayerNorm names (pytorch-pretrained-bert): gamma/beta for weight/bias.
  std::vector<std::pair<std::string, std::string>> renames;
  for (const auto& [name, r] : records) {
    for (const auto& [old_suffix, new_suffix] : {std::pair<std::string, std::string>{".gamma", ".weight"}, {".beta", ".bias"}}) {
      if (!name.ends_with(old_suffix)) continue;
      const std::string renamed = name.substr(0, name.size() - old_suffix.size()) + new_suffix;
      if (!known(name) && known(renamed) && !records.count(renamed)) renames.emplace_back(name, renamed);
    }
  }
  for (const auto& [from, to] : renames) {
    auto node = records.extract(from);
    node.key() = to;
    records.insert(std::move(node));
    report.renamed.push_back(from);
  }

  // Sort every record: a parameter, a tied alias, a known extra, or unexpected.
  std::map<std::string, std::vector<std::string>> sources;  // listed name -> records that hold it (own name first)
  std::vector<std::string> unexpected, missing, shape_problems, dtype_problems, tied_problems;
  for (const auto& [name, r] : records) {
    if (by_name.count(name)) {
      sources[name].insert(sources[name].begin(), name);
    } else if (auto a = alias_of.find(name); a != alias_of.end()) {
      sources[a->second].push_back(name);
    } else if (is_hf_buffer(name)) {
      report.ignored_buffers.push_back(name);
    } else if (is_hf_unused_weight(name)) {
      report.unused_weights.push_back(name);
    } else {
      unexpected.push_back(name);
    }
  }

  // Check and convert everything before any parameter changes.
  std::vector<std::pair<Tensor, std::vector<uint8_t>>> staged;
  for (const auto& [name, param] : params) {
    auto s = sources.find(name);
    if (s == sources.end()) {
      missing.push_back(name);
      continue;
    }
    const std::vector<std::string>& from = s->second;
    Checked first = check_record(from[0], records.at(from[0]), param, shape_problems, dtype_problems);
    if (first.converted) report.converted.push_back(from[0]);
    for (size_t i = 1; i < from.size(); ++i) {
      Checked copy = check_record(from[i], records.at(from[i]), param, shape_problems, dtype_problems);
      if (copy.converted) report.converted.push_back(from[i]);
      if (first.ok && copy.ok && copy.bytes != first.bytes) {
        tied_problems.push_back("'" + from[i] + "' is not equal to '" + from[0] + "'");
      }
      report.tied_copies.push_back(from[i]);
    }
    if (first.ok) staged.emplace_back(param, std::move(first.bytes));
  }

  std::string problems;
  if (!params.empty() && missing.size() == params.size())  // likely a checkpoint of another model, not a damaged one
    problems = "none of the model's " + std::to_string(params.size()) + " parameters is in the file (is it a checkpoint of this model type?)";
  auto add = [&](const std::string& what, const std::vector<std::string>& list) {
    if (!list.empty()) problems += (problems.empty() ? "" : "; ") + what + ": " + name_list(list);
  };
  add("missing", missing);
  add("unexpected", unexpected);
  add("shape mismatch", shape_problems);
  add("dtype mismatch", dtype_problems);
  add("tied copy differs", tied_problems);
  if (!problems.empty()) throw Error("[load_safetensors] '" + path + "': " + problems);

  // Device tensors first (an allocation may still fail), then the swap.
  std::vector<std::pair<Tensor, Tensor>> values;
  values.reserve(staged.size());
  for (const auto& [param, bytes] : staged) {
    runtime::DeviceGuard on_parameter_device(param.device());
    values.emplace_back(param, from_buffer(bytes.data(), param.shape(), param.dtype()));
  }
  for (const auto& [param, value] : values) param.set_data(value);
  return report;
}

}  // namespace lazytrain::train
