// BasicTokenizer: the pre-tokenization step of Hugging Face's BertTokenizer
// (transformers.models.bert.tokenization_bert.BasicTokenizer).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lazytrain::data {

struct BasicTokenizerOptions {
  bool do_lower_case = true;           // HF do_lower_case
  bool tokenize_chinese_chars = true;  // HF tokenize_chinese_chars
  // HF strip_accents: unset means "same as do_lower_case".
  std::optional<bool> strip_accents;
};

class BasicTokenizer {
 public:
  explicit BasicTokenizer(BasicTokenizerOptions options = {}) : options_(options) {}

  // Splits UTF-8 `text` into words, as HF BasicTokenizer.tokenize does:
  //  1. clean: drop U+0000, U+FFFD and control/format/unassigned characters
  //     (category C*, except \t \n \r); every whitespace character becomes ' ';
  //  2. surround every CJK ideograph with spaces (tokenize_chinese_chars);
  //  3. split on whitespace;
  //  4. per word: lower-case (Python str.lower) and strip accents (NFD, drop Mn);
  //  5. split every punctuation character (ASCII punctuation or category P*)
  //     into its own word.
  // Returns the words in order, never empty strings. Throws lazytrain::Error
  // "[BasicTokenizer] invalid UTF-8 at byte offset N ..." for invalid UTF-8.
  std::vector<std::string> tokenize(std::string_view text) const;

  const BasicTokenizerOptions& options() const { return options_; }

 private:
  BasicTokenizerOptions options_;
};

}  // namespace lazytrain::data
