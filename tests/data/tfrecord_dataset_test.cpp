// make_tfrecords' shards and the streaming dataset over them: no text lost,
// interleaving, shuffling, replica sharding, and damaged records named by file
// and index (or skipped on request).
#include "data/tfrecord_dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

#include "core/error.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/tf_example.h"
#include "data/tfrecord_shards.h"
#include "data_test_util.h"

namespace lazytrain::data {
namespace {

namespace fs = std::filesystem;

class TFRecordDatasetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string((fs::temp_directory_path() / ("lazytrain_tfds_" + std::to_string(::getpid()))).string());
    fs::create_directories(*dir_);
    std::ifstream in(testing::data_dir() / "wikitext-2" / "valid.txt");
    std::ofstream out(*dir_ + "/corpus.txt");
    std::string line;
    for (int i = 0; i < 400 && std::getline(in, line); ++i) {
      out << line << "\n";
      if (line.find_first_not_of(" \t\r") != std::string::npos) lines_->push_back(line);
    }
    out.close();
    SentencePieceTrainOptions o;
    o.vocab_size = 600;
    o.input_files = {*dir_ + "/corpus.txt"};
    o.output_dir = *dir_ + "/tok";
    train_sentencepiece(o);
    tokenizer_ = new SentencePieceTokenizer(*dir_ + "/tok");
    TFRecordShardOptions s;
    s.max_seq_length = 64;
    s.shard_size = 50;
    s.output_dir = *dir_ + "/shards";
    s.prefix = "train";
    *summary_ = write_tfrecord_shards({*dir_ + "/corpus.txt"}, *tokenizer_, s);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete tokenizer_;
  }
  static std::vector<Example> read_all(TFRecordDatasetOptions o) {
    TFRecordDataset ds(glob_files(*dir_ + "/shards/train-*.tfrecord"), o);
    std::vector<Example> out;
    while (auto ex = ds.next()) out.push_back(std::move(*ex));
    return out;
  }
  static std::string* dir_;
  static std::vector<std::string>* lines_;
  static SentencePieceTokenizer* tokenizer_;
  static TFRecordShardSummary* summary_;
};
std::string* TFRecordDatasetTest::dir_ = nullptr;
std::vector<std::string>* TFRecordDatasetTest::lines_ = new std::vector<std::string>();
SentencePieceTokenizer* TFRecordDatasetTest::tokenizer_ = nullptr;
TFRecordShardSummary* TFRecordDatasetTest::summary_ = new TFRecordShardSummary();

TEST_F(TFRecordDatasetTest, ShardsHoldEveryTokenInFixedBlocks) {
  std::vector<int64_t> expected;
  for (const std::string& l : *lines_) {
    std::vector<int64_t> ids = tokenizer_->encode(l);
    expected.insert(expected.end(), ids.begin(), ids.end());
  }
  EXPECT_EQ(summary_->num_tokens, static_cast<int64_t>(expected.size()));
  EXPECT_EQ(summary_->num_examples, static_cast<int64_t>((expected.size() + 63) / 64));
  EXPECT_EQ(summary_->files.size(), static_cast<size_t>((summary_->num_examples + 49) / 50));
  EXPECT_TRUE(fs::exists(*dir_ + "/shards/train.json"));
  TFRecordDatasetOptions o;
  o.cycle_length = 1;  // file order
  std::vector<int64_t> got;
  for (const Example& ex : read_all(o)) {
    ASSERT_EQ(ex.input_ids.size(), 64u);
    for (size_t t = 0; t < 64; ++t) {
      if (ex.attention_mask[t]) got.push_back(ex.input_ids[t]);
      else EXPECT_EQ(ex.input_ids[t], tokenizer_->pad_token_id());
    }
  }
  EXPECT_EQ(got, expected);  // no text lost, nothing added
}

