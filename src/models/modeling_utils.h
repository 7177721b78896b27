// What the masked-LM models share, as Hugging Face's modeling_utils.py:
// the model interface the Trainer and the CLI use (PreTrainedModel's forward,
// parameters and config) and get_extended_attention_mask.
#pragma once

#include "models/bert_config.h"
#include "nn/module.h"
#include "tensor/tensor.h"

namespace lazytrain::models {

struct MaskedLMOutput {
  Tensor loss;    // 0-d, defined when labels were given
  Tensor logits;  // [B, S, vocab_size]
  Tensor labelled_logits;  // forward_labelled: the labelled tokens' [K, vocab_size]
};

// A masked language model (BertForMaskedLM, RobertaForMaskedLM): its parameters
// through nn::Module, its config, and one forward.
class MaskedLMModel : public nn::Module {
 public:
  explicit MaskedLMModel(BertConfig config) : config_(std::move(config)) {}
  // input_ids, attention_mask int64 [B, S] (mask 1 = attend); labels int64
  // [B, S] with -100 where no loss is taken, or undefined (no loss). logits
  // are [B, S, vocab_size], as Hugging Face's. Throws Error naming the model
  // when shapes disagree or S exceeds the positions.
  MaskedLMOutput forward(const Tensor& input_ids, const Tensor& attention_mask, const Tensor& labels = Tensor()) const;
  // The same loss, with the LM head run on the labelled tokens only:
  // masked_lm_positions int64 [K] are flat indices into the B*S tokens and
  // masked_lm_labels int64 [K] their labels (-100 ignored), as
  // data::labelled_positions makes them. logits are [K, vocab_size]; the loss
  // has the terms and the count of forward()'s. With `all_logits` the logits
  // are forward()'s [B, S, vocab_size] instead (what Hugging Face returns; a
  // lazy value, computed only if something reads it) and the loss is still
  // the labelled rows'. Throws Error as forward(), or when the two are not 1-D
  // of one length.
  MaskedLMOutput forward_labelled(const Tensor& input_ids, const Tensor& attention_mask, const Tensor& masked_lm_positions,
                                  const Tensor& masked_lm_labels, bool all_logits = false) const;
  const BertConfig& config() const { return config_; }
  // Hugging Face's gradient_checkpointing_enable(): the encoder recomputes each
  // layer's activations during backward in training (nn/checkpoint.h).
  virtual void gradient_checkpointing_enable() = 0;

 protected:
  // "BertForMaskedLM": names the model in errors.
  virtual const char* model_name() const = 0;
  // The encoder's last hidden state [B, S, hidden] (checks the shapes first).
  virtual Tensor sequence_output(const Tensor& input_ids, const Tensor& attention_mask) const = 0;
  // The LM head: hidden [..., hidden] -> logits [..., vocab_size].
  virtual Tensor lm_logits(const Tensor& hidden) const = 0;

  BertConfig config_;
};

// get_extended_attention_mask for an encoder: attention_mask int64 [B, S]
// (1 = attend) → the additive f32 mask [B, 1, 1, S], (1 - mask) * finfo(float32).min.
Tensor get_extended_attention_mask(const Tensor& attention_mask);

// The masked-LM loss of `logits` [B, S, V] against `labels` [B, S] (-100 ignored):
// cross_entropy over the flattened tokens; Error naming `model` when labels'
// shape differs from [B, S].
Tensor masked_lm_loss(const Tensor& logits, const Tensor& labels, const char* model);

}  // namespace lazytrain::models
