// The field list of train/training_argument_fields.h drives TrainingArguments'
// JSON: every field is written under its Hugging Face key, read back under
// each of its names, and keeps a value that differs from its default.
#include "train/training_argument_fields.h"

#include <gtest/gtest.h>

#include <set>
#include <type_traits>

#include "core/error.h"
#include "train/training_arguments.h"

namespace lazytrain::train {
namespace {

template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};

// A value of the member's type that is not its default.
template <typename T>
void change(const TrainingArgumentField& field, T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    value = !value;
  } else if constexpr (is_optional<T>::value) {
    if constexpr (std::is_same_v<typename T::value_type, bool>) {
      value = true;
    } else {
      value = 7;
    }
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    value = {"none", "tensorboard"};
  } else if constexpr (std::is_same_v<T, std::string>) {
    value = std::string("changed_") + field.member;
  } else if constexpr (std::is_floating_point_v<T>) {
    value += 0.25;
  } else {
    value += 3;
  }
}

TEST(TrainingArgumentFields, EveryFieldRoundTripsThroughJsonUnderItsHuggingFaceKey) {
  const nlohmann::json defaults = TrainingArguments().to_json();
  TrainingArguments changed;
  std::set<std::string> keys;
  for_each_training_argument(changed, [&](const TrainingArgumentField& field, auto& member) { change(field, member), keys.insert(field.key()); });
  const nlohmann::json j = changed.to_json();
  EXPECT_EQ(j.size(), keys.size());  // one key per field, nothing else
  for (const std::string& key : keys) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_NE(j[key], defaults[key]) << key << " is written without its value";
  }
  EXPECT_EQ(TrainingArguments::from_json(j, "test").to_json(), j);
  EXPECT_EQ(j["tpu_metrics_debug"], true);  // HF's name of metrics_debug
  EXPECT_EQ(j["fsdp"], nlohmann::json::array({"changed_fsdp"}));
}

TEST(TrainingArgumentFields, EachNameOfAFieldReadsIt) {
  TrainingArguments a = TrainingArguments::from_json({{"eval_strategy", "epoch"}, {"metrics_debug", true}}, "test");
  EXPECT_EQ(a.evaluation_strategy, "epoch");
  EXPECT_TRUE(a.metrics_debug);
  a = TrainingArguments::from_json({{"tpu_metrics_debug", true}, {"report_to", "none"}, {"logging_dir", nullptr}}, "test");
  EXPECT_TRUE(a.metrics_debug);
  EXPECT_EQ(a.report_to, std::vector<std::string>{"none"});
  EXPECT_EQ(a.logging_dir, "");
}

TEST(TrainingArgumentFields, UnknownKeysAndWrongTypesNameTheKey) {
  auto error_of = [](const nlohmann::json& j) -> std::string {
    try {
      TrainingArguments::from_json(j, "args.json");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of({{"no_such_argument", 1}}), "[args.json] unknown training argument 'no_such_argument'");
  EXPECT_EQ(error_of({{"max_steps", 1.5}}), "[args.json] training argument 'max_steps': expected an integer, got 1.5");
  EXPECT_EQ(error_of({{"do_train", 1}}), "[args.json] training argument 'do_train': expected true or false, got 1");
  EXPECT_EQ(error_of({{"learning_rate", "fast"}}), "[args.json] training argument 'learning_rate': expected a number, got \"fast\"");
  EXPECT_EQ(error_of(nlohmann::json::array()), "[args.json] the training arguments must be a JSON object, got []");
}

TEST(TrainingArgumentFields, CliNamesListTheMemberThenHuggingFacesNames) {
  std::map<std::string, std::string> names;
  TrainingArguments a;
  for_each_training_argument(a, [&](const TrainingArgumentField& field, auto&) { names[field.member] = field.cli_names(); });
  EXPECT_EQ(names.at("output_dir"), "--output_dir");
  EXPECT_EQ(names.at("evaluation_strategy"), "--evaluation_strategy,--eval_strategy");
  EXPECT_EQ(names.at("metrics_debug"), "--metrics_debug,--tpu_metrics_debug");
}

}  // namespace
}  // namespace lazytrain::train
