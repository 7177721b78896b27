#include "train/trainer_optimization.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "train/json_file.h"
#include "train/model_io.h"
#include "train/safetensors.h"

namespace lazytrain::train {

TrainerOptimization make_optimization(nn::Module& model, const TrainingArguments& args, int64_t max_steps) {
  TrainerOptimization opt;
  DecayGroups groups = split_weight_decay(model);
  opt.params = model.parameters();
  opt.optimizer = std::make_unique<optim::AdamW>(std::vector<optim::ParamGroup>{{groups.decay, args.weight_decay}, {groups.no_decay, 0.0}},
                                                 optim::AdamWOptions{args.learning_rate, args.adam_beta1, args.adam_beta2, args.adam_epsilon, 0.0});
  const int64_t warmup =
      args.warmup_steps > 0 ? args.warmup_steps : static_cast<int64_t>(std::ceil(args.warmup_ratio * static_cast<double>(max_steps)));
  opt.scheduler = std::make_unique<optim::LambdaLR>(optim::get_linear_schedule_with_warmup(*opt.optimizer, warmup, max_steps));
  return opt;
}

void save_optimization(const TrainerOptimization&, const nn::Module&, const std::string&) {}
void load_optimization(TrainerOptimization&, const nn::Module&, const std::string&) {}

void load_model_weights(nn::Module& model, const std::string& dir) { load_safetensors_into(model, dir + "/model.safetensors"); }

}  // namespace lazytrain::train
