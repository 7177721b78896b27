// Checkpoints of a sharded run (issue 34, item 8): a model trained with FSDP
// over 4 devices saves whole tensors (model.safetensors as transformers
// writes it: reading a split parameter assembles its tiles), a fresh model
// loads them exactly, and training goes on on another mesh (2 devices) as it
// would on one device from the same weights.
#include <gtest/gtest.h>

#include <filesystem>

#include "distributed/spmd.h"
#include "lazy/lazy_api.h"
#include "lazy/sharded_data.h"
#include "runtime/collectives.h"
#include "train/model_io.h"
#include "../support/tiny_data_parallel.h"

namespace lazytrain::distributed::spmd {
namespace {

using testing_support::kTinyGlobalBatch;
using testing_support::kTinySeqLen;

// `steps` AdamW steps from `step0`, the batch split over `mesh` when given.
void train_steps(models::MaskedLMModel& model, const Mesh* mesh, int step0, int steps) {
  optim::AdamWOptions adam;
  adam.lr = 1e-2;
  adam.eps = 1e-6;  // as spmd_models_test.cpp: rounding alone is not scaled up to a step
  optim::AdamW optimizer({{model.parameters(), 0.01}}, adam);
  for (int step = step0; step < step0 + steps; ++step) {
    Tensor ids = from_vector(testing_support::tiny_batch_rows(step, 0, kTinyGlobalBatch), {kTinyGlobalBatch, kTinySeqLen});
    Tensor attention = ones({kTinyGlobalBatch, kTinySeqLen}, DType::kInt64);
    if (mesh) {
      mark_sharding(ids, *mesh, {{mesh->axis_names()[0]}, {}});
      mark_sharding(attention, *mesh, {{mesh->axis_names()[0]}, {}});
    }
    model.forward(ids, attention, ids).loss.backward();
    optimizer.step();
    optimizer.zero_grad();
    lazy::mark_step();
  }
  lazy::wait_device_ops();
}

std::shared_ptr<models::MaskedLMModel> loaded(const std::string& path) {
  auto model = models::AutoModelForMaskedLM::from_config(testing_support::tiny_bert_config());
  lazy::mark_step();
  train::load_safetensors_into(*model, path);
  return model;
}

TEST(SpmdCheckpoint, AShardedRunSavesWholeTensorsAndGoesOnOnAnotherMesh) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("lazytrain_spmd_checkpoint_" + std::to_string(::getpid()));
  std::vector<std::vector<float>> trained;
  {
    runtime::set_local_replicas(4);
    const Mesh mesh({0, 1, 2, 3}, {4}, {"fsdp"});
    manual_seed(42);
    auto model = models::AutoModelForMaskedLM::from_config(testing_support::tiny_bert_config());
    lazy::mark_step();
    shard_parameters_fsdp(*model, mesh, "fsdp");
    train_steps(*model, &mesh, 0, 3);
    for (const Tensor& p : model->parameters()) ASSERT_TRUE(p.ir_value()->sharded_data());
    std::filesystem::create_directories(dir);
    train::save_pretrained(*model, model->config().to_json(), dir.string());
    trained = testing_support::parameter_values(*model);
  }
  runtime::set_local_replicas(1);
  const std::string file = (dir / "model.safetensors").string();
  // Whole tensors, exactly the trained values.
  EXPECT_EQ(testing_support::parameter_values(*loaded(file)), trained);

  // One device from the saved weights, and a 2-device FSDP mesh from them.
  auto reference = loaded(file);
  train_steps(*reference, nullptr, 3, 2);
  runtime::set_local_replicas(2);
  {
    const Mesh mesh({0, 1}, {2}, {"fsdp"});
    auto resumed = loaded(file);
    shard_parameters_fsdp(*resumed, mesh, "fsdp");
    train_steps(*resumed, &mesh, 3, 2);
    EXPECT_LE(testing_support::max_parameter_difference(testing_support::parameter_values(*resumed), testing_support::parameter_values(*reference)),
              1e-5);
  }
  runtime::set_local_replicas(1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lazytrain::distributed::spmd
