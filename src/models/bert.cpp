#include "nn/checkpoint.h"
#include "models/bert.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace lazytrain::models {

using nn::Dropout;
using nn::Embedding;
using nn::LayerNorm;
using nn::Linear;

BertEmbeddings::BertEmbeddings(const BertConfig& c) {
  word_embeddings = register_module("word_embeddings", std::make_shared<Embedding>(c.vocab_size, c.hidden_size, c.initializer_range, c.pad_token_id));
  position_embeddings = register_module("position_embeddings", std::make_shared<Embedding>(c.max_position_embeddings, c.hidden_size, c.initializer_range));
  token_type_embeddings = register_module("token_type_embeddings", std::make_shared<Embedding>(c.type_vocab_size, c.hidden_size, c.initializer_range));
  LayerNorm = register_module("LayerNorm", std::make_shared<nn::LayerNorm>(c.hidden_size, c.layer_norm_eps));
  dropout = register_module("dropout", std::make_shared<Dropout>(c.hidden_dropout_prob));
}

Tensor BertEmbeddings::forward(const Tensor& input_ids) const {
  const int64_t seq = input_ids.shape()[1];
  Tensor words = word_embeddings->forward(input_ids);
  runtime::DeviceGuard on_input_device(input_ids.device());
  if (token_type_ids.defined()) {
    check(token_type_ids.shape() == input_ids.shape(), "BertEmbeddings",
          "token_type_ids " + shape_str(token_type_ids.shape()) + " must match input_ids " + shape_str(input_ids.shape()));
  }
  Tensor types = token_type_embeddings->forward(token_type_ids.defined() ? token_type_ids : zeros(input_ids.shape(), DType::kInt64));
  Tensor positions = position_embeddings->forward(arange(seq)).unsqueeze(0);
  return dropout->forward(LayerNorm->forward(words + types + positions));
}

BertSelfAttention::BertSelfAttention(const BertConfig& c)
    : heads(c.num_attention_heads),
      head_dim(c.hidden_size / c.num_attention_heads),
      sdpa(c.attn_implementation == "sdpa"),
      attention_probs_dropout_prob(c.attention_probs_dropout_prob) {
  query = register_module("query", std::make_shared<Linear>(c.hidden_size, c.hidden_size, c.initializer_range));
  key = register_module("key", std::make_shared<Linear>(c.hidden_size, c.hidden_size, c.initializer_range));
  value = register_module("value", std::make_shared<Linear>(c.hidden_size, c.hidden_size, c.initializer_range));
  dropout = register_module("dropout", std::make_shared<Dropout>(c.attention_probs_dropout_prob));
}

Tensor BertSelfAttention::forward(const Tensor& hidden, const Tensor& mask) const {
  const int64_t b = hidden.shape()[0], s = hidden.shape()[1];
  auto split_heads = [&](const Tensor& x) { return x.view({b, s, heads, head_dim}).permute({0, 2, 1, 3}); };
  Tensor q = split_heads(query->forward(hidden));
  Tensor k = split_heads(key->forward(hidden));
  Tensor v = split_heads(value->forward(hidden));
  if (sdpa) {
    // The additive mask is sdpa's float attn_mask (added to the scaled scores, as eager adds it).
    const Tensor context = scaled_dot_product_attention(q, k, v, mask, is_training() ? attention_probs_dropout_prob : 0.0);
    return context.permute({0, 2, 1, 3}).reshape({b, s, heads * head_dim});
  }
  Tensor scores = matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(head_dim));
  Tensor probs = dropout->forward(softmax(scores + mask, -1));
  Tensor context = matmul(probs, v).permute({0, 2, 1, 3});
  return context.reshape({b, s, heads * head_dim});
}

BertResidualOutput::BertResidualOutput(const BertConfig& c, int64_t in_features) {
  dense = register_module("dense", std::make_shared<Linear>(in_features, c.hidden_size, c.initializer_range));
  LayerNorm = register_module("LayerNorm", std::make_shared<nn::LayerNorm>(c.hidden_size, c.layer_norm_eps));
  dropout = register_module("dropout", std::make_shared<Dropout>(c.hidden_dropout_prob));
}

Tensor BertResidualOutput::forward(const Tensor& x, const Tensor& residual) const {
  return LayerNorm->forward(dropout->forward(dense->forward(x)) + residual);
}

BertAttention::BertAttention(const BertConfig& c) {
  self = register_module("self", std::make_shared<BertSelfAttention>(c));
  output = register_module("output", std::make_shared<BertResidualOutput>(c, c.hidden_size));
}

Tensor BertAttention::forward(const Tensor& hidden, const Tensor& mask) const {
  return output->forward(self->forward(hidden, mask), hidden);
}

