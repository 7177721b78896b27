#include "models/roberta.h"

#include <limits>

#include "core/error.h"

namespace lazytrain::models {

BertConfig roberta_config() {
  BertConfig c;
  c.model_type = "roberta";
  c.vocab_size = 50265;
  c.max_position_embeddings = 514;
  c.type_vocab_size = 1;
  c.layer_norm_eps = 1e-5;
  c.pad_token_id = 1;
  c.extra["bos_token_id"] = 0;
  c.extra["eos_token_id"] = 2;
  return c;
}

Tensor roberta_position_ids(const Tensor& input_ids, int64_t pad_token_id) {
  // cumsum over the sequence as a product with an upper-triangular matrix of ones
  // (exact in f32 for sequences below 2^24).
  const int64_t s = input_ids.shape()[1];
  Tensor mask = ne(input_ids, pad_token_id).to(DType::kFloat32);
  Tensor upper = le(arange(s).view({s, 1}), arange(s).view({1, s})).to(DType::kFloat32);
  Tensor counts = matmul(mask, upper) * mask;
  return counts.to(DType::kInt64) + pad_token_id;
}

RobertaEmbeddings::RobertaEmbeddings(const BertConfig& c) : padding_idx(c.pad_token_id) {
  word_embeddings = register_module("word_embeddings", std::make_shared<nn::Embedding>(c.vocab_size, c.hidden_size, c.initializer_range, c.pad_token_id));
  position_embeddings = register_module(
      "position_embeddings", std::make_shared<nn::Embedding>(c.max_position_embeddings, c.hidden_size, c.initializer_range, c.pad_token_id));
  token_type_embeddings = register_module("token_type_embeddings", std::make_shared<nn::Embedding>(c.type_vocab_size, c.hidden_size, c.initializer_range));
  LayerNorm = register_module("LayerNorm", std::make_shared<nn::LayerNorm>(c.hidden_size, c.layer_norm_eps));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(c.hidden_dropout_prob));
}

Tensor RobertaEmbeddings::forward(const Tensor& input_ids) const {
  Tensor words = word_embeddings->forward(input_ids);
  runtime::DeviceGuard on_input_device(input_ids.device());
  Tensor types = token_type_embeddings->forward(zeros(input_ids.shape(), DType::kInt64));
  Tensor positions = position_embeddings->forward(roberta_position_ids(input_ids, padding_idx));
  return dropout->forward(LayerNorm->forward(words + types + positions));
}

RobertaLMHead::RobertaLMHead(const BertConfig& c, const Tensor& word_embeddings) {
  struct Decoder : nn::Module {
    Decoder(const Tensor& weight, const Tensor& bias) {
      register_parameter("weight", weight);
      register_parameter("bias", bias);
    }
  };
  // lm_head.bias first: the tied decoder.bias is then listed under this name.
  bias = register_parameter("bias", nn::constant_init({c.vocab_size}, 0.0f));
  dense = register_module("dense", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size, c.initializer_range));
  layer_norm = register_module("layer_norm", std::make_shared<nn::LayerNorm>(c.hidden_size, c.layer_norm_eps));
  decoder_weight = word_embeddings;
  register_module("decoder", std::make_shared<Decoder>(decoder_weight, bias));
}

Tensor RobertaLMHead::forward(const Tensor& hidden) const {
  return linear(layer_norm->forward(gelu(dense->forward(hidden))), decoder_weight, bias);
}

RobertaForMaskedLM::RobertaForMaskedLM(const BertConfig& config) : MaskedLMModel(config) {
  config_.validate("RobertaForMaskedLM");
  struct Roberta : nn::Module {
    Roberta(const BertConfig& c, std::shared_ptr<RobertaEmbeddings>& e, std::shared_ptr<BertEncoder>& enc) {
      e = register_module("embeddings", std::make_shared<RobertaEmbeddings>(c));
      enc = register_module("encoder", std::make_shared<BertEncoder>(c));
    }
  };
  register_module("roberta", std::make_shared<Roberta>(config_, embeddings, encoder));
  lm_head = register_module("lm_head", std::make_shared<RobertaLMHead>(config_, embeddings->word_embeddings->weight));
}

Tensor RobertaForMaskedLM::sequence_output(const Tensor& input_ids, const Tensor& attention_mask) const {
  if (input_ids.dim() != 2) throw Error("[RobertaForMaskedLM] input_ids must be [batch, sequence], got " + shape_str(input_ids.shape()));
  if (attention_mask.shape() != input_ids.shape()) {
    throw Error("[RobertaForMaskedLM] attention_mask " + shape_str(attention_mask.shape()) + " must match input_ids " +
                shape_str(input_ids.shape()));
  }
  if (input_ids.shape()[1] + config_.pad_token_id >= config_.max_position_embeddings) {
    throw Error("[RobertaForMaskedLM] sequence length " + std::to_string(input_ids.shape()[1]) + " needs max_position_embeddings above " +
                std::to_string(input_ids.shape()[1] + config_.pad_token_id) + " (positions start at pad_token_id + 1), got " +
                std::to_string(config_.max_position_embeddings));
  }
  return encoder->forward(embeddings->forward(input_ids), get_extended_attention_mask(attention_mask));
}

}  // namespace lazytrain::models
