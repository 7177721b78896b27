// The four execution modes (lazy/execution_mode.h) on one pipeline: the same
// training step gives the same losses in each; eager ops are cached by
// signature; errors and NaNs name the user's line.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "core/error.h"
#include "lazy/execution_mode.h"
#include "lazy/lazy_api.h"
#include "lazy/step_analysis.h"
#include "models/auto_model.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "runtime/metrics.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

using lazy::ExecutionMode;
using lazy::ExecutionModeGuard;

// bert-mini's shape (google/bert_uncased_L-4_H-256_A-4) with a small vocabulary and short rows.
models::BertConfig bert_mini_config() {
  models::BertConfig c;
  c.update_from_string("vocab_size=512,hidden_size=256,num_hidden_layers=4,num_attention_heads=4,intermediate_size=1024,max_position_embeddings=64");
  return c;
}

struct RunResult {
  std::vector<double> losses;
  std::vector<float> first_parameter;
};

// Five steps of masked-LM training (dropout on, clipping, AdamW) from one seed.
RunResult train_bert_mini(ExecutionMode mode, int steps = 5) {
  ExecutionModeGuard guard(mode);
  manual_seed(7);
  auto model = models::AutoModelForMaskedLM::from_config(bert_mini_config());
  optim::AdamWOptions adam;
  adam.lr = 1e-3;
  optim::AdamW optimizer({{model->parameters(), 0.01}}, adam);
  std::mt19937_64 data(11);
  RunResult result;
  for (int step = 0; step < steps; ++step) {
    std::vector<int64_t> ids(4 * 32), labels(4 * 32, -100);
    for (size_t i = 0; i < ids.size(); ++i) {
      ids[i] = 5 + static_cast<int64_t>(data() % 500);
      if (i % 7 == 0) labels[i] = ids[i];
    }
    Tensor input_ids = from_vector(ids, {4, 32});
    Tensor attention = ones({4, 32}, DType::kInt64);
    Tensor loss = model->forward(input_ids, attention, from_vector(labels, {4, 32})).loss;
    loss.backward();
    optim::clip_grad_norm_(model->parameters(), 1.0);
    optimizer.step();
    optimizer.zero_grad();
    lazy::mark_step();
    result.losses.push_back(loss.item());
  }
  result.first_parameter = model->parameters()[0].to_vector<float>();
  return result;
}

TEST(ExecutionModes, SameTrainingStepGivesTheSameLossesInAllFourModes) {
  const RunResult lazy_run = train_bert_mini(ExecutionMode::kLazy);
  RunResult fused_whole;
  {
    // A chunk bound above the step's size: fused eager runs lazy's very graph.
    lazy::set_fused_eager_chunk_size(1 << 30);
    fused_whole = train_bert_mini(ExecutionMode::kFusedEager);
    lazy::set_fused_eager_chunk_size(lazy::kDefaultFusedEagerChunkSize);
  }
  lazy::set_fused_eager_chunk_size(700);
  const RunResult fused = train_bert_mini(ExecutionMode::kFusedEager);
  lazy::set_fused_eager_chunk_size(lazy::kDefaultFusedEagerChunkSize);
  const RunResult strict = train_bert_mini(ExecutionMode::kStrictEager);
  const RunResult debug = train_bert_mini(ExecutionMode::kDebugEager);
  ASSERT_EQ(lazy_run.losses.size(), 5u);
  EXPECT_EQ(fused_whole.losses, lazy_run.losses);  // bit-identical: the same graph ran
  EXPECT_EQ(fused_whole.first_parameter, lazy_run.first_parameter);
  for (const RunResult* other : {&fused, &strict, &debug}) {
    for (size_t s = 0; s < lazy_run.losses.size(); ++s) {
      EXPECT_NEAR(other->losses[s], lazy_run.losses[s], 2e-4 * std::abs(lazy_run.losses[s])) << "step " << s;
    }
    for (size_t i = 0; i < lazy_run.first_parameter.size(); i += 97) {
      EXPECT_NEAR(other->first_parameter[i], lazy_run.first_parameter[i], 1e-4) << "element " << i;
    }
  }
  EXPECT_NE(lazy_run.losses[0], lazy_run.losses[4]);  // it trained
  // The eager modes agree with each other exactly: the same single-op executables ran.
  EXPECT_EQ(strict.losses, debug.losses);
}

