#include "apps/cli_errors.h"

#include <algorithm>
#include <sstream>
#include <vector>

namespace lazytrain::apps {
namespace {

// Every option of `app` and of its subcommands (a failed parse may stop in either).
std::vector<const CLI::Option*> all_options(const CLI::App& app) {
  std::vector<const CLI::Option*> out;
  for (const CLI::Option* o : app.get_options()) out.push_back(o);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    for (const CLI::Option* o : all_options(*sub)) out.push_back(o);
  }
  return out;
}

// The options a misspelt flag is compared with: those of the subcommand that was named, else all.
std::vector<const CLI::Option*> candidate_options(const CLI::App& app) {
  std::vector<const CLI::Option*> out;
  for (const CLI::App* sub : app.get_subcommands()) {
    for (const CLI::Option* o : sub->get_options()) out.push_back(o);
  }
  return out.empty() ? all_options(app) : out;
}

std::string expected_value(const std::string& type_name) {
  if (type_name == "INT") return "an integer";
  if (type_name == "UINT") return "a non-negative integer";
  if (type_name == "FLOAT") return "a number";
  return "a value of type " + type_name;
}

// "Could not convert: --max_steps = 300,abc": the value used is the last one
// (a flag given twice keeps its last value; scripts put their defaults first).
std::string conversion_message(const CLI::App& app, const std::string& what) {
  const std::string prefix = "Could not convert: ";
  const size_t eq = what.find(" = ");
  if (what.rfind(prefix, 0) != 0 || eq == std::string::npos) return what;
  const std::string name = what.substr(prefix.size(), eq - prefix.size());
  const std::string values = what.substr(eq + 3);
  const size_t comma = values.rfind(',');
  const std::string value = comma == std::string::npos ? values : values.substr(comma + 1);
  for (const CLI::Option* o : all_options(app)) {
    if (o->get_name() == name) return name + " expects " + expected_value(o->get_type_name()) + ", got '" + value + "'";
  }
  return name + " cannot take the value '" + value + "'";
}

// "The following arguments were not expected: 20 --max_step" (CLI11 lists them last first).
std::string extras_message(const CLI::App& app, const std::string& what) {
  const size_t colon = what.find(": ");
  if (colon == std::string::npos) return what;
  std::vector<std::string> extras;
  std::istringstream words(what.substr(colon + 2));
  for (std::string w; words >> w;) extras.push_back(w);
  std::reverse(extras.begin(), extras.end());
  for (const std::string& arg : extras) {
    if (arg.rfind("--", 0) != 0) continue;
    const std::string flag = arg.substr(0, arg.find('='));
    std::string best;
    size_t best_distance = std::string::npos;
    for (const CLI::Option* o : candidate_options(app)) {
      for (const std::string& name : o->get_lnames()) {
        const size_t d = edit_distance(flag.substr(2), name);
        if (d < best_distance) best_distance = d, best = "--" + name;
      }
    }
    const bool close = best_distance <= std::max<size_t>(2, (flag.size() - 2) / 4);
    return "unknown flag " + flag + (close ? " (did you mean " + best + "?)" : "");
  }
  return "unexpected argument '" + extras.front() + "' (every value follows its flag: --name value)";
}

}  // namespace

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string describe_parse_error(const CLI::App& app, const CLI::ParseError& error) {
  if (dynamic_cast<const CLI::ConversionError*>(&error)) return conversion_message(app, error.what());
  if (dynamic_cast<const CLI::ExtrasError*>(&error)) return extras_message(app, error.what());
  return error.what();
}

}  // namespace lazytrain::apps
