// `lazytrain make_tfrecords`: a text corpus as TFRecord shards of fixed-size
// token blocks (src/data/tfrecord_shards.h).
#include <cstdio>

#include "apps/commands.h"
#include <filesystem>

#include "data/auto_tokenizer.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/tfrecord_shards.h"

namespace lazytrain::apps {

void add_make_tfrecords_command(CLI::App& app, MakeTfrecordsOptions& o) {
  CLI::App* c = app.add_subcommand("make_tfrecords", "Tokenize text files into TFRecord shards of fixed-size token blocks");
  c->add_option("--tokenizer", o.tokenizer, "A SentencePiece model directory (lazytrain train_tokenizer) or a GPT-2 tokenizer directory (vocab.json, merges.txt)")->required();
  c->add_option("--max_seq_length", o.max_seq_length, "Tokens per example (block)");
  c->add_option("--shard_size", o.shard_size, "Examples per shard");
  c->add_option("--input", o.input, "Text files, one document or sentence per line")->required();
  c->add_option("--output_dir", o.output_dir, "Where to write <prefix>-NNNNN-of-NNNNN.tfrecord and <prefix>.json")->required();
  c->add_option("--prefix", o.prefix, "Shard file name prefix (e.g. train, validation)");
}

int make_tfrecords(const MakeTfrecordsOptions& o) {
  // GPT-2's byte-level BPE from its files; otherwise the recipe's SentencePiece
  // model (whose loader names what is wrong with anything else, a WordPiece vocab.txt too).
  std::unique_ptr<data::Tokenizer> tokenizer;
  if (std::filesystem::is_regular_file(o.tokenizer + "/vocab.json") && std::filesystem::is_regular_file(o.tokenizer + "/merges.txt")) {
    tokenizer = data::AutoTokenizer::from_files(o.tokenizer);
  } else {
    tokenizer = std::make_unique<data::SentencePieceTokenizer>(o.tokenizer);
  }
  data::TFRecordShardOptions s;
  s.tokenizer_name = o.tokenizer;
  s.max_seq_length = o.max_seq_length;
  s.shard_size = o.shard_size;
  s.output_dir = o.output_dir;
  s.prefix = o.prefix;
  data::TFRecordShardSummary summary = data::write_tfrecord_shards(o.input, *tokenizer, s);
  std::printf("wrote %lld examples of %lld tokens (%lld text tokens) in %zu shard%s: %s/%s-*.tfrecord\n",
              static_cast<long long>(summary.num_examples), static_cast<long long>(o.max_seq_length),
              static_cast<long long>(summary.num_tokens), summary.files.size(), summary.files.size() == 1 ? "" : "s", o.output_dir.c_str(),
              o.prefix.c_str());
  return 0;
}

}  // namespace lazytrain::apps
