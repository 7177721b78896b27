#include "apps/training_flags.h"

#include <sstream>
#include <type_traits>

namespace lazytrain::apps {

namespace {

std::vector<std::string> words(const char* text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

// One flag per field of train/training_argument_fields.h, in its order: a bool
// is a flag (--do_train), a list takes 1 to 8 values, anything else one value.
void add_training_arguments(CLI::App& c, train::TrainingArguments& t) {
  train::for_each_training_argument(t, [&](const train::TrainingArgumentField& field, auto& member) {
    using T = std::decay_t<decltype(member)>;
    CLI::Option* option = nullptr;
    if constexpr (std::is_same_v<T, bool>) {
      option = c.add_flag(field.cli_names(), member, field.help);
    } else {
      option = c.add_option(field.cli_names(), member, field.help);
    }
    if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      option->expected(1, 8)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    }
    if (field.spec.cli_required_) option->required();
    if (field.spec.cli_non_negative_) option->check(CLI::NonNegativeNumber);
    if (field.spec.cli_choices_) option->check(CLI::IsMember(words(field.spec.cli_choices_)));
  });
}

}  // namespace lazytrain::apps
