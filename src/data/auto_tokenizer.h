// AutoTokenizer: loads the tokenizer of a model type behind the Tokenizer
// interface (data/tokenizer.h), as Hugging Face's AutoTokenizer.from_pretrained
// does from a model's files:
//   bert    -> WordPieceTokenizer: a vocab.txt, or a directory holding one;
//   roberta -> SentencePieceTokenizer: a directory written by
//              `lazytrain train_tokenizer` (spm.model ...), or its .model file;
//   gpt2    -> GPT2Tokenizer: a directory holding vocab.json and merges.txt.
// A directory holding vocab.json and merges.txt is a byte-level BPE tokenizer
// whatever the model type; from_files() picks the kind from the files alone.
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
  // The tokenizer of the files at `path`: vocab.json + merges.txt (byte-level
  // BPE), spm.model or a .model file (SentencePiece), vocab.txt or a .txt file
  // (WordPiece). Throws Error naming the path and the files looked for otherwise.
  static std::unique_ptr<Tokenizer> from_files(const std::string& path);
};

}  // namespace lazytrain::data