// Blank lines (empty or whitespace only, Python's str.isspace: U+3000, U+00A0,
// \f too) are paragraph breaks in the TF recipe: they add no <s> </s>.
TEST_F(TFRecordDatasetTest, BlankLinesAddNothing) {
  const std::string path = *dir_ + "/blank_lines.txt";
  std::ofstream(path) << "the game\n\n \t\n\xE3\x80\x80\n\xC2\xA0\f\nof the\n";
  TFRecordShardOptions s;
  s.max_seq_length = 4;
  s.output_dir = *dir_ + "/blank_shards";
  const TFRecordShardSummary summary = write_tfrecord_shards({path}, *tokenizer_, s);
  std::vector<int64_t> expected = tokenizer_->encode("the game");
  const std::vector<int64_t> second = tokenizer_->encode("of the");
  expected.insert(expected.end(), second.begin(), second.end());
  EXPECT_EQ(summary.num_tokens, static_cast<int64_t>(expected.size()));
  std::vector<int64_t> got;
  TFRecordDataset ds(summary.files, {});
  while (auto ex = ds.next()) {
    for (size_t t = 0; t < ex->input_ids.size(); ++t) {
      if (ex->attention_mask[t]) got.push_back(ex->input_ids[t]);
    }
  }
  EXPECT_EQ(got, expected);
}

std::multiset<std::vector<int64_t>> contents(const std::vector<Example>& examples) {
  std::multiset<std::vector<int64_t>> s;
  for (const Example& e : examples) s.insert(e.input_ids);
  return s;
}

TEST_F(TFRecordDatasetTest, InterleaveShuffleAndReplicasKeepEveryExampleOnce) {
  TFRecordDatasetOptions in_order;
  in_order.cycle_length = 1;
  const std::vector<Example> base = read_all(in_order);
  TFRecordDatasetOptions interleaved;
  interleaved.cycle_length = 3;
  const std::vector<Example> inter = read_all(interleaved);
  EXPECT_EQ(contents(inter), contents(base));
  EXPECT_NE(inter[1].input_ids, base[1].input_ids);  // the second example comes from the second shard
  EXPECT_EQ(inter[1].input_ids, base[50].input_ids);
  TFRecordDatasetOptions shuffled;
  shuffled.shuffle_buffer = 64;
  shuffled.seed = 5;
  const std::vector<Example> a = read_all(shuffled), b = read_all(shuffled);
  EXPECT_EQ(contents(a), contents(base));
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i].input_ids, b[i].input_ids);  // seeded
  shuffled.seed = 6;
  EXPECT_NE(read_all(shuffled)[0].input_ids, a[0].input_ids);
  TFRecordDatasetOptions r0, r1;
  r0.num_replicas = r1.num_replicas = 2;
  r1.replica_index = 1;
  std::vector<Example> both = read_all(r0), second = read_all(r1);
  both.insert(both.end(), second.begin(), second.end());
  EXPECT_EQ(contents(both), contents(base));
  EXPECT_FALSE(read_all(r0).empty());
}

TEST_F(TFRecordDatasetTest, ARecordThatIsNotAnExampleIsNamedOrSkipped) {
  const std::string bad = *dir_ + "/bad.tfrecord";
  {
    TFRecordWriter w(bad);
    w.write(serialize_int64_example({{"input_ids", {5, 6}}, {"attention_mask", {1, 1}}}));
    w.write("\xff\xff not an example");
    w.write(serialize_int64_example({{"input_ids", {7}}}));
    w.close();
  }
  TFRecordDataset strict({bad}, {});
  EXPECT_TRUE(strict.next());
  try {
    strict.next();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    // Record 1 starts after record 0's 16 bytes of framing and its payload.
    const size_t offset = 16 + serialize_int64_example({{"input_ids", {5, 6}}, {"attention_mask", {1, 1}}}).size();
    EXPECT_NE(std::string(e.what()).find("'" + bad + "' record 1 (byte offset " + std::to_string(offset) + ")"), std::string::npos)
        << e.what();
  }
  TFRecordDatasetOptions skip;
  skip.skip_corrupt = true;
  TFRecordDataset lenient({bad}, skip);
  EXPECT_TRUE(lenient.next());
  std::optional<Example> third = lenient.next();
  ASSERT_TRUE(third);
  EXPECT_EQ(third->input_ids, (std::vector<int64_t>{7}));
  EXPECT_FALSE(lenient.next());
  EXPECT_EQ(lenient.skipped(), 1);
  EXPECT_THROW(glob_files(*dir_ + "/nothing-*.tfrecord"), Error);
}

}  // namespace
}  // namespace lazytrain::data
