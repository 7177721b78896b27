// The command line's whole flag table as JSON, read from CLI11's own App and
// Option objects (not a copy of the table): `lazytrain --help-json` prints it,
// and tools/gen_cli_reference.py turns it into docs/reference/cli.md and
// docs/reference/cli_flags.json (the docs build checks every flag the pages
// name against that file).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace lazytrain::apps {

// The hidden flag that asks for the table.
inline constexpr const char* kHelpJsonFlag = "--help-json";

// Adds kHelpJsonFlag to `app` as a hidden flag, so the table lists it.
void add_help_json_flag(CLI::App& app);

// True when the command line holds --help-json (`lazytrain --help-json`; after a
// command too, as --help: the table is the same).
bool is_help_json_call(int argc, char** argv);

// The table of `app` and every subcommand, as an indented JSON document:
// {"program", "description", "options": [...], "commands": [{"name",
// "description", "options": [{"name", "names", "aliases", "flag", "type",
// "nargs", "default", "required", "help", "choices", "checks", "excludes",
// "needs", "hidden"}]}]}. Defaults are the bound variables' values now, so
// call it before parsing.
std::string flag_table_json(CLI::App& app, const std::string& program);

}  // namespace lazytrain::apps
