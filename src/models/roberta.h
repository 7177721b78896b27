// RobertaForMaskedLM as Hugging Face defines it (transformers'
// modeling_roberta.py): BERT's encoder with RoBERTa's embeddings (position ids
// counted over non-padding tokens from pad_token_id + 1) and its MLM head
// `lm_head` (dense -> gelu -> layer_norm -> decoder tied to the word embeddings,
// + lm_head.bias). Parameter names: roberta.embeddings.*, roberta.encoder.layer.N.*,
// lm_head.dense.*, lm_head.layer_norm.*, lm_head.bias. The config is
// config.json's RobertaConfig, read by BertConfig (RobertaConfig subclasses it
// in transformers) with model_type "roberta".
#pragma once

#include <memory>

#include "models/bert.h"

namespace lazytrain::models {

// transformers.RobertaConfig's defaults with roberta-base's config.json values:
// vocab_size 50265, max_position_embeddings 514, type_vocab_size 1,
// layer_norm_eps 1e-5, pad_token_id 1 (bos_token_id 0, eos_token_id 2 kept in extra).
BertConfig roberta_config();

// create_position_ids_from_input_ids: for input_ids int64 [B, S], the position
// of each token, pad_token_id + (number of non-padding tokens up to and
// including it), and pad_token_id at padding. int64 [B, S].
Tensor roberta_position_ids(const Tensor& input_ids, int64_t pad_token_id);

class RobertaEmbeddings : public nn::Module {
 public:
  explicit RobertaEmbeddings(const BertConfig& c);
  // input_ids int64 [B, S] → [B, S, hidden].
  Tensor forward(const Tensor& input_ids) const;
  std::shared_ptr<nn::Embedding> word_embeddings, position_embeddings, token_type_embeddings;
  std::shared_ptr<nn::LayerNorm> LayerNorm;
  std::shared_ptr<nn::Dropout> dropout;
  int64_t padding_idx;
};

class RobertaLMHead : public nn::Module {
 public:
  RobertaLMHead(const BertConfig& c, const Tensor& word_embeddings);
  Tensor forward(const Tensor& hidden) const;
  std::shared_ptr<nn::Linear> dense;
  std::shared_ptr<nn::LayerNorm> layer_norm;
  Tensor decoder_weight, bias;
};

class RobertaForMaskedLM : public MaskedLMModel {
 public:
  // forward and forward_labelled (MaskedLMModel) throw Error when shapes
  // disagree or the positions (up to S + pad_token_id) exceed max_position_embeddings.
  explicit RobertaForMaskedLM(const BertConfig& config);
  std::shared_ptr<RobertaEmbeddings> embeddings;
  std::shared_ptr<BertEncoder> encoder;
  std::shared_ptr<RobertaLMHead> lm_head;
  void gradient_checkpointing_enable() override { encoder->gradient_checkpointing = true; }

 protected:
  const char* model_name() const override { return "RobertaForMaskedLM"; }
  Tensor sequence_output(const Tensor& input_ids, const Tensor& attention_mask) const override;
  Tensor lm_logits(const Tensor& hidden) const override { return lm_head->forward(hidden); }
};

}  // namespace lazytrain::models
