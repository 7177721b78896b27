#include "train/training_arguments.h"

#include <cmath>

#include <algorithm>
#include <ctime>
#include <type_traits>
#include <unistd.h>

#include "core/error.h"

namespace lazytrain::train {

namespace {

bool one_of(const std::string& value, std::initializer_list<const char*> allowed) {
  return std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return value == a; });
}

// HF's default logging_dir: runs/<%b%d_%H-%M-%S>_<hostname>.
std::string default_logging_dir(const std::string& output_dir) {
  char stamp[64];
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(stamp, sizeof stamp, "%b%d_%H-%M-%S", &local);
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  return output_dir + "/runs/" + stamp + "_" + host;
}

}  // namespace

void TrainingArguments::validate() const {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw Error("[TrainingArguments] " + what);
  };
  require(!output_dir.empty(), "--output_dir is required");
  require(fsdp.empty() || fsdp == "full_shard" || fsdp == "full_shard auto_wrap",
          "--fsdp expects full_shard (or \"full_shard auto_wrap\", the same here: every parameter is split; or nothing: replicas), got '" + fsdp + "'");
  require(fsdp.empty() || !sharded_optimizer, "--fsdp full_shard shards the optimizer state already: leave out --sharded_optimizer");
  require(tp_size >= 1 && tp_size <= 256, "--tp_size must be between 1 (no tensor parallelism) and 256, got " + std::to_string(tp_size));
  require(tp_size == 1 || fsdp.empty(), "--tp_size with --fsdp is not supported yet: choose one");
  require(tp_size == 1 || !sharded_optimizer, "--tp_size splits the optimizer state with its parameters: leave out --sharded_optimizer");
  require(per_device_train_batch_size > 0, "--per_device_train_batch_size must be positive");
  require(per_device_eval_batch_size > 0, "--per_device_eval_batch_size must be positive");
  require(gradient_accumulation_steps >= 1 && gradient_accumulation_steps <= 1'000'000,
          "--gradient_accumulation_steps must be between 1 and 1000000, got " + std::to_string(gradient_accumulation_steps));
  require(dataloader_num_workers >= 0 && dataloader_num_workers <= 64, "--dataloader_num_workers must be between 0 and 64");
  require(loader_prefetch_size >= 1 && device_prefetch_size >= 1, "--loader_prefetch_size and --device_prefetch_size must be at least 1");
  require(num_cores >= 1 && num_cores <= 256, "--num_cores must be between 1 and 256");
  require(num_threads >= 0 && num_threads <= 4096,
          "--num_threads must be between 0 (the CPUs this process may use) and 4096, got " + std::to_string(num_threads));
  require(one_of(execution_mode, {"lazy", "debug_eager", "strict_eager", "fused_eager"}),
          "--execution_mode '" + execution_mode + "' is not one of lazy, debug_eager, strict_eager, fused_eager");
  require(collective_timeout > 0 && std::isfinite(collective_timeout), "--collective_timeout must be a positive number of seconds");
  require(learning_rate >= 0, "--learning_rate must be non-negative");
  require(weight_decay >= 0, "--weight_decay must be non-negative");
  require(max_grad_norm >= 0, "--max_grad_norm must be non-negative");
  require(num_train_epochs > 0 || max_steps > 0, "--num_train_epochs or --max_steps must be positive");
  require(warmup_steps >= 0, "--warmup_steps must be non-negative");
  require(warmup_ratio >= 0 && warmup_ratio <= 1, "--warmup_ratio must be in [0, 1]");
  require(one_of(lr_scheduler_type, {"linear", "cosine", "constant", "constant_with_warmup"}),
          "--lr_scheduler_type '" + lr_scheduler_type + "' is not one of linear, cosine, constant, constant_with_warmup");
  require(logging_steps > 0, "--logging_steps must be positive");
  require(adam_beta1 >= 0 && adam_beta1 < 1 && adam_beta2 >= 0 && adam_beta2 < 1, "--adam_beta1/--adam_beta2 must be in [0, 1)");
  require(adam_epsilon >= 0, "--adam_epsilon must be non-negative");
  require(one_of(evaluation_strategy, {"no", "steps", "epoch"}),
          "--evaluation_strategy '" + evaluation_strategy + "' is not one of no, steps, epoch");
  require(one_of(save_strategy, {"no", "steps", "epoch"}), "--save_strategy '" + save_strategy + "' is not one of no, steps, epoch");
  require(!eval_steps || *eval_steps > 0, "--eval_steps must be positive");
  require(save_steps > 0, "--save_steps must be positive, got " + std::to_string(save_steps) + " (use --save_strategy no to save no checkpoint)");
  require(!save_total_limit || *save_total_limit > 0, "--save_total_limit must be positive (leave it out to keep every checkpoint)");
  for (const std::string& r : report_to) {
    require(one_of(r, {"all", "tensorboard", "none"}), "--report_to '" + r + "' is not one of all, tensorboard, none");
  }
  if (load_best_model_at_end) {
    require(evaluation_strategy != "no", "--load_best_model_at_end requires an --evaluation_strategy (steps or epoch)");
    require(save_strategy == evaluation_strategy, "--load_best_model_at_end requires the save and eval strategy to match, but found --save_strategy " +
                                                      save_strategy + " and --evaluation_strategy " + evaluation_strategy);
    require(save_strategy != "steps" || save_steps % resolved_eval_steps() == 0,
            "--load_best_model_at_end requires --save_steps to be a round multiple of --eval_steps, but found " + std::to_string(save_steps) +
                ", which is not a round multiple of " + std::to_string(resolved_eval_steps()));
  }
}

