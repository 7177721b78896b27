// SentencePiece tokenizers (https://github.com/google/sentencepiece), trained
// and loaded through the SentencePiece library: Unigram (the TF/TPU recipe's
// choice) or BPE, with the special tokens RoBERTa uses at fairseq's ids:
//   <s> = 0 (bos, cls), <pad> = 1, </s> = 2 (eos, sep), <unk> = 3, <mask> = 4,
// then the 256 byte pieces (<0x00>..<0xFF>: byte fallback, so that characters
// unseen in training round-trip instead of becoming <unk>), then the learned pieces. A model directory holds `spm.model` (SentencePiece's
// serialized ModelProto), `spm.vocab` (piece<TAB>score, as spm_train writes it)
// and `special_tokens_map.json`.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace lazytrain::data {

struct SentencePieceTrainOptions {
  std::string model_type = "unigram";  // "unigram" or "bpe"
  int64_t vocab_size = 8000;           // including the 5 special tokens and the 256 byte pieces
  std::vector<std::string> input_files;
  std::string output_dir;
  double character_coverage = 0.9995;  // SentencePiece's default; SentencePiece accepts [0.98, 1]
  int num_threads = 2;
  // SentencePiece's max_sentence_length: lines longer than this many bytes are
  // skipped in training. 0: the longest line of the input (at least
  // SentencePiece's default, 4192), so every line is trained on.
  int64_t max_sentence_length = 0;
};

// What train_sentencepiece trained on.
struct SentencePieceTrainSummary {
  int64_t num_lines = 0;                // non-empty lines of the input files
  int64_t longest_line_bytes = 0;
  int64_t max_sentence_length = 0;      // the value SentencePiece was given
  int64_t skipped_long_lines = 0;       // lines longer than max_sentence_length, left out of training
};

// The default of SentencePiece's TrainerSpec.max_sentence_length, in bytes.
inline constexpr int64_t kSentencePieceMaxSentenceLength = 4192;

// Trains a model on the text files (one sentence per line; empty lines are
// ignored) and writes the model directory (created if absent; the files appear
// atomically). Lines longer than options.max_sentence_length bytes are skipped
// and counted in the summary. Throws lazytrain::Error naming the problem: an
// unknown model type, a vocab_size below 262, a negative or too large
// max_sentence_length, a missing or empty input file, every line longer than
// max_sentence_length, or a vocabulary the corpus is too small for
// (SentencePiece's own message, plus the count of lines skipped for length).
SentencePieceTrainSummary train_sentencepiece(const SentencePieceTrainOptions& options);

class SentencePieceTokenizer : public Tokenizer {
 public:
  // Loads `path`: a model directory (holding spm.model) or a .model file.
  // Throws Error when it is missing, not a SentencePiece model, or lacks the
  // special tokens above.
  explicit SentencePieceTokenizer(const std::string& path);
  ~SentencePieceTokenizer();
  SentencePieceTokenizer(SentencePieceTokenizer&&) noexcept;

  // Piece ids of `text` (SentencePiece normalizes it, NFKC by default), with
  // <s> ... </s> around them when add_special_tokens. "<mask>" in the text is
  // the mask token and takes the whitespace before it, as RoBERTa's (HF
  // AddedToken lstrip=True): "the <mask> of" encodes as ▁the <mask> ▁of.
  std::vector<int64_t> encode(std::string_view text, bool add_special_tokens = true) const override;
  // <s> ids </s> (HF RobertaTokenizer.build_inputs_with_special_tokens).
  std::vector<int64_t> build_inputs_with_special_tokens(std::span<const int64_t> ids) const override;
  std::vector<std::string> tokenize(std::string_view text) const;
  // The text of `ids` (SentencePiece's Decode: <s> and </s> render as nothing,
  // <mask> as itself); the special tokens but <unk> dropped when skip_special_tokens.
  std::string decode(std::span<const int64_t> ids, bool skip_special_tokens = true) const override;
  std::string mask_token() const override { return "<mask>"; }
  // The piece of `id` ("▁the", "<0x0A>", "<mask>").
  std::string convert_id_to_token(int64_t id) const override;

  int64_t vocab_size() const override;
  int64_t bos_token_id() const { return 0; }
  int64_t pad_token_id() const override { return 1; }
  int64_t eos_token_id() const { return 2; }
  int64_t unk_token_id() const { return 3; }
  int64_t mask_token_id() const override { return 4; }
  std::vector<int64_t> all_special_ids() const override { return {0, 1, 2, 3, 4}; }
  // Copies spm.model, and spm.vocab and special_tokens_map.json when they sit
  // beside it (a bare .model file has none), into `directory`, atomically.
  void save_pretrained(const std::string& directory) const override;
  const std::string& model_file() const { return model_file_; }

 private:
  std::string model_file_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

}  // namespace lazytrain::data
