// Tokenizer: what the text datasets, the collator and run_mlm need from a
// tokenizer, whatever its kind (Hugging Face's PreTrainedTokenizer methods of
// the same names). Implemented by WordPieceTokenizer (BERT: [CLS] ... [SEP]),
// SentencePieceTokenizer (RoBERTa: <s> ... </s>) and GPT2Tokenizer (byte-level
// BPE, no special tokens added); load one with
// AutoTokenizer::from_pretrained (data/auto_tokenizer.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/data_collator.h"

namespace lazytrain::data {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // HF tokenizer.encode(text, add_special_tokens): the token ids of `text`
  // (UTF-8), wrapped by build_inputs_with_special_tokens when
  // add_special_tokens. An empty text gives no ids (only the special tokens).
  // Throws lazytrain::Error on invalid UTF-8.
  virtual std::vector<int64_t> encode(std::string_view text, bool add_special_tokens = true) const = 0;

  // HF build_inputs_with_special_tokens for one sequence: BERT [CLS] ids [SEP],
  // RoBERTa <s> ids </s>.
  virtual std::vector<int64_t> build_inputs_with_special_tokens(std::span<const int64_t> ids) const = 0;

  // HF num_special_tokens_to_add(pair=False): how many tokens
  // build_inputs_with_special_tokens adds (2 for BERT and RoBERTa).
  int64_t num_special_tokens_to_add() const;

  // HF tokenizer.decode(ids, skip_special_tokens): the text of `ids`, with the
  // tokenizer's own clean-up (WordPiece joins "##" pieces and tightens spaces
  // before punctuation; SentencePiece renders its pieces, control tokens as
  // nothing). Special tokens are dropped when skip_special_tokens. Throws
  // lazytrain::Error naming the id for an id outside [0, vocab_size()).
  virtual std::string decode(std::span<const int64_t> ids, bool skip_special_tokens) const = 0;

  // HF convert_ids_to_tokens for one id: the token's own string ("##ing",
  // "▁the", "Ġworld"). Throws lazytrain::Error naming the id when it is
  // outside [0, vocab_size()).
  virtual std::string convert_id_to_token(int64_t id) const = 0;

  // HF tokenizer.mask_token: the text that stands for mask_token_id() in an
  // input ("[MASK]" for BERT, "<mask>" for RoBERTa).
  virtual std::string mask_token() const = 0;

  // HF len(tokenizer): ids are in [0, vocab_size()).
  virtual int64_t vocab_size() const = 0;
  virtual int64_t pad_token_id() const = 0;
  virtual int64_t mask_token_id() const = 0;
  // HF all_special_ids (the collator never masks them in an example without a
  // special_tokens_mask).
  virtual std::vector<int64_t> all_special_ids() const = 0;

  // HF tokenizer.save_pretrained(directory), the files the tokenizer loads from:
  // vocab.txt (WordPiece); spm.model, spm.vocab, special_tokens_map.json
  // (SentencePiece). Files are written atomically. Throws Error naming the file
  // when it cannot be written.
  virtual void save_pretrained(const std::string& directory) const = 0;

  // What DataCollatorForLanguageModeling needs: vocab_size, mask and pad ids,
  // all_special_ids.
  CollatorTokens collator_tokens() const;
};

// HF PreTrainedTokenizerBase.clean_up_tokenization (decode's
// clean_up_tokenization_spaces): " ." -> ".", " ?" -> "?", " !" -> "!",
// " ," -> ",", " ' " -> "'", " n't" -> "n't", " 'm" -> "'m", " 's" -> "'s",
// " 've" -> "'ve", " 're" -> "'re", each as Python's str.replace, in that order.
std::string clean_up_tokenization(std::string text);

}  // namespace lazytrain::data
