// init_models: the C++ models (src/models/) behind lazytrain.models' Python
// classes. A _NativeModel owns one C++ module tree and says how to call it; the
// Python class (python/lazytrain/models/modeling_utils.py) registers the
// tree's parameters as its own Parameters, aliasing the same tensors, so an
// optimizer written in Python trains the C++ model and the C++ forward sees
// every update. Configs cross as JSON text, read by the C++ config classes
// (the same fields, defaults and checks as the CLI's config.json).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "bindings.h"
#include "core/error.h"
#include "models/bert.h"
#include "models/generation.h"
#include "models/gpt2.h"
#include "models/llama.h"
#include "models/roberta.h"
#include "tensor/ops.h"
#include "train/model_io.h"

namespace lazytrain::python {

using namespace nb::literals;

namespace {

// One C++ model (or a base model inside one) and its config.
struct NativeModel {
  std::string kind;  // "BertModel", "BertForMaskedLM", "RobertaForMaskedLM", "GPT2Model", "GPT2LMHeadModel", "LlamaModel", "LlamaForCausalLM"
  std::shared_ptr<nn::Module> module;
  nlohmann::json config;  // what save_pretrained writes as config.json

  template <class T>
  T& as() const {
    return static_cast<T&>(*module);
  }
};

nlohmann::json parse_config(const std::string& text, const std::string& source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error("[" + source + "] the config is not valid JSON: " + e.what());
  }
}

NativeModel make_model(const std::string& kind, const std::string& config_json, const std::string& source) {
  const nlohmann::json j = parse_config(config_json, source);
  if (kind == "BertModel" || kind == "BertForMaskedLM" || kind == "RobertaForMaskedLM") {
    models::BertConfig config = models::BertConfig::from_json(j, source);
    config.validate(source);
    std::shared_ptr<nn::Module> m;
    if (kind == "BertModel") m = std::make_shared<models::BertModel>(config);
    if (kind == "BertForMaskedLM") m = std::make_shared<models::BertForMaskedLM>(config);
    if (kind == "RobertaForMaskedLM") m = std::make_shared<models::RobertaForMaskedLM>(config);
    return {kind, m, config.to_json()};
  }
  if (kind == "GPT2Model" || kind == "GPT2LMHeadModel") {
    models::GPT2Config config = models::GPT2Config::from_json(j, source);
    config.validate(source);
    std::shared_ptr<nn::Module> m;
    if (kind == "GPT2Model") m = std::make_shared<models::GPT2Model>(config);
    if (kind == "GPT2LMHeadModel") m = std::make_shared<models::GPT2LMHeadModel>(config);
    return {kind, m, config.to_json()};
  }
  if (kind == "LlamaModel" || kind == "LlamaForCausalLM") {
    models::LlamaConfig config = models::LlamaConfig::from_json(j, source);
    config.validate(source);
    std::shared_ptr<nn::Module> m;
    if (kind == "LlamaModel") m = std::make_shared<models::LlamaModel>(config);
    if (kind == "LlamaForCausalLM") m = std::make_shared<models::LlamaForCausalLM>(config);
    return {kind, m, config.to_json()};
  }
  throw Error("[" + source + "] no C++ model class '" + kind +
              "' (BertModel, BertForMaskedLM, RobertaForMaskedLM, GPT2Model, GPT2LMHeadModel, LlamaModel, LlamaForCausalLM)");
}

// config.json with every field of `model_type`'s config class at its default,
// plus "attn_implementation" (the model's default attention, which config.json
// never holds: PretrainedConfig takes it out as config._attn_implementation).
nlohmann::json config_defaults(const std::string& model_type) {
  auto with_attention = [](const auto& config) {
    nlohmann::json j = config.to_json();
    j["attn_implementation"] = config.attn_implementation;
    return j;
  };
  if (model_type == "bert") return with_attention(models::BertConfig());
  if (model_type == "roberta") return with_attention(models::roberta_config());
  if (model_type == "gpt2") return with_attention(models::GPT2Config());
  if (model_type == "llama") return with_attention(models::LlamaConfig());
  throw Error("no config class for model_type '" + model_type + "' (bert, roberta, gpt2, llama)");
}

// Reads config.json's text as the C++ config class does and checks its values:
// the normalized text, or Error naming `source` and the field.
std::string check_config(const std::string& model_type, const std::string& text, const std::string& source) {
  const nlohmann::json j = parse_config(text, source);
  if (model_type == "bert" || model_type == "roberta") {
    const models::BertConfig c = models::BertConfig::from_json(j, source);
    c.validate(source);
    return c.to_json().dump();
  }
  if (model_type == "gpt2") {
    const models::GPT2Config c = models::GPT2Config::from_json(j, source);
    c.validate(source);
    return c.to_json().dump();
  }
  if (model_type == "llama") {
    const models::LlamaConfig c = models::LlamaConfig::from_json(j, source);
    c.validate(source);
    return c.to_json().dump();
  }
  return config_defaults(model_type).dump();  // raises for an unknown model_type
}

// (loss or None, logits or last hidden state).
using ForwardResult = std::pair<std::optional<Tensor>, Tensor>;

std::optional<Tensor> defined_or_none(const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; }

// The causal LM behind `m`, or nullptr for another kind.
const models::CausalLMModel* causal_lm(const NativeModel& m) {
  if (m.kind == "GPT2LMHeadModel") return &m.as<models::GPT2LMHeadModel>();
  if (m.kind == "LlamaForCausalLM") return &m.as<models::LlamaForCausalLM>();
  return nullptr;
}

ForwardResult forward(const NativeModel& m, const Tensor& input_ids, std::optional<Tensor> attention_mask, std::optional<Tensor> labels) {
  const Tensor mask = attention_mask.value_or(Tensor()), lab = labels.value_or(Tensor());
  if (m.kind == "BertModel") {
    // BERT's forward needs a mask; Hugging Face's default is all ones.
    const Tensor full_mask = mask.defined() ? mask : ones(input_ids.shape(), DType::kInt64);
    return {std::nullopt, m.as<models::BertModel>().forward(input_ids, full_mask)};
  }
  if (m.kind == "BertForMaskedLM" || m.kind == "RobertaForMaskedLM") {
    const Tensor full_mask = mask.defined() ? mask : ones(input_ids.shape(), DType::kInt64);
    const models::MaskedLMOutput out = m.as<models::MaskedLMModel>().forward(input_ids, full_mask, lab);
    return {defined_or_none(out.loss), out.logits};
  }
  if (m.kind == "GPT2Model") return {std::nullopt, m.as<models::GPT2Model>().forward(input_ids, mask)};
  if (m.kind == "LlamaModel") return {std::nullopt, m.as<models::LlamaModel>().forward(input_ids, mask)};
  const models::CausalLMOutput out = causal_lm(m)->forward(input_ids, mask, lab);
  return {defined_or_none(out.loss), out.logits};
}

// A masked LM's loss on its labelled tokens only (data/labelled_positions.h):
// (loss, logits [B, S, vocab] of every token, logits [K, vocab] of the
// labelled tokens); the logits are lazy values, computed only when read.
std::tuple<Tensor, Tensor, Tensor> forward_labelled(const NativeModel& m, const Tensor& input_ids, std::optional<Tensor> attention_mask,
                                                    const Tensor& masked_lm_positions, const Tensor& masked_lm_labels) {
  if (m.kind != "BertForMaskedLM" && m.kind != "RobertaForMaskedLM") throw Error("[" + m.kind + "] has no labelled-rows loss");
  const Tensor mask = attention_mask ? *attention_mask : ones(input_ids.shape(), DType::kInt64);
  const auto& model = m.as<models::MaskedLMModel>();
  const models::MaskedLMOutput out = model.forward_labelled(input_ids, mask, masked_lm_positions, masked_lm_labels, /*all_logits=*/true);
  return {out.loss, out.logits, out.labelled_logits};
}

// The base model inside a head model, sharing its parameters.
NativeModel base_model(const NativeModel& m) {
  if (m.kind == "BertForMaskedLM") return {"BertModel", m.as<models::BertForMaskedLM>().bert, m.config};
  if (m.kind == "GPT2LMHeadModel") return {"GPT2Model", m.as<models::GPT2LMHeadModel>().transformer, m.config};
  if (m.kind == "LlamaForCausalLM") return {"LlamaModel", m.as<models::LlamaForCausalLM>().model, m.config};
  throw Error("[" + m.kind + "] has no base model class in lazytrain");
}

void gradient_checkpointing_enable(NativeModel& m) {
  if (m.kind == "BertModel") m.as<models::BertModel>().encoder->gradient_checkpointing = true;
  if (m.kind == "BertForMaskedLM" || m.kind == "RobertaForMaskedLM") m.as<models::MaskedLMModel>().gradient_checkpointing_enable();
  if (m.kind == "GPT2Model") m.as<models::GPT2Model>().gradient_checkpointing = true;
  if (m.kind == "GPT2LMHeadModel") m.as<models::GPT2LMHeadModel>().gradient_checkpointing_enable();
  if (m.kind == "LlamaModel") m.as<models::LlamaModel>().gradient_checkpointing = true;
  if (m.kind == "LlamaForCausalLM") m.as<models::LlamaForCausalLM>().gradient_checkpointing_enable();
}

std::vector<std::vector<int64_t>> generate(const NativeModel& m, const std::vector<std::vector<int64_t>>& prompts,
                                           const models::GenerationConfig& g) {
  const models::CausalLMModel* model = causal_lm(m);
  if (model == nullptr) throw Error("[generate] " + m.kind + " does not generate (a causal LM does)");
  return models::generate(*model, prompts, g).sequences;
}

}  // namespace

