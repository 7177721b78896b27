// WordPieceTokenizer: Hugging Face's BertTokenizer (e.g. bert-base-uncased)
// rebuilt natively: BasicTokenizer, then greedy longest-match-first WordPiece
// with the "##" continuation prefix.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/basic_tokenizer.h"
#include "data/tokenizer.h"

namespace lazytrain::data {

struct WordPieceTokenizerOptions {
  BasicTokenizerOptions basic;          // do_lower_case, tokenize_chinese_chars, strip_accents
  int max_input_chars_per_word = 100;   // HF WordpieceTokenizer.max_input_chars_per_word
  std::string unk_token = "[UNK]";
  std::string sep_token = "[SEP]";
  std::string pad_token = "[PAD]";
  std::string cls_token = "[CLS]";
  std::string mask_token = "[MASK]";
};

class WordPieceTokenizer : public Tokenizer {
 public:
  // Loads a vocabulary: `path` is a vocab.txt (one token per line, id = line
  // number from 0, as HF load_vocab) or a directory holding vocab.txt.
  // Throws lazytrain::Error naming the file when it cannot be opened, is empty,
  // is not UTF-8, or lacks one of the special tokens ([UNK] [SEP] [PAD] [CLS] [MASK]).
  explicit WordPieceTokenizer(const std::filesystem::path& path,
                              WordPieceTokenizerOptions options = {});

  // HF BertTokenizer.tokenize(text): special-token strings in the text (e.g.
  // "[MASK]") are kept whole; the rest goes through BasicTokenizer and then
  // WordPiece. Unknown words become [UNK]. Throws Error on invalid UTF-8.
  std::vector<std::string> tokenize(std::string_view text) const;

  // HF WordpieceTokenizer.tokenize for one word from BasicTokenizer: greedy
  // longest-match-first over the vocabulary, pieces after the first prefixed
  // "##"; a word longer than max_input_chars_per_word characters, or one that
  // cannot be covered, is the single token [UNK].
  std::vector<std::string> wordpiece(std::string_view word) const;

  // HF tokenizer.encode(text, add_special_tokens): token ids of tokenize(text),
  // wrapped as [CLS] ... [SEP] when add_special_tokens is true.
  std::vector<int64_t> encode(std::string_view text, bool add_special_tokens = true) const override;

  // HF build_inputs_with_special_tokens: [CLS] ids [SEP].
  std::vector<int64_t> build_inputs_with_special_tokens(std::span<const int64_t> ids) const override;

  // HF get_special_tokens_mask(ids, already_has_special_tokens=True): 1 where the
  // id is one of all_special_ids(), else 0.
  std::vector<uint8_t> get_special_tokens_mask(std::span<const int64_t> ids) const;

  // HF convert_tokens_to_ids: the id of each token; tokens not in the vocabulary map to [UNK].
  int64_t convert_token_to_id(std::string_view token) const;
  std::vector<int64_t> convert_tokens_to_ids(std::span<const std::string> tokens) const;

  // HF convert_ids_to_tokens(ids, skip_special_tokens). Throws Error for an id
  // outside [0, vocab_size()).
  std::string convert_id_to_token(int64_t id) const override;
  std::vector<std::string> convert_ids_to_tokens(std::span<const int64_t> ids,
                                                 bool skip_special_tokens = false) const;

  // HF BertTokenizer.decode: tokens joined by spaces with " ##" removed, then
  // (clean_up_tokenization_spaces) " ." -> "." , " ?" , " !" , " ," , " ' ",
  // " n't", " 'm", " 's", " 've", " 're" tightened. Throws Error for a bad id.
  std::string decode(std::span<const int64_t> ids, bool skip_special_tokens,
                     bool clean_up_tokenization_spaces) const;
  // decode(ids, skip_special_tokens, clean_up_tokenization_spaces=true).
  std::string decode(std::span<const int64_t> ids, bool skip_special_tokens = false) const override {
    return decode(ids, skip_special_tokens, true);
  }
  std::string mask_token() const override { return options_.mask_token; }

  // Number of vocabulary lines (HF len(tokenizer) for an unmodified vocab.txt).
  int64_t vocab_size() const override { return static_cast<int64_t>(id_to_token_.size()); }

  int64_t unk_token_id() const { return unk_id_; }
  int64_t sep_token_id() const { return sep_id_; }
  int64_t pad_token_id() const override { return pad_id_; }
  int64_t cls_token_id() const { return cls_id_; }
  int64_t mask_token_id() const override { return mask_id_; }
  // HF all_special_ids / all_special_tokens, in HF order: [UNK] [SEP] [PAD] [CLS] [MASK].
  std::vector<int64_t> all_special_ids() const override { return {unk_id_, sep_id_, pad_id_, cls_id_, mask_id_}; }
  std::vector<std::string> all_special_tokens() const;

  // Writes <directory>/vocab.txt: every token, one a line in id order (HF
  // BertTokenizer.save_vocabulary), atomically; not a copy of the source file,
  // which may be read-only. Throws Error naming the file when it cannot be written.
  void save_pretrained(const std::string& directory) const override;

  const std::filesystem::path& vocab_file() const { return vocab_file_; }
  const WordPieceTokenizerOptions& options() const { return options_; }

 private:
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  int64_t find_id(std::string_view token) const;  // -1 when absent
  bool is_special_id(int64_t id) const;

  std::filesystem::path vocab_file_;
  WordPieceTokenizerOptions options_;
  BasicTokenizer basic_;
  std::vector<std::string> id_to_token_;
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> token_to_id_;
  int64_t unk_id_ = -1, sep_id_ = -1, pad_id_ = -1, cls_id_ = -1, mask_id_ = -1;
};

}  // namespace lazytrain::data
