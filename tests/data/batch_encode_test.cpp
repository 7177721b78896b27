// encode_batch: a batch encoded on several threads equals the texts encoded
// one by one (WordPiece and GPT-2's byte-level BPE on WikiText-2 lines),
// truncation keeps room for the special tokens, errors name the text.
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/batch_encode.h"
#include "data/gpt2_tokenizer.h"
#include "data/wordpiece_tokenizer.h"
#include "data_test_util.h"

namespace lazytrain::data {
namespace {

std::vector<std::string> wikitext_lines(size_t limit) {
  std::ifstream in(testing::data_dir() / "wikitext-2" / "valid.txt");
  std::vector<std::string> lines;
  for (std::string line; lines.size() < limit && std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

TEST(EncodeBatch, ThreadsGiveTheIdsOfOneByOneInOrder) {
  const std::vector<std::string> texts = wikitext_lines(600);
  ASSERT_EQ(texts.size(), 600u);
  const WordPieceTokenizer bert(testing::bert_vocab());
  const GPT2Tokenizer gpt2((testing::data_dir() / "gpt2").string());
  for (const Tokenizer* t : {static_cast<const Tokenizer*>(&bert), static_cast<const Tokenizer*>(&gpt2)}) {
    std::vector<std::vector<int64_t>> one_by_one;
    for (const std::string& text : texts) one_by_one.push_back(t->encode(text, true));
    for (int threads : {0, 1, 3, 8}) {
      EXPECT_EQ(encode_batch(*t, texts, {.add_special_tokens = true, .max_length = std::nullopt, .num_threads = threads}), one_by_one) << threads;
    }
  }
}

TEST(EncodeBatch, TruncationKeepsRoomForTheSpecialTokens) {
  const WordPieceTokenizer bert(testing::bert_vocab());
  const std::vector<std::string> texts = {"hello world , how are you", "hi", ""};
  const auto out = encode_batch(bert, texts, {.add_special_tokens = true, .max_length = 5, .num_threads = 0});
  // [CLS] hello world , [SEP] (7592 2088 1010), [CLS] hi [SEP], [CLS] [SEP]
  EXPECT_EQ(out, (std::vector<std::vector<int64_t>>{{101, 7592, 2088, 1010, 102}, {101, 7632, 102}, {101, 102}}));
  EXPECT_EQ(encode_batch(bert, texts, {.add_special_tokens = false, .max_length = 2, .num_threads = 0})[0], (std::vector<int64_t>{7592, 2088}));
  EXPECT_EQ(special_tokens_layout(bert).before, 1);
  EXPECT_EQ(special_tokens_layout(bert).after, 1);
  try {
    encode_batch(bert, texts, {.add_special_tokens = true, .max_length = 1, .num_threads = 0});
    FAIL() << "max_length below the special tokens";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_length 1 leaves no room for the 2 special tokens"), std::string::npos) << e.what();
  }
}

TEST(EncodeBatch, AnErrorNamesTheText) {
  const WordPieceTokenizer bert(testing::bert_vocab());
  const std::vector<std::string> texts = {"fine", "also fine", "bad \xff byte"};
  try {
    encode_batch(bert, texts, {.add_special_tokens = true, .max_length = std::nullopt, .num_threads = 2});
    FAIL() << "invalid UTF-8";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[encode_batch] text 2: ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace lazytrain::data