void init_models(nb::module_& m) {
  nb::class_<NativeModel>(m, "_NativeModel", "A C++ model tree (src/models/) behind a lazytrain.models class.")
      .def_ro("kind", &NativeModel::kind)
      .def_prop_ro("config_json", [](const NativeModel& n) { return n.config.dump(2); },
                   "config.json's text with every field (defaults filled in), as save_pretrained writes it.")
      .def("named_parameters", [](const NativeModel& n) { return n.module->named_parameters(); },
           "(name, Tensor) for every distinct parameter, Hugging Face's names; the tensors are the model's own.")
      .def("train", [](NativeModel& n, bool mode) { n.module->train(mode); }, "mode"_a = true)
      .def(
          "forward",
          [](const NativeModel& n, const Tensor& input_ids, std::optional<Tensor> attention_mask, std::optional<Tensor> labels) {
            PyOp op;
            return forward(n, input_ids, std::move(attention_mask), std::move(labels));
          },
          "input_ids"_a, "attention_mask"_a = nb::none(), "labels"_a = nb::none(),
          "(loss or None, logits [B, S, vocab] or the base model's last hidden state [B, S, hidden]).")
      .def(
          "forward_labelled",
          [](const NativeModel& n, const Tensor& input_ids, std::optional<Tensor> attention_mask, const Tensor& positions, const Tensor& labels) {
            PyOp op;
            return forward_labelled(n, input_ids, std::move(attention_mask), positions, labels);
          },
          "input_ids"_a, "attention_mask"_a.none(), "masked_lm_positions"_a, "masked_lm_labels"_a,
          "(loss over the labelled tokens, logits [B, S, vocab] of every token, logits [K, vocab] of the labelled tokens); "
          "the logits are lazy, computed only when read.")
      .def(
          "set_token_type_ids",
          [](NativeModel& n, std::optional<Tensor> token_type_ids) {
            std::shared_ptr<models::BertEmbeddings> embeddings;
            if (n.kind == "BertModel") embeddings = n.as<models::BertModel>().embeddings;
            if (n.kind == "BertForMaskedLM") embeddings = n.as<models::BertForMaskedLM>().bert->embeddings;
            if (!embeddings) throw Error("[" + n.kind + "] takes no token_type_ids here");
            embeddings->token_type_ids = token_type_ids ? *token_type_ids : Tensor();
          },
          "token_type_ids"_a.none(), "The token types (int64 [B, S]) of the next forward calls of a BERT model; None: type 0.")
      .def("base_model", &base_model, "The base model inside a head model (BertModel, GPT2Model, LlamaModel), sharing its parameters.")
      .def("gradient_checkpointing_enable", &gradient_checkpointing_enable)
      .def(
          "save_pretrained",
          [](const NativeModel& n, const std::string& directory, std::optional<std::string> config_json) {
            const nlohmann::json config = config_json ? parse_config(*config_json, directory) : n.config;
            PyWait wait;
            train::save_pretrained(*n.module, config, directory);
          },
          "directory"_a, "config_json"_a = nb::none(),
          "config.json (`config_json`, checked by _check_config, or the model's own) and model.safetensors, as the CLI "
          "writes them (each file atomically).")
      .def(
          "load_safetensors",
          [](NativeModel& n, const std::string& path) {
            PyWait wait;
            return train::load_safetensors_into(*n.module, path).warning(path);
          },
          "path"_a,
          "Loads a model.safetensors into the parameters, all or nothing (train/model_io.h); returns the warning "
          "line for unused weights, or ''. Raises LazytrainError naming the file and every problem.")
      .def(
          "generate",
          [](const NativeModel& n, const std::vector<std::vector<int64_t>>& prompts, int64_t max_new_tokens, bool do_sample,
             double temperature, int64_t top_k, double top_p, int64_t num_return_sequences, uint64_t seed,
             std::optional<int64_t> eos_token_id, std::optional<int64_t> pad_token_id) {
            models::GenerationConfig g;
            g.max_new_tokens = max_new_tokens;
            g.do_sample = do_sample;
            g.temperature = temperature;
            g.top_k = top_k;
            g.top_p = top_p;
            g.num_return_sequences = num_return_sequences;
            g.seed = seed;
            g.eos_token_id = eos_token_id;
            g.pad_token_id = pad_token_id;
            PyWait wait;
            return generate(n, prompts, g);
          },
          "prompts"_a, "max_new_tokens"_a, "do_sample"_a, "temperature"_a, "top_k"_a, "top_p"_a, "num_return_sequences"_a,
          "seed"_a, "eos_token_id"_a = nb::none(), "pad_token_id"_a = nb::none(),
          "models::generate (KV cache, bounded graphs): the new tokens of each sequence, prompts x num_return_sequences rows.");
  m.def(
      "_shift_labels_left",
      [](const Tensor& labels) {
        PyOp op;
        return models::shift_labels_left(labels);
      },
      "labels"_a, "labels int64 [B, S] -> [B, S]: labels[:, 1:] then -100 (the tokens a causal LM's logits predict).");
  m.def("_config_defaults", [](const std::string& model_type) { return config_defaults(model_type).dump(); }, "model_type"_a,
        "config.json's text with the defaults of transformers' config class for `model_type` (bert, roberta, gpt2, llama).");
  m.def("_check_config", &check_config, "model_type"_a, "config_json"_a, "source"_a,
        "The config read and checked as the CLI does; LazytrainError naming `source` and the field otherwise.");
  m.def("_native_model", &make_model, "kind"_a, "config_json"_a, "source"_a,
        "A newly initialised C++ model of `kind` from config.json's text; LazytrainError naming `source` and the field "
        "for a bad config.");
}

}  // namespace lazytrain::python
