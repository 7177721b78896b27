#include "data/text_dataset.h"

#include <functional>

#include "core/error.h"
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
  EXPECT_EQ(read_text_lines(file.path()), (Strings{"first line", "second", "third", "last"}));
  EXPECT_EQ(read_text_lines(file.path(), /*keep_blank_lines=*/true),
            (Strings{"first line", "", "  \t ", "second", "third", "\xE3\x80\x80", "last"}));
}

TEST(ReadTextLinesTest, ReadsSharedSampleText) {
  const auto lines = read_text_lines(data_dir() / "sample-text" / "sample_text.txt");
  ASSERT_EQ(lines.size(), 31u);
  EXPECT_EQ(lines[0].substr(0, 36), "This text is included to make sure U");
  EXPECT_EQ(lines[3].substr(0, 21), "The rain had only cea");
  EXPECT_EQ(read_text_lines(data_dir() / "sample-text" / "sample_text.txt", true).size(), 33u);
}

TEST(ReadTextLinesTest, ErrorsNameTheFile) {
  const std::string missing = "/nonexistent/lazytrain/train.txt";
  EXPECT_EQ(error_of([&] { read_text_lines(missing); }),
            "[read_text_lines] cannot open '" + missing +
                "': expected a UTF-8 text file with one example per line");

  ScratchFile empty("");
  EXPECT_EQ(error_of([&] { read_text_lines(empty.path()); }),
            "[read_text_lines] '" + empty.path().string() +
                "' has no non-empty line: expected a UTF-8 text file with one example per line");
  ScratchFile blank(" \n\n\t\r\n");
  EXPECT_NE(error_of([&] { read_text_lines(blank.path()); }).find("has no non-empty line"), std::string::npos);

  ScratchFile bad("good\r\nbad \xFF here\n");
  EXPECT_EQ(error_of([&] { read_text_lines(bad.path()); }),
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
  const auto lines = read_text_lines(data_dir() / "sample-text" / "sample_text.txt");
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
