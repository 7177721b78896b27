// A command's flags from one JSON file, as Hugging Face's HfArgumentParser does
// for `python run_mlm.py args.json`: `lazytrain run_mlm args.json` reads
// {"output_dir": "out", "do_train": true, "learning_rate": 1e-3, ...}.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace lazytrain::apps {

// True when the command line is `<command> <file>.json` (any case of
// ".json"). Throws Error when other arguments follow the file (HfArgumentParser
// reads the file only when it is the one argument).
bool is_args_file_call(int argc, char** argv);

// The flags of `command` that `path` spells, as command-line words
// ("--learning_rate", "0.001", ...): a key is a flag name without its dashes;
// true makes a switch flag present and false leaves it out; a string or number
// is the flag's value; a list gives several values; null leaves the flag at
// its default; "resume_from_checkpoint": true means "latest", as the Trainer
// takes resume_from_checkpoint=True. Throws lazytrain::Error naming the file and the key for a
// key that is no flag of the command ("unknown key 'lerning_rate'"), a value
// of the wrong kind (an object, a number for a switch, a boolean or a list for
// a one-value flag), or a file that is not a JSON object.
std::vector<std::string> args_from_json_file(const CLI::App& command, const std::string& path);

}  // namespace lazytrain::apps
