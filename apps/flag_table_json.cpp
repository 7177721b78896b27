#include "apps/flag_table_json.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <vector>

namespace lazytrain::apps {

namespace {

using json = nlohmann::ordered_json;  // keys in the order written here

// The descriptions of the option's checks (CLI::IsMember gives "{a,b,c}",
// CLI::Range "INT in [0 - 9]"). CLI11 2.1 lists validators only by index.
std::vector<std::string> check_descriptions(CLI::Option& option) {
  std::vector<std::string> out;
  for (int i = 0;; ++i) {
    CLI::Validator* validator = nullptr;
    try {
      validator = option.get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      break;
    }
    if (std::string d = validator->get_description(); !d.empty()) out.push_back(std::move(d));
  }
  return out;
}

// The allowed values when a check is a set ("{eager,sdpa}"), else empty.
std::vector<std::string> choices_of(const std::vector<std::string>& checks) {
  std::vector<std::string> out;
  for (const std::string& d : checks) {
    if (d.size() < 2 || d.front() != '{' || d.back() != '}') continue;
    std::string_view items(d.data() + 1, d.size() - 2);
    while (!items.empty()) {
      size_t comma = items.find(',');
      out.emplace_back(items.substr(0, comma));
      if (comma == std::string_view::npos) break;
      items.remove_prefix(comma + 1);
    }
  }
  return out;
}

// "1", "0..1", "1..8" or "1+" (a list without an upper bound).
std::string nargs_of(const CLI::Option& option) {
  const int lo = option.get_items_expected_min();
  const int hi = option.get_items_expected_max();
  if (lo == hi) return std::to_string(lo);
  if (hi >= (1 << 20)) return std::to_string(lo) + "+";
  return std::to_string(lo) + ".." + std::to_string(hi);
}

std::vector<std::string> names_of(const CLI::Option& option) {
  std::vector<std::string> out;
  for (const std::string& s : option.get_snames()) out.push_back("-" + s);
  for (const std::string& l : option.get_lnames()) out.push_back("--" + l);
  return out;
}

std::string primary_name(const CLI::Option& option) {
  if (!option.get_lnames().empty()) return "--" + option.get_lnames().front();
  if (!option.get_snames().empty()) return "-" + option.get_snames().front();
  return option.get_name(true);
}

std::vector<std::string> primary_names(const std::set<CLI::Option*>& options) {
  std::vector<std::string> out;
  for (const CLI::Option* o : options) out.push_back(primary_name(*o));
  std::sort(out.begin(), out.end());
  return out;
}

json option_json(CLI::Option& option) {
  const bool flag = option.get_items_expected_max() == 0;
  const std::vector<std::string> checks = check_descriptions(option);
  // The bound variable's value now (before parsing: its default), also for
  // commands that do not capture defaults for their --help.
  if (!flag) option.capture_default_str();
  std::string type = option.get_type_name();
  type = type.substr(0, type.find(':'));  // without the checks' descriptions
  const std::vector<std::string> names = names_of(option);
  const std::string name = primary_name(option);
  std::vector<std::string> aliases;
  for (const std::string& n : names) {
    if (n != name) aliases.push_back(n);
  }
  return json{
      {"name", name},
      {"names", names},
      {"aliases", aliases},
      {"flag", flag},
      {"type", flag ? "" : type},
      {"nargs", flag ? "0" : nargs_of(option)},
      {"default", flag ? "" : option.get_default_str()},
      {"required", option.get_required()},
      {"help", option.get_description()},
      {"choices", choices_of(checks)},
      {"checks", checks},
      {"excludes", primary_names(option.get_excludes())},
      {"needs", primary_names(option.get_needs())},
      {"hidden", option.get_group().empty()},
  };
}

json options_json(CLI::App& app) {
  json out = json::array();
  for (CLI::Option* option : app.get_options()) out.push_back(option_json(*option));
  return out;
}

}  // namespace

void add_help_json_flag(CLI::App& app) {
  const std::string help = "Print every command's flags as JSON (tools/gen_cli_reference.py reads it)";
  app.add_flag(kHelpJsonFlag, help)->group("");
}

bool is_help_json_call(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == kHelpJsonFlag) return true;
  }
  return false;
}

std::string flag_table_json(CLI::App& app, const std::string& program) {
  json commands = json::array();
  for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) {
    commands.push_back(json{
        {"name", command->get_name()},
        {"description", command->get_description()},
        {"options", options_json(*command)},
    });
  }
  json table{
      {"program", program},
      {"description", app.get_description()},
      {"options", options_json(app)},
      {"commands", commands},
  };
  return table.dump(2) + "\n";
}

}  // namespace lazytrain::apps
