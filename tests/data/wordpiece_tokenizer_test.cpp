#include "data/wordpiece_tokenizer.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/basic_tokenizer.h"
#include "data_test_util.h"

namespace lazytrain::data {
namespace {

using testing::bert_vocab;
using testing::data_dir;
using testing::ScratchFile;
using Strings = std::vector<std::string>;
using Ids = std::vector<int64_t>;

const WordPieceTokenizer& bert() {
  static const WordPieceTokenizer tokenizer(bert_vocab());
  return tokenizer;
}

// Every case of the Hugging Face golden file (AutoTokenizer, add_special_tokens=False).
TEST(WordPieceTokenizerTest, MatchesHuggingFaceGoldenIds) {
  const auto path = data_dir() / "tokenizer-golden" / "bert-base-uncased_llamacpp_golden.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot open " << path;
  const auto golden = nlohmann::json::parse(in);
  const auto& cases = golden.at("cases");
  ASSERT_EQ(cases.size(), 34u);
  for (const auto& c : cases) {
    const std::string text = c.at("text").get<std::string>();
    const Ids expected = c.at("ids").get<Ids>();
    EXPECT_EQ(bert().encode(text, /*add_special_tokens=*/false), expected) << "text: " << text;
    EXPECT_EQ(bert().tokenize(text), c.at("tokens").get<Strings>()) << "text: " << text;
  }
}

TEST(WordPieceTokenizerTest, SpecialTokenIdsAndVocabSize) {
  EXPECT_EQ(bert().vocab_size(), 30522);
  EXPECT_EQ(bert().pad_token_id(), 0);
  EXPECT_EQ(bert().unk_token_id(), 100);
  EXPECT_EQ(bert().cls_token_id(), 101);
  EXPECT_EQ(bert().sep_token_id(), 102);
  EXPECT_EQ(bert().mask_token_id(), 103);
  EXPECT_EQ(bert().all_special_ids(), (Ids{100, 102, 0, 101, 103}));
}

TEST(WordPieceTokenizerTest, EncodeAddsClsAndSep) {
  EXPECT_EQ(bert().encode("Hello, world!"), (Ids{101, 7592, 1010, 2088, 999, 102}));
  EXPECT_EQ(bert().encode(""), (Ids{101, 102}));
  EXPECT_EQ(bert().get_special_tokens_mask(Ids{101, 7592, 103, 0, 102}),
            (std::vector<uint8_t>{1, 0, 1, 1, 1}));
}

TEST(WordPieceTokenizerTest, SpecialTokensInTextStayWhole) {
  EXPECT_EQ(bert().encode("Paris is the [MASK] of France."),
            (Ids{101, 3000, 2003, 1996, 103, 1997, 2605, 1012, 102}));
  // Only the exact spelling is special; "[mask]" is ordinary punctuation + word.
  EXPECT_EQ(bert().tokenize("[mask]"), (Strings{"[", "mask", "]"}));
}

TEST(WordPieceTokenizerTest, GreedyLongestMatchWithContinuationPrefix) {
  EXPECT_EQ(bert().wordpiece("unaffable"), (Strings{"una", "##ffa", "##ble"}));
  EXPECT_EQ(bert().wordpiece("333333"), (Strings{"333", "##33", "##3"}));
  EXPECT_EQ(bert().wordpiece(std::string(100, 'a')).size(), 50u);  // "aa" then "##aa"...
  EXPECT_EQ(bert().wordpiece(std::string(101, 'a')), (Strings{"[UNK]"}));  // > max_input_chars_per_word
  EXPECT_EQ(bert().wordpiece("\xF0\x9F\xA6\x99"), (Strings{"[UNK]"}));  // llama emoji
  EXPECT_EQ(bert().convert_tokens_to_ids(Strings{"naive", "##s", "not-a-token"}), (Ids{15743, 2015, 100}));
}

TEST(WordPieceTokenizerTest, DecodeJoinsPiecesAndCleansSpaces) {
  const Ids ids = bert().encode("Hello, y'all! How are you?");
  EXPECT_EQ(ids, (Ids{101, 7592, 1010, 1061, 1005, 2035, 999, 2129, 2024, 2017, 1029, 102}));
  EXPECT_EQ(bert().decode(ids), "[CLS] hello, y'all! how are you? [SEP]");
  EXPECT_EQ(bert().decode(ids, /*skip_special_tokens=*/true), "hello, y'all! how are you?");
  EXPECT_EQ(bert().decode(ids, true, /*clean_up_tokenization_spaces=*/false), "hello , y ' all ! how are you ?");
  EXPECT_EQ(bert().decode(Ids{14477, 4246, 3085}), "unaffable");  // una ##ff ##able
  EXPECT_EQ(bert().convert_ids_to_tokens(Ids{101, 7592, 102}, true), (Strings{"hello"}));
  EXPECT_THROW(bert().decode(Ids{30522}), Error);
  EXPECT_THROW(bert().convert_id_to_token(-1), Error);
}

TEST(WordPieceTokenizerTest, LoadsFromDirectory) {
  const WordPieceTokenizer from_dir(data_dir() / "bert-base-uncased");
  EXPECT_EQ(from_dir.vocab_size(), 30522);
  EXPECT_EQ(from_dir.encode("Führer", false), (Ids{11865, 17875}));
}

TEST(WordPieceTokenizerTest, MissingVocabularyNamesTheFile) {
  const std::string missing = "/nonexistent/lazytrain/vocab.txt";
  try {
    WordPieceTokenizer tokenizer(missing);
    FAIL() << "expected lazytrain::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[WordPieceTokenizer] cannot open vocabulary '" + missing +
                                         "': expected a vocab.txt with one token per line");
  }
}

TEST(WordPieceTokenizerTest, BadVocabulariesAreRejected) {
  ScratchFile empty("");
  EXPECT_THROW(WordPieceTokenizer{empty.path()}, Error);
  ScratchFile no_mask("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n");
  try {
    WordPieceTokenizer tokenizer(no_mask.path());
    FAIL() << "expected lazytrain::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no '[MASK]' token"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(no_mask.path().string()), std::string::npos) << e.what();
  }
}

