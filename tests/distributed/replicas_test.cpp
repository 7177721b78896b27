// Data-parallel replicas in one process (distributed::spawn): N replicas with
// per-replica batch B/N reach one replica's parameters at batch B, hold
// bit-identical parameters after every step (also fed different data, with
// clipping), compile one step graph for all replicas, and a master-only save
// or print inside the loop never hangs the others; a replica that raises or
// never arrives fails the run with its error instead of a hang.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>
#include <unistd.h>

#include "distributed/spawn.h"
#include "distributed/xla_model.h"
#include "lazy/lazy_api.h"
#include "models/auto_model.h"
#include "optim/adamw.h"
#include "distributed/zero_redundancy_optimizer.h"
#include "optim/clip_grad.h"
#include "runtime/metrics.h"
#include "tensor/ops.h"
#include "train/safetensors.h"
#include "../support/tiny_data_parallel.h"

namespace lazytrain::distributed {
namespace {

using testing_support::parameter_values;
using testing_support::TinyRunOptions;

struct RunOptions : TinyRunOptions {
  int replicas = 1;
  bool check_every_step = false;
};

struct RunResult {
  std::vector<std::vector<std::vector<float>>> parameters;  // [replica][parameter][value]
  std::vector<std::string> mismatches;                      // steps where replicas differed
};

RunResult train(const RunOptions& o) {
  RunResult result;
  result.parameters.resize(static_cast<size_t>(o.replicas));
  std::mutex mutex;
  std::vector<std::vector<std::vector<std::vector<float>>>> per_step(static_cast<size_t>(o.steps));  // [step][replica]
  for (auto& s : per_step) s.resize(static_cast<size_t>(o.replicas));
  spawn([&](int index) {
    TinyRunOptions tiny = o;
    tiny.after_step = [&](int step, models::MaskedLMModel& model) {
      if (o.after_step) o.after_step(step, model);
      if (!o.check_every_step) return;
      auto values = parameter_values(model);
      std::lock_guard<std::mutex> lock(mutex);
      per_step[static_cast<size_t>(step)][static_cast<size_t>(index)] = std::move(values);
    };
    auto values = testing_support::train_tiny_replica(tiny);
    std::lock_guard<std::mutex> lock(mutex);
    result.parameters[static_cast<size_t>(index)] = std::move(values);
  }, o.replicas);
  for (int step = 0; o.check_every_step && step < o.steps; ++step) {
    for (int r = 1; r < o.replicas; ++r) {
      if (per_step[static_cast<size_t>(step)][static_cast<size_t>(r)] != per_step[static_cast<size_t>(step)][0]) {
        result.mismatches.push_back("step " + std::to_string(step + 1) + " replica " + std::to_string(r));
      }
    }
  }
  return result;
}

double max_difference(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  return testing_support::max_parameter_difference(a, b);
}

const std::vector<std::vector<float>>& single_replica_reference() {
  static const std::vector<std::vector<float>> reference = [] {
    RunOptions o;
    return train(o).parameters[0];
  }();
  return reference;
}

class DataParallel : public ::testing::TestWithParam<int> {};

TEST_P(DataParallel, ReplicasAtBatchBOverNReachOneReplicaAtBatchBAndStayBitIdentical) {
  const int n = GetParam();
  const auto& reference = single_replica_reference();
  const int64_t compiles_before = runtime::metric("CompileTime").total_samples();
  RunOptions o;
  o.replicas = n;
  o.check_every_step = true;
  const RunResult r = train(o);
  EXPECT_TRUE(r.mismatches.empty()) << "replicas differ at " << r.mismatches.front();
  for (int i = 1; i < n; ++i) EXPECT_EQ(r.parameters[static_cast<size_t>(i)], r.parameters[0]) << "replica " << i;
  // f32 sums in another order (per-replica means, then the mean of means) over 20 Adam steps.
  const double difference = max_difference(r.parameters[0], reference);
  EXPECT_LT(difference, 2e-4) << n << " replicas";
  RunOptions one_step_less;
  one_step_less.steps = 19;
  EXPECT_GT(max_difference(r.parameters[0], train(one_step_less).parameters[0]), 100 * difference)
      << "the comparison cannot tell a step apart";
  // One step graph for all replicas (and at most a first step's of its own).
  EXPECT_LE(runtime::metric("CompileTime").total_samples() - compiles_before, 4);
}

INSTANTIATE_TEST_SUITE_P(Replicas, DataParallel, ::testing::Values(2, 4));

TEST(DataParallelClipping, ReplicasFedDifferentDataHoldIdenticalParametersAfterEveryStep) {
  RunOptions o;
  o.replicas = 2;
  o.steps = 6;
  o.different_data = true;
  o.max_grad_norm = 0.05;  // small: clipping is active at every step
  o.check_every_step = true;
  const RunResult r = train(o);
  EXPECT_TRUE(r.mismatches.empty()) << "replicas differ at " << r.mismatches.front();
  // Each replica alone would have moved elsewhere: the exchange is real.
  RunOptions alone = o;
  alone.replicas = 1;
  alone.check_every_step = false;
  EXPECT_NE(train(alone).parameters[0], r.parameters[0]);
}

class MasterOnly : public ::testing::TestWithParam<int> {};

TEST_P(MasterOnly, ASaveAndAPrintOnTheMasterAloneCompleteWithoutHangingTheOthers) {
  const int n = GetParam();
  const std::string path = (std::filesystem::temp_directory_path() / ("lazytrain_master_save_" + std::to_string(::getpid()) + ".safetensors")).string();
  std::filesystem::remove(path);
  std::string saved_name;
  std::vector<float> saved_values;
  RunOptions o;
  o.replicas = n;
  o.steps = 4;
  o.after_step = [&](int step, models::MaskedLMModel& model) {
    if (step != 1 || !is_master_ordinal(false)) return;
    master_print("saving at step " + std::to_string(step + 1));
    std::map<std::string, train::TensorRecord> tensors;
    for (const auto& [name, p] : model.named_parameters()) tensors[name] = train::to_tensor_record(p.to_literal());
    train::save_safetensors(path, tensors);
    saved_name = model.named_parameters()[0].first;
    saved_values = model.named_parameters()[0].second.to_vector<float>();
  };
  const auto start = std::chrono::steady_clock::now();
  testing::internal::CaptureStdout();
  train(o);
  const std::string printed = testing::internal::GetCapturedStdout();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 120.0);
  EXPECT_EQ(printed, "saving at step 2\n");
  auto loaded = train::load_safetensors(path);
  ASSERT_EQ(loaded.count(saved_name), 1u);
  const Literal saved = train::to_literal(loaded.at(saved_name));
  ASSERT_EQ(saved.numel(), static_cast<int64_t>(saved_values.size()));
  EXPECT_EQ(std::memcmp(saved.raw(), saved_values.data(), saved_values.size() * sizeof(float)), 0);
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Replicas, MasterOnly, ::testing::Values(2, 4));

class ShardedOptimizer : public ::testing::TestWithParam<int> {};

TEST_P(ShardedOptimizer, EqualsTheUnshardedRunBitForBitWithOneNthOfTheState) {
  const int n = GetParam();
  RunOptions o;
  o.replicas = n;
  o.check_every_step = true;
  const RunResult unsharded = train(o);
  o.sharded = true;
  std::vector<int64_t> state_bytes(static_cast<size_t>(n)), full_bytes(static_cast<size_t>(n));
  o.after_step_optimizer = [&](int step, models::MaskedLMModel& model, optim::AdamW& optimizer) {
    if (step != 0) return;
    state_bytes[static_cast<size_t>(ordinal())] = optimizer.state_bytes();
    full_bytes[static_cast<size_t>(ordinal())] = optim::AdamW({{model.parameters(), 0.0}}, {}).state_bytes();
  };
  const RunResult sharded = train(o);
  EXPECT_TRUE(sharded.mismatches.empty()) << "replicas differ at " << sharded.mismatches.front();
  // The reduce-scatter sums as the all-reduce does, and AdamW's arithmetic is the same.
  EXPECT_EQ(sharded.parameters[0], unsharded.parameters[0]);
  EXPECT_LT(max_difference(sharded.parameters[0], single_replica_reference()), 2e-4);
  // Each replica keeps about 1/N of the moments (each parameter padded to a multiple of N).
  for (int r = 0; r < n; ++r) {
    EXPECT_LE(static_cast<double>(state_bytes[static_cast<size_t>(r)]), static_cast<double>(full_bytes[0]) / n * 1.02 + 64 * n) << r;
    EXPECT_GE(static_cast<double>(state_bytes[static_cast<size_t>(r)]), static_cast<double>(full_bytes[0]) / n) << r;
  }
}

TEST_P(ShardedOptimizer, WithClippingStaysWithinReductionOrderOfTheUnshardedRun) {
  RunOptions o;
  o.replicas = GetParam();
  o.steps = 8;
  o.max_grad_norm = 0.05;  // active at every step: the global norm must be the same on every replica
  o.check_every_step = true;
  const RunResult unsharded = train(o);
  o.sharded = true;
  const RunResult sharded = train(o);
  EXPECT_TRUE(sharded.mismatches.empty()) << "replicas differ at " << sharded.mismatches.front();
  EXPECT_LT(max_difference(sharded.parameters[0], unsharded.parameters[0]), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Replicas, ShardedOptimizer, ::testing::Values(2, 4));

TEST(ShardedOptimizerCheckpoint, TheStateDictHoldsTheFullMomentsAndLoadsBackIntoShards) {
  // 3 steps unsharded and sharded: the same full moments; then each continues
  // for 2 steps from the other's state dict and reaches the same parameters.
  std::mutex mutex;
  std::vector<optim::AdamWStateDict> dicts(2);
  std::vector<std::vector<std::vector<float>>> continued(2);
  for (int sharded = 0; sharded < 2; ++sharded) {
    spawn([&](int index) {
      testing_support::TinyRunOptions o;
      o.steps = 3;
      o.sharded = sharded == 1;
      o.after_step_optimizer = [&](int step, models::MaskedLMModel& model, optim::AdamW& optimizer) {
        if (step != 2) return;
        optim::AdamWStateDict d = optimizer.state_dict(model.named_parameters());  // every replica: collectives when sharded
        if (index == 0) {
          std::lock_guard<std::mutex> lock(mutex);
          dicts[static_cast<size_t>(sharded)] = std::move(d);
        }
      };
      testing_support::train_tiny_replica(o);
    }, 2);
  }
  ASSERT_EQ(dicts[0].tensors.size(), dicts[1].tensors.size());
  for (const auto& [name, literal] : dicts[0].tensors) {
    const Literal& other = dicts[1].tensors.at(name);
    ASSERT_EQ(other.shape(), literal.shape()) << name;
    EXPECT_EQ(std::memcmp(other.raw(), literal.raw(), static_cast<size_t>(literal.nbytes())), 0) << name;
  }
  EXPECT_EQ(dicts[1].state.step, 3);
  // Loading the unsharded state into a sharded optimizer (and back) continues alike.
  for (int sharded = 0; sharded < 2; ++sharded) {
    spawn([&](int index) {
      manual_seed(42);
      auto model = models::AutoModelForMaskedLM::from_config(testing_support::tiny_bert_config());
      optim::AdamWOptions adam;
      adam.lr = 1e-2;
      std::unique_ptr<optim::AdamW> optimizer =
          sharded ? std::make_unique<ZeroRedundancyAdamW>(std::vector<optim::ParamGroup>{{model->parameters(), 0.01}}, adam)
                  : std::make_unique<optim::AdamW>(std::vector<optim::ParamGroup>{{model->parameters(), 0.01}}, adam);
      optimizer->load_state_dict(dicts[static_cast<size_t>(1 - sharded)], model->named_parameters());
      for (int step = 3; step < 5; ++step) {
        const int64_t rows = testing_support::kTinyGlobalBatch / 2;
        Tensor ids = from_vector(testing_support::tiny_batch_rows(step, rows * index, rows * (index + 1)), {rows, testing_support::kTinySeqLen});
        model->forward(ids, ones({rows, testing_support::kTinySeqLen}, DType::kInt64), ids).loss.backward();
        if (sharded) {
          optimizer->step();
        } else {
          optimizer_step(*optimizer);
        }
        optimizer->zero_grad();
        lazy::mark_step();
      }
      auto values = parameter_values(*model);
      if (index == 0) {
        std::lock_guard<std::mutex> lock(mutex);
        continued[static_cast<size_t>(sharded)] = std::move(values);
      }
    }, 2);
  }
  EXPECT_EQ(continued[0], continued[1]);
}

TEST(ReplicaRandomness, ReplicasSeededAlikeInitialiseAlikeButDropOutDifferently) {
  std::mutex mutex;
  std::vector<std::vector<float>> host(2), device(2);
  spawn([&](int index) {
    manual_seed(5);
    std::vector<float> h = host_randn(8);
    std::vector<float> d = rand({8}).to_vector<float>();
    std::lock_guard<std::mutex> lock(mutex);
    host[static_cast<size_t>(index)] = h;
    device[static_cast<size_t>(index)] = d;
  }, 2);
  EXPECT_EQ(host[0], host[1]);    // parameter initialisation: the same model on every replica
  EXPECT_NE(device[0], device[1]);  // dropout masks: each replica its own
  // One replica draws as a process without replicas does.
  manual_seed(5);
  const std::vector<float> alone = rand({8}).to_vector<float>();
  spawn([&](int) {
    manual_seed(5);
    std::vector<float> d = rand({8}).to_vector<float>();
    std::lock_guard<std::mutex> lock(mutex);
    device[0] = d;
  }, 1);
  EXPECT_EQ(device[0], alone);
}

TEST(ReplicaHelpers, OrdinalsWorldSizeMeshReduceAndCollectivesOnTensors) {
  std::mutex mutex;
  std::vector<std::string> seen(3);
  spawn([&](int index) {
    EXPECT_EQ(world_size(), 3);
    EXPECT_EQ(ordinal(), index);
    EXPECT_EQ(local_ordinal(), index);
    EXPECT_EQ(is_master_ordinal(), index == 0);
    const double total = mesh_reduce("sum", index + 1.0, [](const std::vector<double>& v) { return v[0] + v[1] + v[2]; });
    Tensor x = from_vector(std::vector<float>{1.0f * index, 10.0f}, {2});
    Tensor mean = all_reduce(ReduceType::kSum, x, 1.0 / 3);
    Tensor gathered = all_gather(reshape(x, {1, 2}), 0);
    Tensor shard = reduce_scatter(ReduceType::kMax, from_vector(std::vector<float>{1.0f * index, 2.0f * index, 3.0f * index}, {3}), 1.0, 0, 3);
    lazy::mark_step();
    std::string text = std::to_string(total) + " " + std::to_string(mean.to_vector<float>()[0]) + "," + std::to_string(mean.to_vector<float>()[1]);
    for (float v : gathered.to_vector<float>()) text += " " + std::to_string(static_cast<int>(v));
    text += " " + std::to_string(shard.to_vector<float>()[0]);
    rendezvous("done");
    std::lock_guard<std::mutex> lock(mutex);
    seen[static_cast<size_t>(index)] = text;
  }, 3);
  EXPECT_EQ(seen[0], "6.000000 1.000000,10.000000 0 10 1 10 2 10 2.000000");
  EXPECT_EQ(seen[2], "6.000000 1.000000,10.000000 0 10 1 10 2 10 6.000000");
  EXPECT_EQ(world_size(), 1);  // back to one replica
  EXPECT_NE(lazy::last_compiled_hlo().find("all-gather("), std::string::npos);
}

TEST(ReplicaFailure, AReplicaThatRaisesFailsTheRunWithItsErrorAndTheOthersStopAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  try {
    RunOptions o;
    o.replicas = 2;
    o.steps = 6;
    o.after_step = [](int step, models::MaskedLMModel&) {
      if (step == 2 && ordinal() == 1) throw Error("[test] replica 1 ran out of data");
    };
    train(o);
    FAIL() << "expected the replica's error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("replica 1 ran out of data"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 60.0);
}

TEST(ReplicaFailure, AReplicaThatNeverArrivesIsNamedWithinTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  SpawnOptions options;
  options.collective_timeout = 1.0;
  try {
    spawn([&](int index) {
      if (index == 1) {
        std::this_thread::sleep_for(std::chrono::seconds(3));  // late far beyond the timeout
        return;
      }
      Tensor x = all_reduce(ReduceType::kSum, ones({4}));
      lazy::mark_step();
      x.to_vector<float>();
    }, 2, options);
    FAIL() << "expected a timeout";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("for replica 1 of 2"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30.0);
}

}  // namespace
}  // namespace lazytrain::distributed

namespace lazytrain::distributed {
namespace {

TEST(ReplicaUnusedParameters, AGradientOnOneReplicaIsAveragedWithZerosOnEveryReplica) {
  // w2 gets a gradient on replica 0 only (an unused branch elsewhere), w3 on none:
  // torch DDP (find_unused_parameters) gives every replica w2's mean gradient
  // and leaves w3 without one. AdamW's first step moves a parameter by lr
  // (times g / (|g| + eps)) after the decay, whatever the gradient's size.
  for (int sharded = 0; sharded < 2; ++sharded) {
    std::mutex mutex;
    std::vector<std::vector<float>> w2(2), w3(2);
    std::vector<bool> w3_has_grad(2, true);
    spawn([&](int index) {
      std::vector<Tensor> ps = {ones({2}), ones({2}), ones({2})};
      for (Tensor& p : ps) p.requires_grad_(true);
      optim::AdamWOptions adam;
      adam.lr = 0.1;
      std::vector<optim::ParamGroup> groups{{ps, 0.01}};
      std::unique_ptr<optim::AdamW> optimizer = sharded ? std::make_unique<ZeroRedundancyAdamW>(groups, adam)
                                                        : std::make_unique<optim::AdamW>(groups, adam);
      Tensor loss = sum(mul(ps[0], static_cast<double>(index + 1)));
      if (index == 0) loss = add(loss, sum(mul(ps[1], 3.0)));
      loss.backward();
      if (sharded) {
        optimizer->step();
      } else {
        optimizer_step(*optimizer);
      }
      lazy::mark_step();
      std::lock_guard<std::mutex> lock(mutex);
      w2[static_cast<size_t>(index)] = ps[1].to_vector<float>();
      w3[static_cast<size_t>(index)] = ps[2].to_vector<float>();
      w3_has_grad[static_cast<size_t>(index)] = ps[2].grad().defined();
    }, 2);
    const float expected = 1.0f * (1.0f - 0.1f * 0.01f) - 0.1f * (1.5f / (1.5f + 1e-8f));
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(w2[static_cast<size_t>(i)].size(), 2u) << sharded;
      EXPECT_NEAR(w2[static_cast<size_t>(i)][0], expected, 1e-6) << "replica " << i << " sharded " << sharded;
      EXPECT_EQ(w3[static_cast<size_t>(i)], (std::vector<float>{1.0f, 1.0f})) << "replica " << i << " sharded " << sharded;
      if (!sharded) {
        EXPECT_FALSE(w3_has_grad[static_cast<size_t>(i)]);
      }
    }
    EXPECT_EQ(w2[0], w2[1]) << sharded;
  }
}

}  // namespace
}  // namespace lazytrain::distributed
