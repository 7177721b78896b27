// SentencePiece training and the tokenizer: RoBERTa's special tokens at fixed
// ids, text round trips, Unigram and BPE, and clear errors.
#include "data/sentencepiece_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <unistd.h>

#include "core/error.h"
#include "data/auto_tokenizer.h"
#include "data/text_dataset.h"
#include "data/wordpiece_tokenizer.h"
#include "data_test_util.h"

namespace lazytrain::data {
namespace {

namespace fs = std::filesystem;

class SentencePieceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string((fs::temp_directory_path() / ("lazytrain_spm_" + std::to_string(::getpid()))).string());
    fs::create_directories(*dir_);
    // The first 3000 lines of WikiText-2's validation split.
    std::ifstream in(testing::data_dir() / "wikitext-2" / "valid.txt");
    std::ofstream out(*dir_ + "/corpus.txt");
    std::string line;
    for (int i = 0; i < 3000 && std::getline(in, line); ++i) out << line << "\n";
    for (const char* type : {"unigram", "bpe"}) {
      SentencePieceTrainOptions o;
      o.model_type = type;
      o.vocab_size = 1000;
      o.input_files = {*dir_ + "/corpus.txt"};
      o.output_dir = *dir_ + "/" + type;
      train_sentencepiece(o);
    }
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string* dir_;
};
std::string* SentencePieceTest::dir_ = nullptr;

TEST_F(SentencePieceTest, ModelDirectoryHasRobertasSpecialTokens) {
  for (const char* type : {"unigram", "bpe"}) {
    SCOPED_TRACE(type);
    const std::string dir = *dir_ + "/" + type;
    EXPECT_TRUE(fs::exists(dir + "/spm.model"));
    EXPECT_TRUE(fs::exists(dir + "/special_tokens_map.json"));
    std::ifstream vocab(dir + "/spm.vocab");
    std::string first;
    std::getline(vocab, first);
    EXPECT_EQ(first, "<s>\t0.000000");
    SentencePieceTokenizer t(dir);
    EXPECT_EQ(t.vocab_size(), 1000);
    EXPECT_EQ(t.tokenize("<mask>"), (std::vector<std::string>{"▁", "<mask>"}));  // a user-defined symbol stays whole
    EXPECT_EQ(t.encode("\xe2\x98\x83", false).size(), 4u);  // an unseen character: "▁" and its 3 UTF-8 bytes
    const std::vector<int64_t> ids = t.encode("the game");
    ASSERT_GE(ids.size(), 3u);
    EXPECT_EQ(ids.front(), 0);  // <s>
    EXPECT_EQ(ids.back(), 2);   // </s>
    CollatorTokens c = t.collator_tokens();
    EXPECT_EQ(c.mask_token_id, 4);
    EXPECT_EQ(c.pad_token_id, 1);
  }
}

TEST_F(SentencePieceTest, TextRoundTrips) {
  const std::vector<std::string> texts = {"The game began development in 2010 , carrying over a large portion of the work .",
                                          "Valkyria Chronicles III", "unseenwordzzz with digits 12345 and ünïcödé"};
  for (const char* type : {"unigram", "bpe"}) {
    SentencePieceTokenizer t(*dir_ + "/" + type);
    for (const std::string& text : texts) {
      EXPECT_EQ(t.decode(t.encode(text)), text) << type;
      EXPECT_EQ(t.decode(t.encode(text, false), false), text) << type;
    }
  }
  // Unigram and BPE learn different segmentations.
  EXPECT_NE(SentencePieceTokenizer(*dir_ + "/unigram").tokenize(texts[0]), SentencePieceTokenizer(*dir_ + "/bpe").tokenize(texts[0]));
}

TEST_F(SentencePieceTest, BadInputGetsOneClearError) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  SentencePieceTrainOptions o;
  o.input_files = {*dir_ + "/corpus.txt"};
  o.output_dir = *dir_ + "/too_big";
  o.vocab_size = 500000;
  EXPECT_NE(message([&] { train_sentencepiece(o); }).find("Vocabulary size"), std::string::npos);
  EXPECT_FALSE(fs::exists(*dir_ + "/too_big/spm.model"));
  o.vocab_size = 100;
  EXPECT_NE(message([&] { train_sentencepiece(o); }).find("at least 262"), std::string::npos);
  o.vocab_size = 300;
  o.input_files = {*dir_ + "/missing.txt"};
  EXPECT_NE(message([&] { train_sentencepiece(o); }).find("'" + *dir_ + "/missing.txt' does not exist"), std::string::npos);
  o.input_files = {*dir_ + "/corpus.txt"};
  o.model_type = "wordpiece";
  EXPECT_NE(message([&] { train_sentencepiece(o); }).find("unigram or bpe"), std::string::npos);
  EXPECT_NE(message([&] { SentencePieceTokenizer t(*dir_ + "/nothing_here"); }).find("no model at"), std::string::npos);
  std::ofstream(*dir_ + "/not_a_model.model") << "hello";
  EXPECT_NE(message([&] { SentencePieceTokenizer t(*dir_ + "/not_a_model.model"); }).find("is not a SentencePiece model"), std::string::npos);
}