TEST(ExecutionModes, FusedEagerChunkGraphsHitTheCacheFromTheSecondStep) {
  lazy::set_fused_eager_chunk_size(500);
  train_bert_mini(ExecutionMode::kFusedEager, 1);
  const int64_t compiled = runtime::counter_value("UncachedCompile");
  const int64_t cached = runtime::counter_value("CachedCompile");
  train_bert_mini(ExecutionMode::kFusedEager, 2);
  lazy::set_fused_eager_chunk_size(lazy::kDefaultFusedEagerChunkSize);
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), compiled);
  // Each step ran several chunks (more than one graph a step), all from the cache.
  EXPECT_GT(runtime::counter_value("CachedCompile") - cached, 2 * 3);
}

// A cut may fall anywhere, even inside a composite op whose caller holds a
// reference to an operand's shape (the value it refers to is replaced by the cut).
TEST(ExecutionModes, FusedEagerCutsAnywhereGiveTheSameLosses) {
  const RunResult reference = train_bert_mini(ExecutionMode::kLazy, 2);
  for (size_t chunk : {1, 3, 37, 211}) {
    lazy::set_fused_eager_chunk_size(chunk);
    const RunResult fused = train_bert_mini(ExecutionMode::kFusedEager, 2);
    for (size_t s = 0; s < reference.losses.size(); ++s) {
      EXPECT_NEAR(fused.losses[s], reference.losses[s], 2e-4 * std::abs(reference.losses[s])) << "chunk " << chunk << ", step " << s;
    }
  }
  lazy::set_fused_eager_chunk_size(lazy::kDefaultFusedEagerChunkSize);
}

TEST(ExecutionModes, EagerOpsAreCachedByTheirSignature) {
  ExecutionModeGuard guard(ExecutionMode::kStrictEager);
  Tensor a = from_vector(std::vector<float>{1, 2, 3}, {3});
  Tensor b = from_vector(std::vector<float>{4, 5, 6}, {3});
  Tensor first = a * b;  // compiles "aten::mul f32[3] x f32[3]" (unless an earlier test did)
  const int64_t compiled = runtime::counter_value("UncachedCompile");
  Tensor c = from_vector(std::vector<float>{7, 8, 9}, {3});
  Tensor second = b * c;  // other values, same signature: no compile
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), compiled);
  EXPECT_FALSE(second.impl()->has_pending_ir());  // dispatched at once
  EXPECT_EQ(second.to_vector<float>(), (std::vector<float>{28, 40, 54}));
  EXPECT_EQ(first.to_vector<float>(), (std::vector<float>{4, 10, 18}));
  Tensor wider = from_vector(std::vector<float>{1, 2, 3, 4}, {4}) * from_vector(std::vector<float>{1, 1, 1, 1}, {4});
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), compiled + 1);  // another shape: another executable
  EXPECT_EQ(wider.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(ExecutionModes, DebugEagerThrowsAtTheOpThatFailed) {
  ExecutionModeGuard guard(ExecutionMode::kDebugEager);
  Tensor table = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  Tensor bad = from_vector(std::vector<int64_t>{0, 5}, {2});
  const int line = __LINE__ + 2;
  try {
    Tensor rows = embedding(table, bad);
    FAIL() << "the out-of-range index did not throw at the op";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("out of range"), std::string::npos) << message;
    EXPECT_NE(message.find("execution_modes_test.cpp:" + std::to_string(line)), std::string::npos) << message;
  }
}

