#include "data/auto_tokenizer.h"

#include <filesystem>

#include "core/error.h"
#include "data/gpt2_tokenizer.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/wordpiece_tokenizer.h"

namespace lazytrain::data {

namespace {
namespace fs = std::filesystem;
bool has_bpe_files(const std::string& path) {
  return fs::is_directory(path) && fs::is_regular_file(path + "/vocab.json") && fs::is_regular_file(path + "/merges.txt");
}
}  // namespace

std::unique_ptr<Tokenizer> AutoTokenizer::from_pretrained(const std::string& path, const std::string& model_type) {
  if (model_type == "gpt2" || has_bpe_files(path)) return std::make_unique<GPT2Tokenizer>(path);
  if (model_type == "bert") return std::make_unique<WordPieceTokenizer>(path);
  if (model_type == "roberta") return std::make_unique<SentencePieceTokenizer>(path);
  throw Error("[AutoTokenizer] model_type '" + model_type + "' has no tokenizer for '" + path +
              "': expected 'bert' (WordPiece vocab.txt), 'roberta' (SentencePiece model) or 'gpt2' (vocab.json and merges.txt)");
}

std::unique_ptr<Tokenizer> AutoTokenizer::from_files(const std::string& path) {
  if (has_bpe_files(path)) return std::make_unique<GPT2Tokenizer>(path);
  const fs::path p(path);
  if ((fs::is_directory(p) && fs::is_regular_file(p / "spm.model")) || (fs::is_regular_file(p) && p.extension() == ".model")) {
    return std::make_unique<SentencePieceTokenizer>(path);
  }
  if ((fs::is_directory(p) && fs::is_regular_file(p / "vocab.txt")) || (fs::is_regular_file(p) && p.extension() == ".txt")) {
    return std::make_unique<WordPieceTokenizer>(path);
  }
  throw Error("[AutoTokenizer] '" + path +
              "' holds no tokenizer: expected vocab.json and merges.txt (byte-level BPE), spm.model (SentencePiece) or vocab.txt (WordPiece)");
}

}  // namespace lazytrain::data