BertIntermediate::BertIntermediate(const BertConfig& c) {
  dense = register_module("dense", std::make_shared<Linear>(c.hidden_size, c.intermediate_size, c.initializer_range));
}

BertLayer::BertLayer(const BertConfig& c) {
  attention = register_module("attention", std::make_shared<BertAttention>(c));
  intermediate = register_module("intermediate", std::make_shared<BertIntermediate>(c));
  output = register_module("output", std::make_shared<BertResidualOutput>(c, c.intermediate_size));
}

Tensor BertLayer::forward(const Tensor& hidden, const Tensor& mask) const {
  Tensor attended = attention->forward(hidden, mask);
  return output->forward(intermediate->forward(attended), attended);
}

BertEncoder::BertEncoder(const BertConfig& c) {
  auto list = register_module("layer", std::make_shared<nn::ModuleList>());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layer.push_back(list->append(std::make_shared<BertLayer>(c)));
}

Tensor BertEncoder::forward(const Tensor& hidden, const Tensor& extended_mask) const {
  Tensor h = hidden;
  for (const auto& l : layer) {
    if (gradient_checkpointing && is_training()) {
      h = nn::checkpoint([l, extended_mask](const Tensor& x) { return l->forward(x, extended_mask); }, h);
    } else {
      h = l->forward(h, extended_mask);
    }
  }
  return h;
}

BertModel::BertModel(const BertConfig& c) {
  embeddings = register_module("embeddings", std::make_shared<BertEmbeddings>(c));
  encoder = register_module("encoder", std::make_shared<BertEncoder>(c));
}

Tensor BertModel::forward(const Tensor& input_ids, const Tensor& attention_mask) const {
  return encoder->forward(embeddings->forward(input_ids), get_extended_attention_mask(attention_mask));
}

BertLMPredictionHead::BertLMPredictionHead(const BertConfig& c, const Tensor& word_embeddings) {
  // Module paths: cls.predictions.transform.dense, cls.predictions.transform.LayerNorm,
  // cls.predictions.decoder.weight (tied, listed under the embeddings) and cls.predictions.bias.
  struct Transform : nn::Module {
    Transform(const BertConfig& c, std::shared_ptr<Linear>& d, std::shared_ptr<nn::LayerNorm>& ln) {
      d = register_module("dense", std::make_shared<Linear>(c.hidden_size, c.hidden_size, c.initializer_range));
      ln = register_module("LayerNorm", std::make_shared<nn::LayerNorm>(c.hidden_size, c.layer_norm_eps));
    }
  };
  struct Decoder : nn::Module {
    Decoder(const Tensor& weight, const Tensor& bias) {
      register_parameter("weight", weight);
      register_parameter("bias", bias);
    }
  };
  register_module("transform", std::make_shared<Transform>(c, transform_dense, transform_LayerNorm));
  decoder_weight = word_embeddings;
  bias = register_parameter("bias", nn::constant_init({c.vocab_size}, 0.0f));
  register_module("decoder", std::make_shared<Decoder>(decoder_weight, bias));
}

Tensor BertLMPredictionHead::forward(const Tensor& hidden) const {
  Tensor h = transform_LayerNorm->forward(gelu(transform_dense->forward(hidden)));
  return linear(h, decoder_weight, bias);
}

BertForMaskedLM::BertForMaskedLM(const BertConfig& config) : MaskedLMModel(config) {
  config_.validate("BertForMaskedLM");
  struct Cls : nn::Module {
    explicit Cls(std::shared_ptr<BertLMPredictionHead> p) { register_module("predictions", std::move(p)); }
  };
  bert = register_module("bert", std::make_shared<BertModel>(config_));
  predictions = std::make_shared<BertLMPredictionHead>(config_, bert->embeddings->word_embeddings->weight);
  register_module("cls", std::make_shared<Cls>(predictions));
}

Tensor BertForMaskedLM::sequence_output(const Tensor& input_ids, const Tensor& attention_mask) const {
  if (input_ids.dim() != 2) throw Error("[BertForMaskedLM] input_ids must be [batch, sequence], got " + shape_str(input_ids.shape()));
  if (attention_mask.shape() != input_ids.shape()) {
    throw Error("[BertForMaskedLM] attention_mask " + shape_str(attention_mask.shape()) + " must match input_ids " + shape_str(input_ids.shape()));
  }
  if (input_ids.shape()[1] > config_.max_position_embeddings) {
    throw Error("[BertForMaskedLM] sequence length " + std::to_string(input_ids.shape()[1]) + " exceeds max_position_embeddings " +
                std::to_string(config_.max_position_embeddings));
  }
  return bert->forward(input_ids, attention_mask);
}

}  // namespace lazytrain::models
