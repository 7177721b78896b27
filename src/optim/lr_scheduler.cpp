#include "optim/lr_scheduler.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace lazytrain::optim {
namespace {

constexpr const char* kLoadOp = "LambdaLR.load_state_dict";

const nlohmann::json& required_key(const nlohmann::json& state, const std::string& key, const std::string& source) {
  auto it = state.find(key);
  check(it != state.end(), kLoadOp, source + ": missing key '" + key + "'");
  return *it;
}

int64_t read_count(const nlohmann::json& state, const std::string& key, const std::string& source) {
  const nlohmann::json& v = required_key(state, key, source);
  check(v.is_number_integer(), kLoadOp, source + ": '" + key + "' is " + v.dump() + ", expected an integer");
  return v.get<int64_t>();
}

// A list of one rate per parameter group, all equal (AdamW here has one rate): the rate.
double read_rates(const nlohmann::json& state, const std::string& key, size_t groups, const std::string& source) {
  const nlohmann::json& v = required_key(state, key, source);
  check(v.is_array() && v.size() == groups, kLoadOp,
        source + ": '" + key + "' is " + v.dump() + ", expected a list of " + std::to_string(groups) + " rates (one per parameter group)");
  for (const auto& x : v) {
    check(x.is_number() && std::isfinite(x.get<double>()) && x.get<double>() >= 0, kLoadOp,
          source + ": '" + key + "' holds " + x.dump() + ", expected finite rates >= 0");
    check(x.get<double>() == v[0].get<double>(), kLoadOp,
          source + ": '" + key + "' is " + v.dump() + ", expected the same rate for every group (AdamW has one learning rate)");
  }
  return groups == 0 ? 0.0 : v[0].get<double>();
}

}  // namespace

LambdaLR::LambdaLR(AdamW& optimizer, std::function<double(int64_t)> lr_lambda)
    : optimizer_(optimizer), lr_lambda_(std::move(lr_lambda)), base_lr_(optimizer.lr()) {
  optimizer_.set_lr(base_lr_ * lr_lambda_(0));
}

void LambdaLR::step() {
  ++last_epoch_;
  optimizer_.set_lr(base_lr_ * lr_lambda_(last_epoch_));
}

std::vector<double> LambdaLR::get_last_lr() const {
  return std::vector<double>(optimizer_.param_groups().size(), optimizer_.lr());
}

std::vector<double> LambdaLR::base_lrs() const { return std::vector<double>(optimizer_.param_groups().size(), base_lr_); }

nlohmann::json LambdaLR::state_dict() const {
  return nlohmann::json{{"base_lrs", base_lrs()}, {"last_epoch", last_epoch_}, {"_step_count", last_epoch_ + 1}, {"_last_lr", get_last_lr()}};
}

void LambdaLR::load_state_dict(const nlohmann::json& state, const std::string& source) {
  check(state.is_object(), kLoadOp, source + ": expected a JSON object with base_lrs, last_epoch, _step_count and _last_lr");
  const size_t groups = optimizer_.param_groups().size();
  const double base_lr = read_rates(state, "base_lrs", groups, source);
  const double last_lr = read_rates(state, "_last_lr", groups, source);
  const int64_t last_epoch = read_count(state, "last_epoch", source);
  check(last_epoch >= 0, kLoadOp, source + ": 'last_epoch' is " + std::to_string(last_epoch) + ", expected >= 0");
  const int64_t step_count = read_count(state, "_step_count", source);
  check(step_count == last_epoch + 1, kLoadOp,
        source + ": '_step_count' is " + std::to_string(step_count) + ", expected last_epoch + 1 = " + std::to_string(last_epoch + 1));
  base_lr_ = base_lr;
  last_epoch_ = last_epoch;
  if (groups > 0) optimizer_.set_lr(last_lr);
}

LambdaLR get_linear_schedule_with_warmup(AdamW& optimizer, int64_t num_warmup_steps, int64_t num_training_steps) {
  return LambdaLR(optimizer, [num_warmup_steps, num_training_steps](int64_t step) {
    return linear_schedule_with_warmup(step, num_warmup_steps, num_training_steps);
  });
}

LambdaLR get_cosine_schedule_with_warmup(AdamW& optimizer, int64_t num_warmup_steps, int64_t num_training_steps, double num_cycles) {
  return LambdaLR(optimizer, [num_warmup_steps, num_training_steps, num_cycles](int64_t step) {
    return cosine_schedule_with_warmup(step, num_warmup_steps, num_training_steps, num_cycles);
  });
}

LambdaLR get_constant_schedule(AdamW& optimizer) {
  return LambdaLR(optimizer, [](int64_t) { return 1.0; });
}

LambdaLR get_constant_schedule_with_warmup(AdamW& optimizer, int64_t num_warmup_steps) {
  return LambdaLR(optimizer, [num_warmup_steps](int64_t step) { return constant_schedule_with_warmup(step, num_warmup_steps); });
}

const std::vector<std::string>& scheduler_type_names() {
  static const std::vector<std::string> names = {"linear", "cosine", "constant", "constant_with_warmup"};
  return names;
}

LambdaLR get_scheduler(const std::string& name, AdamW& optimizer, int64_t num_warmup_steps, int64_t num_training_steps) {
  if (name == "linear") return get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps);
  if (name == "cosine") return get_cosine_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps);
  if (name == "constant") return get_constant_schedule(optimizer);
  if (name == "constant_with_warmup") return get_constant_schedule_with_warmup(optimizer, num_warmup_steps);
  std::string valid;
  for (const auto& n : scheduler_type_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw Error("[get_scheduler] unknown scheduler type '" + name + "'; expected one of: " + valid);
}

}  // namespace lazytrain::optim
