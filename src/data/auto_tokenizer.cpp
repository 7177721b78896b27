#include "data/auto_tokenizer.h"

#include "core/error.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/wordpiece_tokenizer.h"

namespace lazytrain::data {

std::unique_ptr<Tokenizer> AutoTokenizer::from_pretrained(const std::string& path, const std::string& model_type) {
  if (model_type == "bert") return std::make_unique<WordPieceTokenizer>(path);
  if (model_type == "roberta") return std::make_unique<SentencePieceTokenizer>(path);
  throw Error("[AutoTokenizer] model_type '" + model_type + "' has no tokenizer for '" + path +
              "': expected 'bert' (WordPiece vocab.txt) or 'roberta' (SentencePiece model)");
}

}  // namespace lazytrain::data
