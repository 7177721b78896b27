// The Trainer's loop on a tiny BERT: a run resumed from any checkpoint reaches
// the uninterrupted run's parameters bit for bit (dropout, masking, shuffling,
// epoch boundaries and gradient accumulation included); K micro-batches give
// the update of one batch of K·B and compile a bounded number of graphs; the
// evaluation counts every example (the last partial batch padded).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <unistd.h>

#include "lazy/lazy_api.h"
#include "models/auto_model.h"
#include "runtime/metrics.h"
#include "tensor/ops.h"
#include "train/checkpoint.h"
#include "train/json_file.h"
#include "train/trainer.h"

namespace lazytrain::train {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kVocab = 40;
constexpr int64_t kSeqLen = 8;

models::BertConfig tiny_config(double dropout) {
  models::BertConfig c;
  c.update_from_string("vocab_size=40,hidden_size=16,num_hidden_layers=1,num_attention_heads=2,intermediate_size=24,max_position_embeddings=16");
  c.hidden_dropout_prob = dropout;
  c.attention_probs_dropout_prob = dropout;
  return c;
}

// `n` examples of kSeqLen tokens: [CLS]=2 ... [SEP]=3, random ids in [5, 40).
std::vector<data::Example> examples(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<data::Example> out(static_cast<size_t>(n));
  for (auto& e : out) {
    e.input_ids = {2};
    for (int64_t i = 1; i < kSeqLen - 1; ++i) e.input_ids.push_back(5 + static_cast<int64_t>(rng() % (kVocab - 5)));
    e.input_ids.push_back(3);
  }
  return out;
}

std::string temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("lazytrain_trainer_loop_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  return dir.string();
}

struct TrainedModel {
  std::shared_ptr<models::MaskedLMModel> model;
  std::map<std::string, double> train_metrics, eval_metrics;
  std::vector<std::vector<float>> parameters() const {
    std::vector<std::vector<float>> out;
    for (const Tensor& p : model->parameters()) out.push_back(p.to_vector<float>());
    return out;
  }
};

struct RunOptions {
  TrainingArguments args;
  int64_t train_examples = 11;
  int64_t min_length = kSeqLen;  // below kSeqLen: examples of random lengths in [min_length, kSeqLen]
  int64_t eval_examples = 5;
  bool mlm = true;
  double dropout = 0.1;
  std::string resume;
  bool train = true, evaluate = false;
};

TrainedModel run(const RunOptions& o) {
  TrainedModel r;
  manual_seed(o.args.seed);
  r.model = models::AutoModelForMaskedLM::from_config(tiny_config(o.dropout));
  LossFn loss = [model = r.model](const distributed::DeviceBatch& b) {
    models::MaskedLMOutput out = model->forward(b["input_ids"], b["attention_mask"], b["labels"]);
    return ModelOutput(out.loss, out.logits, b["labels"]);
  };
  data::DataCollatorOptions collator;
  collator.mlm = o.mlm;
  collator.mlm_probability = 0.3;
  collator.seed = o.args.seed;
  std::vector<data::Example> train_set = examples(o.train_examples, 1);
  std::mt19937_64 lengths(7);
  for (data::Example& e : train_set) {
    if (o.min_length < kSeqLen) e.input_ids.resize(static_cast<size_t>(o.min_length + static_cast<int64_t>(lengths() % (kSeqLen - o.min_length + 1))));
  }
  Trainer trainer(*r.model, o.args, loss, train_set, examples(o.eval_examples, 2),
                  [&] { return data::DataCollatorForLanguageModeling(data::CollatorTokens{kVocab, 4, 0, {0, 1, 2, 3, 4}}, collator); });
  trainer.set_model_config(r.model->config().to_json());
  if (o.train) r.train_metrics = trainer.train(o.resume);
  if (o.evaluate) r.eval_metrics = trainer.evaluate();
  lazy::wait_device_ops();
  return r;
}

// The largest |a - b| over every parameter of two trained models of one config.
double max_parameter_difference(const TrainedModel& x, const TrainedModel& y) {
  const auto a = x.parameters(), b = y.parameters();
  EXPECT_EQ(a.size(), b.size());
  double worst = 0.0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    for (size_t j = 0; j < a[i].size(); ++j) worst = std::max(worst, static_cast<double>(std::abs(a[i][j] - b[i][j])));
  }
  return worst;
}

