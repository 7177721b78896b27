// AutoTokenizer: loads the tokenizer of a model type behind the Tokenizer
// interface (data/tokenizer.h), as Hugging Face's AutoTokenizer.from_pretrained
// does from a model's files:
//   bert    -> WordPieceTokenizer: a vocab.txt, or a directory holding one;
//   roberta -> SentencePieceTokenizer: a directory written by
//              `lazytrain train_tokenizer` (spm.model ...), or its .model file.
#pragma once

#include <memory>
#include <string>

#include "data/tokenizer.h"

namespace lazytrain::data {

struct AutoTokenizer {
  // Throws lazytrain::Error naming the path when the tokenizer's files are
  // missing or malformed (the tokenizer's own message), and for a model_type
  // other than "bert" or "roberta".
  static std::unique_ptr<Tokenizer> from_pretrained(const std::string& path, const std::string& model_type);
};

}  // namespace lazytrain::data
