// GPT2Tokenizer (byte-level BPE) against Hugging Face's ids for GPT-2
// (../shared/data/tokenizer-golden/gpt2_llamacpp_golden.json), round trips of
// random byte strings, and loading errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/auto_tokenizer.h"
#include "data/gpt2_tokenizer.h"
#include "data_test_util.h"

namespace lazytrain::data {
namespace {

const GPT2Tokenizer& gpt2() {
  static const GPT2Tokenizer tokenizer((testing::data_dir() / "gpt2").string());
  return tokenizer;
}

nlohmann::json golden() {
  std::ifstream in(testing::data_dir() / "tokenizer-golden" / "gpt2_llamacpp_golden.json");
  return nlohmann::json::parse(in);
}

TEST(GPT2Tokenizer, ReproducesHuggingFacesIdsForEveryGoldenCase) {
  const nlohmann::json cases = golden()["cases"];
  ASSERT_GE(cases.size(), 30u);
  for (const auto& c : cases) {
    const std::string text = c["text"].get<std::string>();
    const std::vector<int64_t> want = c["ids"].get<std::vector<int64_t>>();
    EXPECT_EQ(gpt2().encode(text, /*add_special_tokens=*/false), want) << "text: '" << text << "'";
    // GPT-2 adds no special tokens.
    EXPECT_EQ(gpt2().encode(text, true), want);
    EXPECT_EQ(gpt2().decode(want, false), text);
    std::vector<std::string> tokens;
    for (int64_t id : want) tokens.push_back(gpt2().convert_id_to_token(id));
    EXPECT_EQ(tokens, c["tokens"].get<std::vector<std::string>>());
  }
}

TEST(GPT2Tokenizer, RoundTripsRandomByteStrings) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes(rng() % 40, '\0');
    for (char& b : bytes) b = static_cast<char>(rng() % 256);  // mostly invalid UTF-8
    EXPECT_EQ(gpt2().decode(gpt2().encode(bytes), false), bytes) << "trial " << trial;
  }
  // Valid text of every plane, spaces and newlines mixed in.
  const std::vector<std::string> pieces = {"a", "Z", " ", "  ", "\n", "\t", "'s", "'ll", "9", "½", "é", "Ω", "中", "😀", "\u00a0", "\r\n", "?!", "ﬁ"};
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    for (int k = static_cast<int>(rng() % 12); k > 0; --k) text += pieces[rng() % pieces.size()];
    EXPECT_EQ(gpt2().decode(gpt2().encode(text), false), text) << "'" << text << "'";
  }
}

TEST(GPT2Tokenizer, PreTokenizesWithGPT2sPattern) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(GPT2Tokenizer::pre_tokenize("Hello world's  end!!\n\n"), (V{"Hello", " world", "'s", " ", " end", "!!", "\n\n"}));
  EXPECT_EQ(GPT2Tokenizer::pre_tokenize("I'M 2024 x"), (V{"I", "'", "M", " 2024", " x"}));
  EXPECT_EQ(GPT2Tokenizer::pre_tokenize("a \n b"), (V{"a", " \n", " b"}));
}

TEST(GPT2Tokenizer, EndOfTextIsOneSpecialToken) {
  const std::vector<int64_t> ids = gpt2().encode("Hi<|endoftext|>there");
  EXPECT_EQ(ids, (std::vector<int64_t>{17250, 50256, 8117}));
  EXPECT_EQ(gpt2().eos_token_id(), 50256);
  EXPECT_EQ(gpt2().vocab_size(), 50257);
  EXPECT_EQ(gpt2().decode(ids, true), "Hithere");
  EXPECT_EQ(gpt2().decode(ids, false), "Hi<|endoftext|>there");
  EXPECT_THROW(gpt2().decode(std::vector<int64_t>{50257}, false), Error);
}

TEST(GPT2Tokenizer, SavePretrainedWritesFilesThatLoadTheSame) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "lazytrain_gpt2_tokenizer_test";
  std::filesystem::remove_all(dir);
  gpt2().save_pretrained(dir.string());
  const std::unique_ptr<Tokenizer> again = AutoTokenizer::from_files(dir.string());
  EXPECT_EQ(again->encode("The quick brown fox 'jumped' 123 times\n"), gpt2().encode("The quick brown fox 'jumped' 123 times\n"));
  EXPECT_EQ(again->vocab_size(), 50257);
  std::filesystem::remove_all(dir);
}

TEST(AutoTokenizer, PicksTheKindFromTheFiles) {
  EXPECT_NE(dynamic_cast<GPT2Tokenizer*>(AutoTokenizer::from_files((testing::data_dir() / "gpt2").string()).get()), nullptr);
  EXPECT_NE(dynamic_cast<GPT2Tokenizer*>(AutoTokenizer::from_pretrained((testing::data_dir() / "gpt2").string(), "gpt2").get()), nullptr);
  EXPECT_EQ(AutoTokenizer::from_files(testing::bert_vocab().string())->convert_id_to_token(2054), "what");
  try {
    AutoTokenizer::from_files("/nonexistent");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vocab.json and merges.txt"), std::string::npos) << e.what();
  }
}

TEST(GPT2Tokenizer, MalformedFilesAreOneErrorNamingTheFile) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "lazytrain_gpt2_bad";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "vocab.json") << "[1, 2]";
  std::ofstream(dir / "merges.txt") << "#version: 0.2\n";
  try {
    GPT2Tokenizer t(dir.string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vocab.json': expected a JSON object"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lazytrain::data
