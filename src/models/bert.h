// BertForMaskedLM exactly as Hugging Face's transformers defines it
// (modeling_bert.py): parameter names, initialisation, the MLM head with the
// decoder tied to the word embeddings and its own bias. No pooler.
#pragma once

#include <memory>
#include <vector>

#include "models/bert_config.h"
#include "models/modeling_utils.h"
#include "nn/layers.h"

namespace lazytrain::models {

class BertEmbeddings : public nn::Module {
 public:
  explicit BertEmbeddings(const BertConfig& c);
  // input_ids int64 [B, S] → [B, S, hidden]; positions 0..S-1, each token's
  // type from `token_type_ids` (int64 [B, S], rows of token_type_embeddings, as
  // Hugging Face's), type 0 while it is undefined. Throws Error for another shape.
  Tensor forward(const Tensor& input_ids) const;
  std::shared_ptr<nn::Embedding> word_embeddings, position_embeddings, token_type_embeddings;
  // The token types of the next forward calls (the Python front end sets it
  // around one call); undefined: every token has type 0.
  Tensor token_type_ids;
  std::shared_ptr<nn::LayerNorm> LayerNorm;
  std::shared_ptr<nn::Dropout> dropout;
};

class BertSelfAttention : public nn::Module {
 public:
  explicit BertSelfAttention(const BertConfig& c);
  // hidden [B, S, H], additive f32 mask [B, 1, 1, S] → context [B, S, H].
  // config.attn_implementation "eager": matmul, + mask, softmax, dropout,
  // matmul (modeling_bert.py's eager_attention_forward); "sdpa": one
  // scaled_dot_product_attention op with the mask as its float attn_mask (its
  // own dropout stream); with dropout off the two agree to f32 rounding.
  Tensor forward(const Tensor& hidden, const Tensor& mask) const;
  std::shared_ptr<nn::Linear> query, key, value;
  std::shared_ptr<nn::Dropout> dropout;
  int64_t heads, head_dim;
  bool sdpa;                            // config.attn_implementation == "sdpa"
  double attention_probs_dropout_prob;  // sdpa's dropout_p in training
};

// dense → dropout → LayerNorm(x + residual); BertSelfOutput and BertOutput.
class BertResidualOutput : public nn::Module {
 public:
  BertResidualOutput(const BertConfig& c, int64_t in_features);
  Tensor forward(const Tensor& x, const Tensor& residual) const;
  std::shared_ptr<nn::Linear> dense;
  std::shared_ptr<nn::LayerNorm> LayerNorm;
  std::shared_ptr<nn::Dropout> dropout;
};

class BertAttention : public nn::Module {
 public:
  explicit BertAttention(const BertConfig& c);
  Tensor forward(const Tensor& hidden, const Tensor& mask) const;
  std::shared_ptr<BertSelfAttention> self;
  std::shared_ptr<BertResidualOutput> output;
};

class BertIntermediate : public nn::Module {
 public:
  explicit BertIntermediate(const BertConfig& c);
  Tensor forward(const Tensor& x) const { return gelu(dense->forward(x)); }
  std::shared_ptr<nn::Linear> dense;
};

class BertLayer : public nn::Module {
 public:
  explicit BertLayer(const BertConfig& c);
  Tensor forward(const Tensor& hidden, const Tensor& mask) const;
  std::shared_ptr<BertAttention> attention;
  std::shared_ptr<BertIntermediate> intermediate;
  std::shared_ptr<BertResidualOutput> output;
};

class BertEncoder : public nn::Module {
 public:
  explicit BertEncoder(const BertConfig& c);
  // hidden [B, S, H] through every layer; extended_mask [B, 1, 1, S] from
  // get_extended_attention_mask. Shared by BERT and RoBERTa.
  Tensor forward(const Tensor& hidden, const Tensor& extended_mask) const;
  std::vector<std::shared_ptr<BertLayer>> layer;
  // Hugging Face's encoder.gradient_checkpointing: in training, each layer's
  // activations are recomputed during backward (nn/checkpoint.h).
  bool gradient_checkpointing = false;
};

class BertModel : public nn::Module {
 public:
  explicit BertModel(const BertConfig& c);
  // input_ids, attention_mask int64 [B, S] (mask 1 = attend) → [B, S, hidden].
  Tensor forward(const Tensor& input_ids, const Tensor& attention_mask) const;
  std::shared_ptr<BertEmbeddings> embeddings;
  std::shared_ptr<BertEncoder> encoder;
};

// cls.predictions: transform (dense, gelu, LayerNorm) then the tied decoder.
class BertLMPredictionHead : public nn::Module {
 public:
  BertLMPredictionHead(const BertConfig& c, const Tensor& word_embeddings);
  Tensor forward(const Tensor& hidden) const;
  std::shared_ptr<nn::Linear> transform_dense;
  std::shared_ptr<nn::LayerNorm> transform_LayerNorm;
  Tensor decoder_weight, bias;
};

class BertForMaskedLM : public MaskedLMModel {
 public:
  // forward and forward_labelled (MaskedLMModel) throw Error when shapes
  // disagree or S > max_position_embeddings.
  explicit BertForMaskedLM(const BertConfig& config);
  std::shared_ptr<BertModel> bert;
  std::shared_ptr<BertLMPredictionHead> predictions;
  void gradient_checkpointing_enable() override { bert->encoder->gradient_checkpointing = true; }

 protected:
  const char* model_name() const override { return "BertForMaskedLM"; }
  Tensor sequence_output(const Tensor& input_ids, const Tensor& attention_mask) const override;
  Tensor lm_logits(const Tensor& hidden) const override { return predictions->forward(hidden); }
};

}  // namespace lazytrain::models
