#include "train/trainer_optimization.h"

#include <cmath>

#include "core/error.h"
#include "distributed/xla_model.h"
#include "distributed/zero_redundancy_optimizer.h"
#include "optim/adamw_state.h"
#include "train/json_file.h"
#include "train/model_io.h"
#include "train/safetensors.h"

namespace lazytrain::train {

TrainerOptimization make_optimization(nn::Module& model, const TrainingArguments& args, int64_t max_steps) {
  TrainerOptimization opt;
  DecayGroups groups = split_weight_decay(model);
  opt.params = model.parameters();
  std::vector<optim::ParamGroup> param_groups{{groups.decay, args.weight_decay}, {groups.no_decay, 0.0}};
  const optim::AdamWOptions options{args.learning_rate, args.adam_beta1, args.adam_beta2, args.adam_epsilon, 0.0};
  opt.sharded = args.sharded_optimizer && distributed::world_size() > 1;
  if (opt.sharded) {
    opt.optimizer = std::make_unique<distributed::ZeroRedundancyAdamW>(std::move(param_groups), options, args.max_grad_norm);
  } else {
    opt.optimizer = std::make_unique<optim::AdamW>(std::move(param_groups), options);
  }
  const int64_t warmup =
      args.warmup_steps > 0 ? args.warmup_steps : static_cast<int64_t>(std::ceil(args.warmup_ratio * static_cast<double>(max_steps)));
  opt.scheduler = std::make_unique<optim::LambdaLR>(optim::get_scheduler(args.lr_scheduler_type, *opt.optimizer, warmup, max_steps));
  return opt;
}

void save_optimization(const TrainerOptimization& opt, const optim::AdamWStateDict& state, const std::string& dir) {
  std::map<std::string, TensorRecord> records;
  for (const auto& [name, literal] : state.tensors) records.emplace(name, to_tensor_record(literal));
  save_safetensors(dir + "/optimizer.safetensors", records, {{"format", "pt"}, {"optimizer_state", dump_json(state.state.to_json())}});
  write_json_file(dir + "/scheduler.json", opt.scheduler->state_dict());
}

void load_optimization(TrainerOptimization& opt, const nn::Module& model, const std::string& dir) {
  const std::string path = dir + "/optimizer.safetensors";
  std::map<std::string, std::string> metadata;
  std::map<std::string, TensorRecord> records = load_safetensors(path, &metadata);
  if (!metadata.contains("optimizer_state")) throw Error("[Trainer] '" + path + "' has no \"optimizer_state\" metadata; expected a lazytrain checkpoint");
  optim::AdamWStateDict state;
  state.state = optim::AdamWState::from_json(parse_json(metadata["optimizer_state"], path), path);
  for (const auto& [name, r] : records) state.tensors.emplace(name, to_literal(r));
  const std::string scheduler_path = dir + "/scheduler.json";
  const nlohmann::json scheduler = read_json_file(scheduler_path);
  try {
    opt.optimizer->load_state_dict(state, model.named_parameters());
  } catch (const Error& e) {
    throw Error("[Trainer] '" + path + "': " + e.what());
  }
  opt.scheduler->load_state_dict(scheduler, scheduler_path);
}

void load_model_weights(nn::Module& model, const std::string& dir) { load_safetensors_into(model, dir + "/model.safetensors"); }

}  // namespace lazytrain::train
