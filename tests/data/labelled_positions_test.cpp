// data::labelled_positions: the labelled tokens of a batch, padded to a static
// capacity bucket (data/labelled_positions.h), and DeviceBatch carrying them.
#include "data/labelled_positions.h"

#include <gtest/gtest.h>

#include <random>

#include "distributed/device_batch.h"

namespace lazytrain::data {
namespace {

TEST(LabelledCapacity, IsTheSmallestMultipleOfASixtyFourthThatHoldsTheLabels) {
  // 1024 tokens, masking probability unknown: buckets of 16 rows.
  EXPECT_EQ(labelled_capacity(1024, 0), 16);
  EXPECT_EQ(labelled_capacity(1024, 1), 16);
  EXPECT_EQ(labelled_capacity(1024, 16), 16);
  EXPECT_EQ(labelled_capacity(1024, 17), 32);
  EXPECT_EQ(labelled_capacity(1024, 1000), 1008);
  EXPECT_EQ(labelled_capacity(1024, 1024), 1024);
  // 10 tokens: buckets of 1.
  EXPECT_EQ(labelled_capacity(10, 3), 3);
  EXPECT_EQ(labelled_capacity(10, 10), 10);
  EXPECT_EQ(labelled_capacity(0, 0), 0);
}

TEST(LabelledCapacity, CoversTheExpectedCountPlusSixDeviations) {
  // 15% of 1024: 153.6 + 6 * sqrt(1024 * 0.15 * 0.85) = 222.1 -> 224, whatever the count below it.
  EXPECT_EQ(labelled_capacity(1024, 0, 0.15), 224);
  EXPECT_EQ(labelled_capacity(1024, 120, 0.15), 224);
  EXPECT_EQ(labelled_capacity(1024, 224, 0.15), 224);
  EXPECT_EQ(labelled_capacity(1024, 225, 0.15), 240);  // a rare count above: the next bucket
  // 15% of 2048 (the main job's batch): 307.2 + 96.9 = 404.1 -> 416 (buckets of 32).
  EXPECT_EQ(labelled_capacity(2048, 300, 0.15), 416);
  // Every token masked: every row.
  EXPECT_EQ(labelled_capacity(1024, 1024, 1.0), 1024);
}

TEST(LabelledPositions, ListsTheLabelledTokensInOrderThenPads) {
  const std::vector<int64_t> labels = {-100, 7, -100, -100, 3, -100, -100, -100, 9, -100, -100, -100, -100, -100, -100, -100,
                                       -100, -100, -100, -100, -100, -100, -100, -100, -100, -100, -100, -100, -100, -100, -100, -100};
  const LabelledPositions rows = labelled_positions(labels, 0.1);  // 3.2 + 6 * 1.70 = 13.4: 14 rows (buckets of 1)
  EXPECT_EQ(rows.positions, (std::vector<int64_t>{1, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(rows.labels, (std::vector<int64_t>{7, 3, 9, -100, -100, -100, -100, -100, -100, -100, -100, -100, -100, -100}));
}

TEST(LabelledPositions, EveryTokenLabelledKeepsEveryRow) {
  const std::vector<int64_t> labels = {5, 6, 7};
  const LabelledPositions rows = labelled_positions(labels);
  EXPECT_EQ(rows.positions, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(rows.labels, labels);
}

// Under BERT's 15% masking, batches of 8 x 128 tokens all land in one bucket (224 rows):
// one compiled training graph.
TEST(LabelledPositions, FifteenPercentMaskingOfABatchStaysInOneBucket) {
  std::mt19937_64 rng(1);
  std::bernoulli_distribution masked(0.15);
  for (int batch = 0; batch < 200; ++batch) {
    std::vector<int64_t> labels(1024, -100);
    for (int64_t& l : labels) l = masked(rng) ? 42 : -100;
    EXPECT_EQ(labelled_positions(labels, 0.15).positions.size(), 224u) << batch;
  }
}

TEST(LabelledPositions, DeviceBatchCarriesThem) {
  Batch b;
  b.batch_size = 2;
  b.seq_len = 4;
  b.num_examples = 2;
  b.input_ids = {1, 2, 3, 4, 5, 6, 7, 8};
  b.attention_mask.assign(8, 1);
  b.labels = {-100, 12, -100, -100, -100, -100, 17, -100};
  b.mlm_probability = 0.15;  // 1.2 + 6 * 1.01 = 7.26: 8 rows
  const distributed::DeviceBatch d = distributed::to_device(b);
  EXPECT_EQ(d["masked_lm_positions"].to_vector<int64_t>(), (std::vector<int64_t>{1, 6, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(d["masked_lm_labels"].to_vector<int64_t>(), (std::vector<int64_t>{12, 17, -100, -100, -100, -100, -100, -100}));
}

}  // namespace
}  // namespace lazytrain::data
