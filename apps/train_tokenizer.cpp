// `lazytrain train_tokenizer`: trains a SentencePiece Unigram or BPE model with
// RoBERTa's special tokens (src/data/sentencepiece_tokenizer.h).
#include <cstdio>

#include "apps/commands.h"
#include "data/sentencepiece_tokenizer.h"

namespace lazytrain::apps {

void add_train_tokenizer_command(CLI::App& app, TrainTokenizerOptions& o) {
  CLI::App* c = app.add_subcommand("train_tokenizer", "Train a SentencePiece tokenizer (Unigram or BPE) on text files");
  c->add_option("--model_type", o.model_type, "unigram or bpe")->check(CLI::IsMember({"unigram", "bpe"}));
  c->add_option("--vocab_size", o.vocab_size, "Vocabulary size, special tokens included")->check(CLI::Range(262, 1 << 20));
  c->add_option("--character_coverage", o.character_coverage, "Share of characters the pieces cover (SentencePiece's option)")
      ->check(CLI::Range(0.98, 1.0));
  c->add_option("--max_sentence_length", o.max_sentence_length,
                 "Longest line trained on, in bytes; longer lines are skipped (SentencePiece's option; default: the longest input line)")
      ->check(CLI::Range(1, 2147483647));
  c->add_option("--input", o.input, "Text files, one sentence per line")->required();
  c->add_option("--output_dir", o.output_dir, "Where to write spm.model, spm.vocab, special_tokens_map.json")->required();
}

int train_tokenizer(const TrainTokenizerOptions& o) {
  data::SentencePieceTrainOptions t;
  t.model_type = o.model_type;
  t.vocab_size = o.vocab_size;
  t.input_files = o.input;
  t.character_coverage = o.character_coverage;
  t.output_dir = o.output_dir;
  t.max_sentence_length = o.max_sentence_length.value_or(0);
  const data::SentencePieceTrainSummary summary = data::train_sentencepiece(t);
  if (summary.skipped_long_lines > 0) {
    std::fprintf(stderr,
                 "warning: %lld of %lld lines were skipped as longer than --max_sentence_length %lld bytes (the longest has %lld); "
                 "pass --max_sentence_length %lld, or leave it out, to train on them\n",
                 static_cast<long long>(summary.skipped_long_lines), static_cast<long long>(summary.num_lines),
                 static_cast<long long>(summary.max_sentence_length), static_cast<long long>(summary.longest_line_bytes),
                 static_cast<long long>(summary.longest_line_bytes));
  }
  data::SentencePieceTokenizer tokenizer(o.output_dir);
  std::printf("trained a %s SentencePiece model with %lld pieces: %s\n", o.model_type.c_str(), static_cast<long long>(tokenizer.vocab_size()),
              tokenizer.model_file().c_str());
  return 0;
}

}  // namespace lazytrain::apps
