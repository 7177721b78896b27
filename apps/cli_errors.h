// CLI11's parse errors as the command line's own one-line messages (the
// project's rule: one clear error naming the flag and what was expected, never
// a library's raw text):
//   CLI11: "Could not convert: --max_steps = 300,abc"
//   here:  "--max_steps expects an integer, got 'abc'"
//   CLI11: "The following arguments were not expected: 20 --max_step"
//   here:  "unknown flag --max_step (did you mean --max_steps?)"
// Other parse errors keep CLI11's text, which already names the flag
// ("--max_steps: 1 required INT missing").
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace lazytrain::apps {

// The message for `error`, raised while `app` (with its subcommands) parsed.
std::string describe_parse_error(const CLI::App& app, const CLI::ParseError& error);

// Levenshtein distance between `a` and `b` (insertions, deletions, substitutions).
size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace lazytrain::apps
