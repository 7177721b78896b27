#include "apps/args_file.h"

#include <cctype>

#include "core/error.h"
#include "train/json_file.h"

namespace lazytrain::apps {

namespace {

bool names_a_json_file(const std::string& word) {
  if (word.size() <= 5 || word.starts_with("-")) return false;
  std::string ext = word.substr(word.size() - 5);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".json";
}

}  // namespace

bool is_args_file_call(int argc, char** argv) {
  if (argc < 3 || !names_a_json_file(argv[2])) return false;
  if (argc > 3) {
    throw Error(std::string("[") + argv[1] + "] '" + argv[2] +
                "': a JSON file of flags must be the only argument (put the other flags into it)");
  }
  return true;
}

namespace {

// A JSON scalar as a command-line word (numbers in their shortest form).
std::string word(const nlohmann::json& value, const std::string& where) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number() || value.is_boolean()) return value.dump();
  throw Error(where + ": expected a string, number or boolean, got " + std::string(value.type_name()));
}

}  // namespace

std::vector<std::string> args_from_json_file(const CLI::App& command, const std::string& path) {
  const nlohmann::json args = train::read_json_file(path);
  const std::string file = "[" + command.get_name() + "] '" + path + "'";
  if (!args.is_object()) throw Error(file + ": expected a JSON object of flags, e.g. {\"output_dir\": \"out\", \"do_train\": true}");
  std::vector<std::string> words;
  for (const auto& [key, value] : args.items()) {
    const CLI::Option* option = command.get_option_no_throw("--" + key);
    if (option == nullptr || key.starts_with("-")) {
      throw Error(file + ": unknown key '" + key + "'; expected a flag of `lazytrain " + command.get_name() + " --help` without its dashes");
    }
    const std::string where = file + ": key '" + key + "'";
    if (value.is_null()) continue;
    if (option->get_expected_max() == 0) {  // a switch: --do_train
      if (!value.is_boolean()) throw Error(where + ": expected true or false, got " + value.dump());
      if (value.get<bool>()) words.push_back("--" + key);
      continue;
    }
    if (value.is_object()) throw Error(where + ": expected a value or a list of values, got an object");
    // HF's resume_from_checkpoint=true: the newest checkpoint of output_dir; false: none.
    if (key == "resume_from_checkpoint" && value.is_boolean()) {
      if (value.get<bool>()) words.insert(words.end(), {"--" + key, "latest"});
      continue;
    }
    if (value.is_boolean()) throw Error(where + ": expected a value, got " + value.dump() + " (true/false are for switches)");
    if (value.is_array() && option->get_expected_max() == 1) throw Error(where + ": expected one value, got a list");
    words.push_back("--" + key);
    if (value.is_array()) {
      if (value.empty()) throw Error(where + ": expected at least one value in the list");
      for (const nlohmann::json& v : value) words.push_back(word(v, where));
    } else {
      words.push_back(word(value, where));
    }
  }
  return words;
}

}  // namespace lazytrain::apps