TEST(ExecutionModes, StrictEagerReportsAFailureLaterAtTheFailingOpsLine) {
  ExecutionModeGuard guard(ExecutionMode::kStrictEager);
  Tensor table = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  Tensor bad = from_vector(std::vector<int64_t>{0, 9}, {2});
  const int line = __LINE__ + 1;
  Tensor rows = embedding(table, bad);  // dispatched; does not wait
  try {
    rows.to_vector<float>();
    FAIL() << "the failed execution was not reported";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("aten::embedding called from execution_modes_test.cpp:" + std::to_string(line)), std::string::npos) << message;
  }
  lazy::clear_execution_failure(runtime::current_device());
}

TEST(ExecutionModes, DetectAnomalyNamesTheLogCallsLine) {
  lazy::set_detect_anomaly(true);
  Tensor x = from_vector(std::vector<float>{2.0f, -1.0f, 3.0f}, {3});
  x.requires_grad_();
  int line = 0;
  try {
    Tensor shifted = x * 2.0;
    line = __LINE__ + 1;
    Tensor loss = sum(log(shifted));
    FAIL() << "log of a negative value passed detect_anomaly";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("[aten::log] produced 1 NaN/Inf value of 3"), std::string::npos) << message;
    EXPECT_NE(message.find("execution_modes_test.cpp:" + std::to_string(line)), std::string::npos) << message;
  }
  lazy::set_detect_anomaly(false);
}

TEST(ExecutionModes, ShapeErrorsInsideCompositeOpsNameTheUsersLine) {
  Tensor logits = zeros({4, 10});
  Tensor target = zeros({3}, DType::kInt64);
  const int line = __LINE__ + 2;
  try {
    cross_entropy(logits, target);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("execution_modes_test.cpp:" + std::to_string(line)), std::string::npos) << e.what();
  }
}

TEST(ExecutionModes, DataDependentShapesSyncInLazyModeAndWorkEagerly) {
  Tensor x = from_vector(std::vector<float>{0, 3, 0, -2, 5, 0}, {2, 3});
  // Lazy mode runs the pending graph to learn the count, as PyTorch/XLA, and counts it.
  const int64_t before = runtime::counter_value("aten::nonzero");
  EXPECT_EQ(nonzero(mul(x, 2.0)).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 0, 1, 1}));
  EXPECT_EQ(masked_select(x, gt(x, 0.0)).to_vector<float>(), (std::vector<float>{3, 5}));
  EXPECT_EQ(runtime::counter_value("aten::nonzero"), before + 2);
  for (ExecutionMode mode : {ExecutionMode::kDebugEager, ExecutionMode::kStrictEager, ExecutionMode::kFusedEager}) {
    ExecutionModeGuard guard(mode);
    EXPECT_EQ(nonzero(x).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 0, 1, 1}));
    EXPECT_EQ(nonzero(x).shape(), (Shape{3, 2}));
    Tensor w = from_vector(std::vector<float>{0, 3, 0, -2, 5, 0}, {2, 3});
    w.requires_grad_();
    Tensor picked = masked_select(w, gt(w, 0.0));
    EXPECT_EQ(picked.to_vector<float>(), (std::vector<float>{3, 5}));
    sum(picked).backward();
    EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{0, 1, 0, 0, 1, 0}));
  }
}

TEST(ExecutionModes, ParsesTheModeNames) {
  EXPECT_EQ(lazy::parse_execution_mode("fused_eager"), ExecutionMode::kFusedEager);
  EXPECT_EQ(lazy::execution_mode_name(ExecutionMode::kStrictEager), "strict_eager");
  try {
    lazy::parse_execution_mode("eager", "--execution_mode");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[--execution_mode] unknown execution mode 'eager'; expected lazy, debug_eager, strict_eager or fused_eager");
  }
}

}  // namespace
}  // namespace lazytrain
