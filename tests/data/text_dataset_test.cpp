#include "data/text_dataset.h"

#include <functional>

#include "core/error.h"
#include "data/data_collator.h"
#include "data/wordpiece_tokenizer.h"
#include "data_test_util.h"

namespace lazytrain::data {
namespace {

using testing::bert_vocab;
using testing::data_dir;
using testing::ScratchFile;
using Strings = std::vector<std::string>;
using Ids = std::vector<int64_t>;
using Mask = std::vector<uint8_t>;

const WordPieceTokenizer& bert() {
  static const WordPieceTokenizer tokenizer(bert_vocab());
  return tokenizer;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(ReadTextLinesTest, SplitsUniversalNewlinesAndSkipsBlankLines) {
  ScratchFile file("first line\r\n\r\n  \t \nsecond\rthird\n\xE3\x80\x80\nlast");  // U+3000 is blank
  EXPECT_EQ(read_text_lines(file.path(), BlankLines::kSkip), (Strings{"first line", "second", "third", "last"}));
  EXPECT_EQ(read_text_lines(file.path(), BlankLines::kKeep),
            (Strings{"first line", "", "  \t ", "second", "third", "\xE3\x80\x80", "last"}));
}

TEST(ReadTextLinesTest, ReadsSharedSampleText) {
  const auto lines = read_text_lines(data_dir() / "sample-text" / "sample_text.txt", BlankLines::kSkip);
  ASSERT_EQ(lines.size(), 31u);
  EXPECT_EQ(lines[0].substr(0, 36), "This text is included to make sure U");
  EXPECT_EQ(lines[3].substr(0, 21), "The rain had only cea");
  EXPECT_EQ(read_text_lines(data_dir() / "sample-text" / "sample_text.txt", BlankLines::kKeep).size(), 33u);
}

// WikiText-2's blank lines separate paragraphs: Hugging Face's text loader keeps
// them (1,299 in valid.txt, 1,467 in test.txt, counted with Python's str.isspace).
TEST(ReadTextLinesTest, KeepsWikiTextBlankLinesAsHuggingFace) {
  const auto valid = data_dir() / "wikitext-2" / "valid.txt";
  const auto test = data_dir() / "wikitext-2" / "test.txt";
  EXPECT_EQ(read_text_lines(valid, BlankLines::kKeep).size(), 3760u);
  EXPECT_EQ(read_text_lines(valid, BlankLines::kSkip).size(), 3760u - 1299u);
  EXPECT_EQ(read_text_lines(test, BlankLines::kKeep).size(), 4358u);
  EXPECT_EQ(read_text_lines(test, BlankLines::kSkip).size(), 4358u - 1467u);
}

TEST(ReadTextLinesTest, IsBlankLineIsPythonsStrip) {
  EXPECT_TRUE(is_blank_line(""));
  EXPECT_TRUE(is_blank_line(" \t\r\x0b\x0c"));
  EXPECT_TRUE(is_blank_line("\xC2\xA0\xE3\x80\x80"));  // U+00A0, U+3000
  EXPECT_FALSE(is_blank_line(" = Valkyria = "));
  EXPECT_FALSE(is_blank_line("\xC2\xB7"));  // U+00B7 MIDDLE DOT is text
}

TEST(ReadTextLinesTest, ErrorsNameTheFile) {
  const std::string missing = "/nonexistent/lazytrain/train.txt";
  EXPECT_EQ(error_of([&] { read_text_lines(missing, BlankLines::kKeep); }),
            "[read_text_lines] cannot open '" + missing +
                "': expected a UTF-8 text file with one example per line");

  ScratchFile empty("");
  EXPECT_EQ(error_of([&] { read_text_lines(empty.path(), BlankLines::kKeep); }),
            "[read_text_lines] '" + empty.path().string() +
                "' has no non-empty line: expected a UTF-8 text file with one example per line");
  ScratchFile blank(" \n\n\t\r\n");
  EXPECT_NE(error_of([&] { read_text_lines(blank.path(), BlankLines::kKeep); }).find("has no non-empty line"), std::string::npos);
  EXPECT_NE(error_of([&] { read_text_lines(blank.path(), BlankLines::kSkip); }).find("has no non-empty line"), std::string::npos);

  ScratchFile bad("good\r\nbad \xFF here\n");
  EXPECT_EQ(error_of([&] { read_text_lines(bad.path(), BlankLines::kSkip); }),
            "[read_text_lines] '" + bad.path().string() +
                "' has invalid UTF-8 on line 2 (byte offset 10): expected a UTF-8 text file");
}

TEST(TokenizeLinesTest, EveryLineGetsClsAndSep) {
  const auto examples = tokenize_lines({"Hello world", "", "Paris"}, bert());
  ASSERT_EQ(examples.size(), 3u);
  EXPECT_EQ(examples[0].input_ids, (Ids{101, 7592, 2088, 102}));
  EXPECT_EQ(examples[0].attention_mask, (Ids{1, 1, 1, 1}));
  EXPECT_EQ(examples[0].special_tokens_mask, (Mask{1, 0, 0, 1}));
  EXPECT_EQ(examples[1].input_ids, (Ids{101, 102}));
  EXPECT_EQ(examples[1].special_tokens_mask, (Mask{1, 1}));
  EXPECT_EQ(examples[2].input_ids, (Ids{101, 3000, 102}));
}

TEST(GroupTextsTest, ConcatenatesDropsRemainderAndChunks) {
  const std::vector<Ids> lines{{1, 2, 3}, {4, 5}, {6, 7, 8, 9}, {10}};
  EXPECT_EQ(group_texts(lines, 4), (std::vector<Ids>{{1, 2, 3, 4}, {5, 6, 7, 8}}));
  EXPECT_EQ(group_texts(lines, 3), (std::vector<Ids>{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}));
  EXPECT_EQ(group_texts(lines, 11), std::vector<Ids>{});
  // datasets.map(batched=True, batch_size=2): the remainder is dropped per batch.
  EXPECT_EQ(group_texts(lines, 4, /*map_batch_size=*/2), (std::vector<Ids>{{1, 2, 3, 4}, {6, 7, 8, 9}}));
  EXPECT_THROW(group_texts(lines, 0), Error);
}

TEST(GroupTextsTest, KeepsColumnsAligned) {
  const auto examples = tokenize_lines({"Hello world", "Paris is the capital of France."}, bert());
  // [CLS] hello world [SEP] [CLS] paris is the capital of france . [SEP]  = 4 + 10 tokens
  const auto blocks = group_texts(examples, 6);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].input_ids, (Ids{101, 7592, 2088, 102, 101, 3000}));
  EXPECT_EQ(blocks[0].special_tokens_mask, (Mask{1, 0, 0, 1, 1, 0}));
  EXPECT_EQ(blocks[1].input_ids, (Ids{2003, 1996, 3007, 1997, 2605, 1012}));
  EXPECT_EQ(blocks[1].attention_mask, (Ids{1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(blocks[1].special_tokens_mask, (Mask{0, 0, 0, 0, 0, 0}));
}

TEST(GroupTextsTest, SampleTextBlocksAreSlicesOfTheTokenStream) {
  const auto lines = read_text_lines(data_dir() / "sample-text" / "sample_text.txt", BlankLines::kSkip);
  const auto examples = tokenize_lines(lines, bert());
  ASSERT_EQ(examples.size(), 31u);
  Ids stream;
  for (const auto& ex : examples) stream.insert(stream.end(), ex.input_ids.begin(), ex.input_ids.end());
  const auto blocks = group_texts(examples, 128);
  ASSERT_EQ(blocks.size(), stream.size() / 128);
  ASSERT_GE(blocks.size(), 5u);
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    EXPECT_EQ(blocks[b].input_ids, Ids(stream.begin() + b * 128, stream.begin() + (b + 1) * 128));
  }
  EXPECT_EQ(blocks[0].input_ids[0], 101);
  EXPECT_EQ(blocks[0].special_tokens_mask[0], 1);
}

// run_mlm.py without --line_by_line: a blank line is [CLS] [SEP] in the stream.
// "hello world\n\nhello world\n\n" is 4 + 2 + 4 + 2 = 12 tokens, 3 blocks of 4.
TEST(GroupTextsTest, BlankLinesAreClsSepInTheStream) {
  ScratchFile file("hello world\n\nhello world\n\n");
  const auto blocks = group_texts(tokenize_lines(read_text_lines(file.path(), BlankLines::kKeep), bert()), 4);
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].input_ids, (Ids{101, 7592, 2088, 102}));
  EXPECT_EQ(blocks[1].input_ids, (Ids{101, 102, 101, 7592}));
  EXPECT_EQ(blocks[2].input_ids, (Ids{2088, 102, 101, 102}));
  EXPECT_EQ(blocks[1].special_tokens_mask, (Mask{1, 1, 1, 0}));
  EXPECT_EQ(blocks[2].special_tokens_mask, (Mask{0, 1, 1, 1}));
}

// A tokenizer of the interface that is neither BERT's nor RoBERTa's: ids are
// bytes + 10, two tokens (7, 8) before the text and one (9) after, pad 1.
class ByteTokenizer : public Tokenizer {
 public:
  std::vector<int64_t> encode(std::string_view text, bool add_special_tokens = true) const override {
    std::vector<int64_t> ids;
    for (unsigned char c : text) ids.push_back(c + 10);
    return add_special_tokens ? build_inputs_with_special_tokens(ids) : ids;
  }
  std::vector<int64_t> build_inputs_with_special_tokens(std::span<const int64_t> ids) const override {
    std::vector<int64_t> out{7, 8};
    out.insert(out.end(), ids.begin(), ids.end());
    out.push_back(9);
    return out;
  }
  int64_t vocab_size() const override { return 266; }
  int64_t pad_token_id() const override { return 1; }
  int64_t mask_token_id() const override { return 2; }
  std::vector<int64_t> all_special_ids() const override { return {1, 2, 7, 8, 9}; }
  void save_pretrained(const std::string&) const override {}
  std::string decode(std::span<const int64_t> ids, bool) const override {
    std::string text;
    for (int64_t id : ids) text += static_cast<char>(id - 10);
    return text;
  }
  std::string mask_token() const override { return "<2>"; }
  std::string convert_id_to_token(int64_t id) const override { return "<" + std::to_string(id) + ">"; }
};

TEST(TokenizeLinesTest, AnyTokenizerOfTheInterface) {
  const ByteTokenizer bytes;
  EXPECT_EQ(bytes.num_special_tokens_to_add(), 3);
  const auto examples = tokenize_lines({"ab", ""}, bytes);
  ASSERT_EQ(examples.size(), 2u);
  EXPECT_EQ(examples[0].input_ids, (Ids{7, 8, 107, 108, 9}));
  EXPECT_EQ(examples[0].special_tokens_mask, (Mask{1, 1, 0, 0, 1}));
  EXPECT_EQ(examples[1].input_ids, (Ids{7, 8, 9}));
  EXPECT_EQ(examples[1].attention_mask, (Ids{1, 1, 1}));

  const auto padded = tokenize_line_by_line({"abcdef", " ", "a"}, bytes, 6, /*pad_to_max_length=*/true);
  ASSERT_EQ(padded.size(), 2u);
  EXPECT_EQ(padded[0].input_ids, (Ids{7, 8, 107, 108, 109, 9}));
  EXPECT_EQ(padded[0].special_tokens_mask, (Mask{1, 1, 0, 0, 0, 1}));
  EXPECT_EQ(padded[1].input_ids, (Ids{7, 8, 107, 9, 1, 1}));
  EXPECT_EQ(padded[1].attention_mask, (Ids{1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(padded[1].special_tokens_mask, (Mask{1, 1, 0, 1, 1, 1}));
  EXPECT_EQ(error_of([&] { tokenize_line_by_line({"a"}, bytes, 2, true); }),
            "[tokenize_line_by_line] max_seq_length is 2: expected at least 3 (room for the special tokens)");

  const DataCollatorForLanguageModeling collator(bytes);
  EXPECT_EQ(collator.tokens().vocab_size, 266);
  EXPECT_EQ(collator.tokens().pad_token_id, 1);
  EXPECT_EQ(collator.tokens().mask_token_id, 2);
  EXPECT_EQ(collator.tokens().special_ids, (Ids{1, 2, 7, 8, 9}));
}

TEST(TokenizeLineByLineTest, TruncatesKeepingSepAndPads) {
  const Strings lines{"Paris is the capital of France.", "   ", "Hello world"};
  const auto truncated = tokenize_line_by_line(lines, bert(), 5, /*pad_to_max_length=*/false);
  ASSERT_EQ(truncated.size(), 2u);  // the blank line is skipped
  EXPECT_EQ(truncated[0].input_ids, (Ids{101, 3000, 2003, 1996, 102}));
  EXPECT_EQ(truncated[1].input_ids, (Ids{101, 7592, 2088, 102}));
  EXPECT_EQ(truncated[1].attention_mask, (Ids{1, 1, 1, 1}));

  const auto padded = tokenize_line_by_line(lines, bert(), 6, /*pad_to_max_length=*/true);
  ASSERT_EQ(padded.size(), 2u);
  EXPECT_EQ(padded[0].input_ids, (Ids{101, 3000, 2003, 1996, 3007, 102}));
  EXPECT_EQ(padded[1].input_ids, (Ids{101, 7592, 2088, 102, 0, 0}));
  EXPECT_EQ(padded[1].attention_mask, (Ids{1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(padded[1].special_tokens_mask, (Mask{1, 0, 0, 1, 1, 1}));
  EXPECT_THROW(tokenize_line_by_line(lines, bert(), 1, false), Error);
}

}  // namespace
}  // namespace lazytrain::data
