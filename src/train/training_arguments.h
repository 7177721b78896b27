// TrainingArguments: the Hugging Face Trainer's arguments (names and defaults of
// transformers.TrainingArguments, 4.3x) that lazytrain implements. The fields
// are declared once, in training_argument_fields.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/training_argument_fields.h"

namespace lazytrain::train {

struct TrainingArguments {
  // Every field of training_argument_fields.h, with its default.
#define LAZYTRAIN_ARGUMENT_MEMBER(type, member, default_value, spec, help) type member = default_value;
  LAZYTRAIN_TRAINING_ARGUMENTS(LAZYTRAIN_ARGUMENT_MEMBER)
#undef LAZYTRAIN_ARGUMENT_MEMBER

  // Throws Error "[TrainingArguments] --name ..." naming the argument for a
  // value out of range or arguments that disagree (as HF's __post_init__:
  // load_best_model_at_end needs save and evaluation strategies that match, and
  // save_steps a multiple of eval_steps).
  void validate() const;
  bool uses_fsdp() const { return !fsdp.empty(); }
  bool uses_tensor_parallel() const { return tp_size > 1; }
  // One SPMD program over every device (--fsdp or --tp_size), not replicas.
  bool uses_spmd() const { return uses_fsdp() || uses_tensor_parallel(); }
  // HF's __post_init__ defaults: do_eval when evaluation_strategy is not "no",
  // eval_steps = logging_steps, metric_for_best_model = "loss",
  // greater_is_better, logging_dir, report_to "all" → "tensorboard". Idempotent.
  void resolve();

  int64_t resolved_eval_steps() const { return eval_steps.value_or(logging_steps); }
  // "eval_" + metric_for_best_model unless it already starts with "eval_".
  std::string best_metric_key() const;
  bool reports_to_tensorboard() const;

  // Every value as TrainingArguments.to_json_string() writes it
  // (training_args.json): unset optionals as null.
  nlohmann::json to_json() const;
  // The arguments of a to_json() object (training_args.json, or Python's
  // TrainingArguments): every key optional, missing ones keep their defaults;
  // a field is read under its member name, its Hugging Face name or its alias
  // ("eval_strategy" is evaluation_strategy's newer name). Throws Error naming
  // `source` and the key for an unknown key or a value of the wrong type. Not
  // validated (validate()).
  static TrainingArguments from_json(const nlohmann::json& json, const std::string& source);
};

}  // namespace lazytrain::train