TrainingArguments base_args(const std::string& output_dir) {
  TrainingArguments a;
  a.output_dir = output_dir;
  a.per_device_train_batch_size = 2;
  a.per_device_eval_batch_size = 2;
  a.learning_rate = 1e-2;
  a.logging_steps = 1;
  a.disable_tqdm = true;
  a.report_to = {"none"};
  a.save_strategy = "no";
  return a;
}

TEST(TrainerLoop, ResumingFromAnyCheckpointReachesTheUninterruptedParametersBitForBit) {
  // 11 examples in batches of 2: 6 micro-batches an epoch (the last padded), 3
  // optimizer steps of 2; 8 steps cross two epoch boundaries.
  RunOptions o;
  o.args = base_args(temp_dir("resume"));
  o.args.gradient_accumulation_steps = 2;
  o.args.max_steps = 8;
  o.args.save_strategy = "steps";
  o.args.save_steps = 1;
  o.args.warmup_steps = 2;
  o.args.lr_scheduler_type = "cosine";
  const TrainedModel uninterrupted = run(o);
  const std::vector<CheckpointDir> checkpoints = list_checkpoints(o.args.output_dir);
  ASSERT_EQ(checkpoints.size(), 8u);
  for (int64_t k : {1, 3, 5}) {  // mid-epoch, at an epoch's end, after one
    SCOPED_TRACE("resumed from step " + std::to_string(k));
    RunOptions resumed = o;
    resumed.args.output_dir = temp_dir("resume_" + std::to_string(k));
    resumed.resume = checkpoints[static_cast<size_t>(k - 1)].path;
    const TrainedModel r = run(resumed);
    EXPECT_EQ(r.parameters(), uninterrupted.parameters());
    // The resumed log history continues the checkpoint's.
    const nlohmann::json state = read_json_file(resumed.args.output_dir + "/checkpoint-8/trainer_state.json");
    EXPECT_EQ(state["global_step"], 8);
    EXPECT_EQ(state["log_history"].front()["step"], 1);
    fs::remove_all(resumed.args.output_dir);
  }
  fs::remove_all(o.args.output_dir);
}

TEST(TrainerLoop, GradientAccumulationGivesTheUpdateOfOneLargeBatch) {
  // Causal labels (every token counted, no random masking) and no dropout: K
  // micro-batches of B with equal token counts average to the K·B batch's loss.
  RunOptions large;
  large.mlm = false;
  large.dropout = 0.0;
  large.train_examples = 8;
  large.args = base_args(temp_dir("large"));
  large.args.per_device_train_batch_size = 4;
  large.args.max_steps = 4;
  const TrainedModel one_batch = run(large);

  RunOptions accumulated = large;
  accumulated.args.output_dir = temp_dir("accumulated");
  accumulated.args.per_device_train_batch_size = 1;
  accumulated.args.gradient_accumulation_steps = 4;
  runtime::reset_metrics();
  const TrainedModel micro = run(accumulated);
  // First micro-batch (no gradient yet), middle ones, the last with the update: three graphs.
  ASSERT_TRUE(runtime::metric_data("CompileTime"));
  EXPECT_LE(runtime::metric_data("CompileTime")->total_samples, 3);

  EXPECT_LT(max_parameter_difference(one_batch, micro), 2e-5);
  EXPECT_NEAR(one_batch.train_metrics.at("train_loss"), micro.train_metrics.at("train_loss"), 1e-5);
}