TEST(WordPieceTokenizerTest, SmallVocabularyWithCrlfLines) {
  ScratchFile vocab("[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\n[MASK]\r\nplay\r\n##ing\r\n##s\r\n");
  const WordPieceTokenizer tokenizer(vocab.path());
  EXPECT_EQ(tokenizer.vocab_size(), 8);
  EXPECT_EQ(tokenizer.encode("Playing plays PLAYED"), (Ids{2, 5, 6, 5, 7, 1, 3}));
}

TEST(WordPieceTokenizerTest, InvalidUtf8InputThrows) {
  EXPECT_THROW(bert().tokenize("abc\xFF"), Error);
  EXPECT_THROW(bert().tokenize("\xC0\xAF"), Error);  // overlong '/'
}

TEST(BasicTokenizerTest, CleansLowercasesStripsAccentsAndSplitsPunctuation) {
  const BasicTokenizer basic;
  EXPECT_EQ(basic.tokenize(" \tHéllo, WORLD!\n"), (Strings{"hello", ",", "world", "!"}));
  EXPECT_EQ(basic.tokenize("a\x01" "b\xEF\xBF\xBD" "c"), (Strings{"abc"}));  // control + U+FFFD dropped
  EXPECT_EQ(basic.tokenize("a\xC2\xA0" "b"), (Strings{"a", "b"}));            // NBSP (Zs) splits
  EXPECT_EQ(basic.tokenize("a\xE2\x80\x8D" "b"), (Strings{"ab"}));            // ZWJ (Cf) dropped
  EXPECT_EQ(basic.tokenize("我想ab"), (Strings{"我", "想", "ab"}));
  EXPECT_EQ(basic.tokenize("«quoted»"), (Strings{"«", "quoted", "»"}));     // Pi / Pf
  EXPECT_EQ(basic.tokenize("\xC4\xB0stanbul"), (Strings{"istanbul"}));       // U+0130
  EXPECT_EQ(basic.tokenize("ΟΔΟΣ Σ"), (Strings{"οδος", "σ"}));              // Final_Sigma
  EXPECT_EQ(basic.tokenize("Crème Brûlée"), (Strings{"creme", "brulee"}));
}

TEST(BasicTokenizerTest, CasedModeKeepsCaseAndAccents) {
  BasicTokenizerOptions options;
  options.do_lower_case = false;
  EXPECT_EQ(BasicTokenizer(options).tokenize("Héllo WORLD"), (Strings{"Héllo", "WORLD"}));
  options.strip_accents = true;
  EXPECT_EQ(BasicTokenizer(options).tokenize("Héllo WORLD"), (Strings{"Hello", "WORLD"}));
}

}  // namespace
}  // namespace lazytrain::data
