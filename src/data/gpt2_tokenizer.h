// GPT2Tokenizer: byte-level BPE (Radford et al. 2019; Hugging Face's
// GPT2Tokenizer, also RoBERTa's original), loaded from a model directory's
// vocab.json (token -> id) and merges.txt (one merge "a b" a line, by rank,
// after a "#version" line).
//
// encode: the text is split on the special token <|endoftext|>, each piece is
// pre-tokenized with GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (letters and numbers by Unicode category, whitespace as Python's
// str.isspace), every byte of a pre-token is mapped to a printable character
// (bytes_to_unicode: " " -> "Ġ", "\n" -> "Ċ"), and the merges are applied
// lowest rank first. Bytes that are not valid UTF-8 are pre-tokenized as
// punctuation, so every byte string encodes, and decode(encode(s)) == s for
// any s. GPT-2 adds no special tokens to a sequence (add_special_tokens has no
// effect, as in Hugging Face's); <|endoftext|> is bos, eos and unk.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/tokenizer.h"

namespace lazytrain::data {

class GPT2Tokenizer : public Tokenizer {
 public:
  // `path`: a directory holding vocab.json and merges.txt. Throws
  // lazytrain::Error naming the file when one is missing or malformed (not a
  // JSON object of string -> integer; a merge line without two parts; a merge
  // whose parts or result are not in the vocabulary).
  explicit GPT2Tokenizer(const std::string& path);

  std::vector<int64_t> encode(std::string_view text, bool add_special_tokens = true) const override;
  std::vector<int64_t> build_inputs_with_special_tokens(std::span<const int64_t> ids) const override;
  // The bytes of `ids`' tokens (HF decode without clean-up; invalid UTF-8 is
  // returned as it is rather than replaced).
  std::string decode(std::span<const int64_t> ids, bool skip_special_tokens) const override;
  std::string convert_id_to_token(int64_t id) const override;
  // GPT-2 has no mask token: "" and -1.
  std::string mask_token() const override { return ""; }
  int64_t vocab_size() const override { return static_cast<int64_t>(tokens_.size()); }
  // No pad token either: the eos id, as run_clm's users set pad_token = eos_token.
  int64_t pad_token_id() const override { return eos_id_; }
  int64_t mask_token_id() const override { return -1; }
  std::vector<int64_t> all_special_ids() const override { return {eos_id_}; }
  // vocab.json and merges.txt, as loaded.
  void save_pretrained(const std::string& directory) const override;

  int64_t eos_token_id() const { return eos_id_; }
  static constexpr const char* kEndOfText = "<|endoftext|>";

  // GPT-2's pre-tokenization of `text` (byte ranges of it, in order).
  static std::vector<std::string_view> pre_tokenize(std::string_view text);

 private:
  // The BPE tokens of one pre-token's mapped characters.
  std::vector<int64_t> bpe(std::string_view pre_token) const;

  std::unordered_map<std::string, int64_t> vocab_;
  std::vector<std::string> tokens_;  // id -> token (mapped characters)
  std::map<std::pair<std::string, std::string>, int64_t> merge_rank_;
  std::string merges_text_;
  int64_t eos_id_ = -1;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int64_t>> cache_;  // pre-token -> ids
};

}  // namespace lazytrain::data