// Hugging Face's accumulation since transformers 4.46 (num_items_in_batch): the
// step's loss is the mean over all its labelled tokens, so micro-batches of
// unequal token counts (examples of 3 to 8 tokens, padding unlabelled) still
// give the update and the logged loss of one batch K times as large. Averaging
// the micro-batch means (the old way) misses it by far more than the tolerance.
TEST(TrainerLoop, GradientAccumulationWeighsTokensNotMicroBatches) {
  RunOptions large;
  large.mlm = false;
  large.dropout = 0.0;
  large.train_examples = 8;
  large.min_length = 3;
  large.args = base_args(temp_dir("large_uneven"));
  large.args.per_device_train_batch_size = 4;
  large.args.max_steps = 2;
  const TrainedModel one_batch = run(large);

  RunOptions accumulated = large;
  accumulated.args.output_dir = temp_dir("accumulated_uneven");
  accumulated.args.per_device_train_batch_size = 1;
  accumulated.args.gradient_accumulation_steps = 4;
  const TrainedModel micro = run(accumulated);

  EXPECT_LT(max_parameter_difference(one_batch, micro), 2e-5);
  EXPECT_NEAR(one_batch.train_metrics.at("train_loss"), micro.train_metrics.at("train_loss"), 1e-5);
}

TEST(TrainerLoop, EvaluationCountsEveryExampleWithThePaddedLastBatch) {
  // 5 examples: batches of 2 leave one padded batch; its padding row must carry
  // no loss and no accuracy, so batches of 1 give the same metrics.
  RunOptions o;
  o.mlm = false;
  o.train = false;
  o.evaluate = true;
  o.args = base_args(temp_dir("eval"));
  runtime::reset_metrics();
  const TrainedModel padded = run(o);
  EXPECT_EQ(runtime::metric_data("CompileTime")->total_samples, 1);  // the padded batch reuses the graph
  o.args.per_device_eval_batch_size = 1;
  const TrainedModel single = run(o);
  EXPECT_EQ(padded.eval_metrics.at("eval_samples"), 5);
  EXPECT_NEAR(padded.eval_metrics.at("eval_loss"), single.eval_metrics.at("eval_loss"), 1e-5);
  EXPECT_NEAR(padded.eval_metrics.at("eval_loss"), std::log(static_cast<double>(kVocab)), 0.5);
  ASSERT_TRUE(padded.eval_metrics.contains("eval_accuracy"));
  EXPECT_DOUBLE_EQ(padded.eval_metrics.at("eval_accuracy"), single.eval_metrics.at("eval_accuracy"));
  EXPECT_NEAR(padded.eval_metrics.at("perplexity"), std::exp(padded.eval_metrics.at("eval_loss")), 1e-9);
  EXPECT_FALSE(padded.eval_metrics.contains("epoch"));  // an evaluation alone, as Hugging Face
}

TEST(TrainerLoop, AccuracyIsTheShareOfMaskedTokensPredictedRight) {
  // A model trained to copy its input predicts most causal labels right; the
  // accuracy over every token is what argmax == label gives, counted by hand.
  RunOptions o;
  o.mlm = false;
  o.dropout = 0.0;
  o.evaluate = true;
  o.train_examples = 8;
  o.args = base_args(temp_dir("accuracy"));
  o.args.max_steps = 60;
  o.args.learning_rate = 3e-2;
  const TrainedModel r = run(o);
  // By hand: the same eval examples through the trained model.
  r.model->eval();
  NoGradGuard no_grad;
  int64_t right = 0, total = 0;
  for (const data::Example& e : examples(5, 2)) {
    Tensor ids = from_vector(e.input_ids, {1, kSeqLen});
    Tensor mask = from_vector(std::vector<int64_t>(kSeqLen, 1), {1, kSeqLen});
    const std::vector<int64_t> predicted = argmax(r.model->forward(ids, mask).logits, -1).to_vector<int64_t>();
    for (int64_t i = 0; i < kSeqLen; ++i) right += predicted[static_cast<size_t>(i)] == e.input_ids[static_cast<size_t>(i)];
    total += kSeqLen;
  }
  EXPECT_GT(right, total / 2);  // it learned something: the metric is not trivially 0
  EXPECT_NEAR(r.eval_metrics.at("eval_accuracy"), static_cast<double>(right) / static_cast<double>(total), 1e-12);
}

}  // namespace
}  // namespace lazytrain::train