void TrainingArguments::resolve() {
  if (evaluation_strategy != "no") do_eval = true;
  if (!eval_steps) eval_steps = logging_steps;
  if (load_best_model_at_end && metric_for_best_model.empty()) metric_for_best_model = "loss";
  if (!metric_for_best_model.empty() && !greater_is_better) {
    greater_is_better = !(metric_for_best_model == "loss" || metric_for_best_model == "eval_loss" || metric_for_best_model.ends_with("_loss"));
  }
  if (logging_dir.empty()) logging_dir = default_logging_dir(output_dir);
  for (std::string& r : report_to) {
    if (r == "all") r = "tensorboard";  // the one integration lazytrain has
  }
}

std::string TrainingArguments::best_metric_key() const {
  const std::string metric = metric_for_best_model.empty() ? "loss" : metric_for_best_model;
  return metric.starts_with("eval_") ? metric : "eval_" + metric;
}

bool TrainingArguments::reports_to_tensorboard() const {
  return std::any_of(report_to.begin(), report_to.end(), [](const std::string& r) { return r == "tensorboard" || r == "all"; });
}

namespace {

template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};

// A field's value as training_args.json holds it.
template <typename T>
nlohmann::json argument_json(const TrainingArgumentField& field, const T& value) {
  if constexpr (is_optional<T>::value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (field.spec.json_list_) return value.empty() ? nlohmann::json::array() : nlohmann::json::array({value});
    if (field.spec.null_when_empty_ && value.empty()) return nullptr;
    return value;
  } else {
    return value;
  }
}

// JSON's type checks for a scalar; nlohmann's own for a string.
template <typename T>
void read_value(const nlohmann::json& v, T& out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) throw nlohmann::json::type_error::create(302, "expected true or false, got " + v.dump(), &v);
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) throw nlohmann::json::type_error::create(302, "expected an integer, got " + v.dump(), &v);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) throw nlohmann::json::type_error::create(302, "expected a number, got " + v.dump(), &v);
  }
  out = v.get<T>();
}

// Reads `v` into a field: null unsets an optional (or empties a
// null_when_empty string); a json_list string takes a list's first option;
// a list of strings takes one string too (HF's report_to="none").
template <typename T>
void read_argument(const TrainingArgumentField& field, const nlohmann::json& v, T& out) {
  if constexpr (is_optional<T>::value) {
    if (v.is_null()) {
      out.reset();
      return;
    }
    typename T::value_type value{};
    read_value(v, value);
    out = value;
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    out = v.is_string() ? std::vector<std::string>{v.get<std::string>()} : v.get<std::vector<std::string>>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (field.spec.json_list_ && v.is_array()) {
      out = v.empty() ? std::string() : v.at(0).get<std::string>();
    } else if (field.spec.null_when_empty_ && v.is_null()) {
      out.clear();
    } else {
      read_value(v, out);
    }
  } else {
    read_value(v, out);
  }
}

}  // namespace

nlohmann::json TrainingArguments::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for_each_training_argument(*this, [&](const TrainingArgumentField& field, const auto& value) { j[field.key()] = argument_json(field, value); });
  return j;
}

TrainingArguments TrainingArguments::from_json(const nlohmann::json& json, const std::string& source) {
  if (!json.is_object()) throw Error("[" + source + "] the training arguments must be a JSON object, got " + json.dump());
  TrainingArguments a;
  for (const auto& [key, v] : json.items()) {
    bool known = false;
    try {
      for_each_training_argument(a, [&](const TrainingArgumentField& field, auto& member) {
        if (known || !field.named(key)) return;
        known = true;
        read_argument(field, v, member);
      });
    } catch (const nlohmann::json::exception& e) {
      std::string what = e.what();
      if (const size_t at = what.find("] "); at != std::string::npos) what = what.substr(at + 2);
      throw Error("[" + source + "] training argument '" + key + "': " + what);
    }
    if (!known) throw Error("[" + source + "] unknown training argument '" + key + "'");
  }
  return a;
}

}  // namespace lazytrain::train
