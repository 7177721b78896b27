#include "data/data_collator.h"

#include <cmath>
#include <random>

#include "core/error.h"
#include "data/wordpiece_tokenizer.h"
#include "data_test_util.h"

namespace lazytrain::data {
namespace {

using Ids = std::vector<int64_t>;

constexpr int64_t kPad = 0, kUnk = 100, kCls = 101, kSep = 102, kMask = 103, kVocab = 30522;

CollatorTokens bert_tokens() { return {kVocab, kMask, kPad, {kUnk, kSep, kPad, kCls, kMask}}; }

DataCollatorOptions with_seed(uint64_t seed) {
  DataCollatorOptions options;
  options.seed = seed;
  return options;
}

// `n` examples [CLS] w... [SEP] with lengths in [min_len, max_len], words in [1000, 30000).
std::vector<Example> make_examples(int n, int min_len, int max_len, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<Example> out;
  for (int i = 0; i < n; ++i) {
    const int len = min_len + static_cast<int>(gen() % static_cast<uint32_t>(max_len - min_len + 1));
    Example ex;
    ex.input_ids.push_back(kCls);
    for (int t = 0; t < len - 2; ++t) ex.input_ids.push_back(1000 + static_cast<int64_t>(gen() % 29000));
    ex.input_ids.push_back(kSep);
    ex.attention_mask.assign(ex.input_ids.size(), 1);
    ex.special_tokens_mask.assign(ex.input_ids.size(), 0);
    ex.special_tokens_mask.front() = ex.special_tokens_mask.back() = 1;
    out.push_back(std::move(ex));
  }
  return out;
}

TEST(DataCollatorTest, MaskingStatisticsMatchHuggingFace) {
  const auto examples = make_examples(64, 300, 512, 7);
  DataCollatorForLanguageModeling collator(bert_tokens(), with_seed(1234));
  const Batch batch = collator(examples);
  ASSERT_EQ(batch.batch_size, 64);
  ASSERT_EQ(batch.seq_len, 512);
  ASSERT_EQ(batch.input_ids.size(), 64u * 512u);
  EXPECT_EQ(batch.mlm_probability, 0.15);  // sizes the labelled rows (data/labelled_positions.h)

  int64_t eligible = 0, selected = 0, to_mask = 0, to_random = 0, unchanged = 0;
  for (int64_t b = 0; b < batch.batch_size; ++b) {
    const Example& ex = examples[static_cast<std::size_t>(b)];
    for (int64_t t = 0; t < batch.seq_len; ++t) {
      const auto k = static_cast<std::size_t>(b * batch.seq_len + t);
      const bool real = t < static_cast<int64_t>(ex.input_ids.size());
      const int64_t original = real ? ex.input_ids[static_cast<std::size_t>(t)] : kPad;
      EXPECT_EQ(batch.attention_mask[k], real ? 1 : 0);
      const bool special = !real || t == 0 || t + 1 == static_cast<int64_t>(ex.input_ids.size());
      if (special) {  // [CLS], [SEP] and padding are never selected
        EXPECT_EQ(batch.labels[k], -100);
        EXPECT_EQ(batch.input_ids[k], original);
        continue;
      }
      ++eligible;
      if (batch.labels[k] == -100) {
        EXPECT_EQ(batch.input_ids[k], original);
        continue;
      }
      ++selected;
      EXPECT_EQ(batch.labels[k], original);
      const int64_t now = batch.input_ids[k];
      ASSERT_GE(now, 0);
      ASSERT_LT(now, kVocab);
      if (now == kMask) ++to_mask;
      else if (now == original) ++unchanged;
      else ++to_random;
    }
  }
  ASSERT_GT(eligible, 20000);
  // Binomial standard deviations: 0.002 for the selection rate, ~0.006 for the split.
  EXPECT_NEAR(static_cast<double>(selected) / eligible, 0.15, 0.01);
  EXPECT_NEAR(static_cast<double>(to_mask) / selected, 0.80, 0.03);
  EXPECT_NEAR(static_cast<double>(to_random) / selected, 0.10, 0.025);
  EXPECT_NEAR(static_cast<double>(unchanged) / selected, 0.10, 0.025);
}

TEST(DataCollatorTest, SameSeedSameBatchesDifferentSeedDifferent) {
  const auto examples = make_examples(8, 64, 128, 3);
  DataCollatorForLanguageModeling a(bert_tokens(), with_seed(99)), b(bert_tokens(), with_seed(99));
  DataCollatorForLanguageModeling c(bert_tokens(), with_seed(100));
  const Batch a1 = a(examples), b1 = b(examples), c1 = c(examples);
  EXPECT_EQ(a1.input_ids, b1.input_ids);
  EXPECT_EQ(a1.labels, b1.labels);
  EXPECT_NE(a1.labels, c1.labels);
  const Batch a2 = a(examples), b2 = b(examples);  // the generator advances between calls
  EXPECT_NE(a1.labels, a2.labels);
  EXPECT_EQ(a2.labels, b2.labels);
}

// Per-batch streams (what DataLoader workers use): a batch depends on (seed,
// stream) only, not on calls made before or on which thread makes it.
TEST(DataCollatorTest, StreamsGiveTheSameBatchInAnyOrder) {
  const auto examples = make_examples(8, 64, 128, 3);
  const DataCollatorForLanguageModeling a(bert_tokens(), with_seed(99));
  DataCollatorForLanguageModeling b(bert_tokens(), with_seed(99));
  b(examples);  // advancing b's own generator changes nothing for streams
  const Batch s3 = a(examples, 3), s4 = a(examples, 4);
  EXPECT_EQ(b(examples, 4).labels, s4.labels);
  EXPECT_EQ(b(examples, 3).labels, s3.labels);
  EXPECT_EQ(a(examples, 3).input_ids, s3.input_ids);
  EXPECT_NE(s3.labels, s4.labels);
  EXPECT_NE(DataCollatorForLanguageModeling(bert_tokens(), with_seed(100))(examples, 3).labels, s3.labels);
}

TEST(DataCollatorTest, PadsToLongestAndToMultiple) {
  std::vector<Example> examples(2);
  examples[0].input_ids = {kCls, 2000, 2001, kSep};
  examples[1].input_ids = {kCls, 2002, kSep};  // no masks: all attended, specials from ids
  DataCollatorOptions options;
  options.mlm_probability = 0.0;
  DataCollatorForLanguageModeling collator(bert_tokens(), options);
  Batch batch = collator(examples);
  EXPECT_EQ(batch.seq_len, 4);
  EXPECT_EQ(batch.input_ids, (Ids{kCls, 2000, 2001, kSep, kCls, 2002, kSep, kPad}));
  EXPECT_EQ(batch.attention_mask, (Ids{1, 1, 1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(batch.labels, Ids(8, -100));

  options.pad_to_multiple_of = 8;
  DataCollatorForLanguageModeling padded(bert_tokens(), options);
  batch = padded(examples);
  EXPECT_EQ(batch.seq_len, 8);
  EXPECT_EQ(batch.input_ids.size(), 16u);
  EXPECT_EQ(batch.input_ids[7], kPad);
  EXPECT_EQ(batch.attention_mask[4], 0);
}

TEST(DataCollatorTest, SpecialIdsNeverMaskedWithoutSpecialTokensMask) {
  Example ex;
  for (int i = 0; i < 2000; ++i) ex.input_ids.push_back(i % 2 == 0 ? kUnk : 5000);
  DataCollatorOptions options;
  options.mlm_probability = 1.0;  // every eligible token is selected
  DataCollatorForLanguageModeling collator(bert_tokens(), options);
  const Batch batch = collator(std::vector<Example>{ex});
  for (std::size_t k = 0; k < ex.input_ids.size(); ++k) {
    if (k % 2 == 0) {
      EXPECT_EQ(batch.labels[k], -100);
      EXPECT_EQ(batch.input_ids[k], kUnk);
    } else {
      EXPECT_EQ(batch.labels[k], 5000);
    }
  }
}

TEST(DataCollatorTest, CausalModeCopiesInputsAndIgnoresPadding) {
  std::vector<Example> examples(2);
  examples[0].input_ids = {7, 8, 9};
  examples[1].input_ids = {10};
  DataCollatorOptions options;
  options.mlm = false;
  DataCollatorForLanguageModeling collator(bert_tokens(), options);
  const Batch batch = collator(examples);
  EXPECT_EQ(batch.input_ids, (Ids{7, 8, 9, 10, kPad, kPad}));
  EXPECT_EQ(batch.labels, (Ids{7, 8, 9, 10, -100, -100}));
  EXPECT_EQ(batch.mlm_probability, 0.0);
}

// run_clm's labels: a real token equal to the pad id (GPT-2's <|endoftext|>) keeps
// its label; only attention-masked padding is ignored.
TEST(DataCollatorTest, CausalModeCanTellPaddingByTheAttentionMask) {
  std::vector<Example> examples(2);
  examples[0].input_ids = {7, kPad, 9};
  examples[1].input_ids = {10};
  DataCollatorOptions options;
  options.mlm = false;
  EXPECT_EQ(DataCollatorForLanguageModeling(bert_tokens(), options)(examples).labels, (Ids{7, -100, 9, 10, -100, -100}));
  options.pad_labels_by_id = false;
  const Batch batch = DataCollatorForLanguageModeling(bert_tokens(), options)(examples);
  EXPECT_EQ(batch.input_ids, (Ids{7, kPad, 9, 10, kPad, kPad}));
  EXPECT_EQ(batch.labels, (Ids{7, kPad, 9, 10, -100, -100}));
}

TEST(DataCollatorTest, UsesBertTokenizerIds) {
  const WordPieceTokenizer tokenizer(testing::bert_vocab());
  DataCollatorForLanguageModeling collator(tokenizer);
  EXPECT_EQ(collator.tokens().vocab_size, 30522);
  EXPECT_EQ(collator.tokens().mask_token_id, 103);
  EXPECT_EQ(collator.tokens().pad_token_id, 0);
  EXPECT_DOUBLE_EQ(collator.options().mlm_probability, 0.15);
}

TEST(DataCollatorTest, BadInputsThrow) {
  DataCollatorForLanguageModeling collator(bert_tokens());
  EXPECT_THROW(collator(std::vector<Example>{}), Error);
  std::vector<Example> empty(2);
  EXPECT_THROW(collator(empty), Error);
  Example bad;
  bad.input_ids = {kCls, 5, kSep};
  bad.attention_mask = {1, 1};
  EXPECT_THROW(collator(std::vector<Example>{bad}), Error);
  DataCollatorOptions options;
  options.mlm_probability = 1.5;
  EXPECT_THROW(DataCollatorForLanguageModeling(bert_tokens(), options), Error);
}

}  // namespace
}  // namespace lazytrain::data