std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// RoBERTa's datasets go through the same Tokenizer path as BERT's: <s> ... </s>
// per line (a blank line is <s> </s>), and --line_by_line padded with <pad>.
TEST_F(SentencePieceTest, TextDatasetsThroughTheTokenizerInterface) {
  const std::unique_ptr<Tokenizer> t = AutoTokenizer::from_pretrained(*dir_ + "/unigram", "roberta");
  ASSERT_NE(dynamic_cast<const SentencePieceTokenizer*>(t.get()), nullptr);
  EXPECT_EQ(t->vocab_size(), 1000);
  const std::vector<int64_t> game = t->encode("the game", false);
  ASSERT_GE(game.size(), 2u);
  const auto examples = tokenize_lines({"the game", ""}, *t);
  ASSERT_EQ(examples.size(), 2u);
  std::vector<int64_t> expected{0};
  expected.insert(expected.end(), game.begin(), game.end());
  expected.push_back(2);
  EXPECT_EQ(examples[0].input_ids, expected);
  std::vector<uint8_t> mask(expected.size(), 0);
  mask.front() = mask.back() = 1;
  EXPECT_EQ(examples[0].special_tokens_mask, mask);
  EXPECT_EQ(examples[1].input_ids, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(examples[1].special_tokens_mask, (std::vector<uint8_t>{1, 1}));

  const int64_t len = static_cast<int64_t>(game.size()) + 4;
  const auto padded = tokenize_line_by_line({"the game", "\t "}, *t, len, /*pad_to_max_length=*/true);
  ASSERT_EQ(padded.size(), 1u);
  std::vector<int64_t> with_pad = expected;
  with_pad.resize(static_cast<size_t>(len), 1);  // <pad>
  EXPECT_EQ(padded[0].input_ids, with_pad);
  EXPECT_EQ(padded[0].attention_mask.back(), 0);
  EXPECT_EQ(padded[0].special_tokens_mask.back(), 1);
  // Truncated: <s>, the first token, </s>.
  const auto cut = tokenize_line_by_line({"the game"}, *t, 3, false);
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut[0].input_ids, (std::vector<int64_t>{0, game[0], 2}));

  const DataCollatorForLanguageModeling collator(*t);
  EXPECT_EQ(collator.tokens().pad_token_id, 1);
  EXPECT_EQ(collator.tokens().mask_token_id, 4);
  EXPECT_EQ(collator.tokens().special_ids, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST_F(SentencePieceTest, AutoTokenizerLoadsEachModelType) {
  const std::unique_ptr<Tokenizer> bert = AutoTokenizer::from_pretrained(testing::bert_vocab().string(), "bert");
  ASSERT_NE(dynamic_cast<const WordPieceTokenizer*>(bert.get()), nullptr);
  EXPECT_EQ(bert->vocab_size(), 30522);
  EXPECT_EQ(bert->encode("hello world"), (std::vector<int64_t>{101, 7592, 2088, 102}));
  EXPECT_EQ(message_of([&] { AutoTokenizer::from_pretrained(*dir_ + "/unigram", "t5"); }),
            "[AutoTokenizer] model_type 't5' has no tokenizer for '" + *dir_ +
                "/unigram': expected 'bert' (WordPiece vocab.txt), 'roberta' (SentencePiece model) or 'gpt2' (vocab.json and merges.txt)");
  EXPECT_NE(message_of([&] { AutoTokenizer::from_pretrained(testing::bert_vocab().string(), "roberta"); })
                .find("a WordPiece vocab.txt is for --model_type bert"),
            std::string::npos);
}

TEST_F(SentencePieceTest, SavePretrainedWritesTheFilesItLoadsFrom) {
  const std::string out = *dir_ + "/saved";
  fs::create_directories(out);
  AutoTokenizer::from_pretrained(*dir_ + "/bpe", "roberta")->save_pretrained(out);
  for (const char* name : {"spm.model", "spm.vocab", "special_tokens_map.json"}) {
    EXPECT_EQ(read_all(out + "/" + name), read_all(*dir_ + "/bpe/" + name)) << name;
  }
  EXPECT_EQ(SentencePieceTokenizer(out).encode("the game"), SentencePieceTokenizer(*dir_ + "/bpe").encode("the game"));
  WordPieceTokenizer(testing::bert_vocab()).save_pretrained(out);
  EXPECT_EQ(read_all(out + "/vocab.txt"), read_all(testing::bert_vocab().string()));
}

// WikiText-2's first 3000 lines joined and cut every 6000 characters (the
// remainder dropped): every line is longer than SentencePiece's default max_sentence_length (4192 bytes).
std::string long_line_corpus(const std::string& dir) {
  std::ifstream in(testing::data_dir() / "wikitext-2" / "valid.txt");
  std::string joined, line;
  for (int i = 0; i < 3000 && std::getline(in, line); ++i) joined += line + " ";
  const std::string path = dir + "/long_lines.txt";
  std::ofstream out(path);
  size_t begin = 0;
  while (begin < joined.size()) {
    size_t end = begin;
    int chars = 0;
    for (; chars < 6000 && end < joined.size(); ++chars) {
      ++end;
      while (end < joined.size() && (static_cast<unsigned char>(joined[end]) & 0xC0) == 0x80) ++end;  // whole characters
    }
    if (chars < 6000) break;  // every line is 6000 characters
    out << joined.substr(begin, end - begin) << "\n";
    begin = end;
  }
  return path;
}

TEST_F(SentencePieceTest, TrainsOnLinesLongerThanSentencePiecesDefault) {
  SentencePieceTrainOptions o;
  o.input_files = {long_line_corpus(*dir_)};
  o.output_dir = *dir_ + "/long";
  o.vocab_size = 1000;
  const SentencePieceTrainSummary summary = train_sentencepiece(o);
  EXPECT_GE(summary.num_lines, 30);
  EXPECT_GE(summary.longest_line_bytes, 6000);
  EXPECT_EQ(summary.max_sentence_length, summary.longest_line_bytes);
  EXPECT_EQ(summary.skipped_long_lines, 0);
  EXPECT_EQ(SentencePieceTokenizer(o.output_dir).vocab_size(), 1000);

  // An explicit limit below every line: nothing to train on, said plainly.
  o.max_sentence_length = kSentencePieceMaxSentenceLength;
  o.output_dir = *dir_ + "/long_explicit";
  EXPECT_EQ(message_of([&] { train_sentencepiece(o); }),
            "[SentencePiece] every line of " + o.input_files[0] +
                " that holds text is longer than --max_sentence_length 4192 bytes (the longest has " +
                std::to_string(summary.longest_line_bytes) + "), so none is left to train on; pass --max_sentence_length " +
                std::to_string(summary.longest_line_bytes) + " (or leave it out: it defaults to the longest line)");
  EXPECT_FALSE(fs::exists(o.output_dir + "/spm.model"));

  // One short line left: SentencePiece's vocabulary error, with the lines it skipped.
  std::ofstream(o.input_files[0], std::ios::app) << "a short line\n";
  const std::string why = message_of([&] { train_sentencepiece(o); });
  EXPECT_NE(why.find("Vocabulary size"), std::string::npos) << why;
  EXPECT_NE(why.find("(" + std::to_string(summary.num_lines) + " of " + std::to_string(summary.num_lines + 1) +
                     " lines were skipped as longer than --max_sentence_length 4192 bytes"),
            std::string::npos)
      << why;

  o.max_sentence_length = -1;
  EXPECT_NE(message_of([&] { train_sentencepiece(o); }).find("--max_sentence_length must be between 1 and"), std::string::npos);
}

// Inputs SentencePiece's trainer would stop the whole process on (its CHECKs
// exit): refused before it sees them, or caught in its child process. Either
// way one lazytrain error, and the caller lives on.
TEST_F(SentencePieceTest, InputsThatStopSentencePieceAreOneErrorAndTheProcessLives) {
  SentencePieceTrainOptions o;
  o.output_dir = *dir_ + "/blank_out";
  o.vocab_size = 300;
  o.input_files = {*dir_ + "/blank.txt"};
  std::ofstream(o.input_files[0]) << "   \n\t\n  \n";
  EXPECT_EQ(message_of([&] { train_sentencepiece(o); }),
            "[SentencePiece] " + o.input_files[0] + " holds no text to train on: every line is blank (white space only)");
  // Text only in lines longer than the limit, beside blank ones.
  std::ofstream(o.input_files[0], std::ios::app) << "a line of text longer than ten bytes\n";
  o.max_sentence_length = 10;
  EXPECT_NE(message_of([&] { train_sentencepiece(o); }).find("that holds text is longer than --max_sentence_length 10 bytes"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(o.output_dir + "/spm.model"));
  // A coverage SentencePiece's own CHECK refuses (below 0.98): said in lazytrain's words.
  o.max_sentence_length = 0;
  o.character_coverage = 0.5;
  EXPECT_EQ(message_of([&] { train_sentencepiece(o); }), "[SentencePiece] --character_coverage must be between 0.98 and 1, got 0.500000");
}

}  // namespace
}  // namespace lazytrain::data
