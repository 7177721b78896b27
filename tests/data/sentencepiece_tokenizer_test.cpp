// SentencePiece training and the tokenizer: RoBERTa's special tokens at fixed
// ids, text round trips, Unigram and BPE, and clear errors.
#include "data/sentencepiece_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/error.h"
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

}  // namespace
}  // namespace lazytrain::data
