// The lazytrain command line: `lazytrain <command> [flags]`.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "apps/args_file.h"
#include "apps/cli_errors.h"
#include "apps/commands.h"
#include "apps/flag_table_json.h"
#include "core/error.h"
#include "runtime/collectives.h"
#include "runtime/mpi_world.h"
#include "lazy/lazy_api.h"

int main(int argc, char** argv) {
  CLI::App app{"lazytrain: train transformer language models with lazy tensors compiled through an XLA-style pipeline"};
  app.require_subcommand(1);
  lazytrain::apps::RunMlmOptions run_mlm;
  lazytrain::apps::add_run_mlm_command(app, run_mlm);
  lazytrain::apps::RunClmOptions run_clm;
  lazytrain::apps::add_run_clm_command(app, run_clm);
  lazytrain::apps::TrainTokenizerOptions train_tokenizer;
  lazytrain::apps::add_train_tokenizer_command(app, train_tokenizer);
  lazytrain::apps::MakeTfrecordsOptions make_tfrecords;
  lazytrain::apps::add_make_tfrecords_command(app, make_tfrecords);
  lazytrain::apps::FillMaskOptions fill_mask;
  lazytrain::apps::add_fill_mask_command(app, fill_mask);
  lazytrain::apps::GenerateOptions generate;
  lazytrain::apps::add_generate_command(app, generate);
  lazytrain::apps::TokenizeOptions tokenize;
  lazytrain::apps::add_tokenize_command(app, tokenize);
  // `lazytrain --help-json`: the flag table above as JSON (docs/reference/cli.md).
  lazytrain::apps::add_help_json_flag(app);
  if (lazytrain::apps::is_help_json_call(argc, argv)) {
    std::cout << lazytrain::apps::flag_table_json(app, "lazytrain");
    return 0;
  }
  // `lazytrain run_mlm args.json`: the flags from a JSON file (HfArgumentParser).
  std::vector<std::string> words;
  std::vector<char*> file_argv;
  std::string args_file;
  try {
    if (lazytrain::apps::is_args_file_call(argc, argv)) {
      args_file = argv[2];
      words = lazytrain::apps::args_from_json_file(*app.get_subcommand(argv[1]), argv[2]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  if (!args_file.empty()) {
    file_argv = {argv[0], argv[1]};
    for (std::string& w : words) file_argv.push_back(w.data());
    argc = static_cast<int>(file_argv.size());
    argv = file_argv.data();
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, like every other error: "error: --flag: what was wrong".
    const std::string message = lazytrain::apps::describe_parse_error(app, e);
    if (!args_file.empty()) {
      std::fprintf(stderr, "error: '%s': %s (see --help)\n", args_file.c_str(), message.c_str());
    } else {
      std::fprintf(stderr, "error: %s (see --help)\n", message.c_str());
    }
    return 2;
  }
  // Executions still in flight finish before the process tears down its statics.
  struct DrainDevice {
    ~DrainDevice() {
      try {
        lazytrain::lazy::wait_device_ops();
      } catch (...) {  // already reported, or nobody is left to read it
      }
    }
  } drain;
  // A process started by mpirun joins the job now (ranks from the environment);
  // when it fails, the whole job ends (MPI_Abort) instead of the others waiting.
  auto fail = [](const std::string& message) {
    std::fprintf(stderr, "error: %s\n", message.c_str());
    if (lazytrain::runtime::MpiWorld* mpi = lazytrain::runtime::MpiWorld::get(); mpi && mpi->size() > 1) {
      std::fprintf(stderr, "error: process rank %d of %d failed; ending the MPI job\n", mpi->rank(), mpi->size());
      std::fflush(stderr);
      mpi->abort(1);
    }
    return 1;
  };
  try {
    lazytrain::runtime::replica_world();
    if (app.got_subcommand("run_mlm")) return lazytrain::apps::run_mlm(run_mlm);
    if (app.got_subcommand("run_clm")) return lazytrain::apps::run_clm(run_clm);
    if (app.got_subcommand("train_tokenizer")) return lazytrain::apps::train_tokenizer(train_tokenizer);
    if (app.got_subcommand("make_tfrecords")) return lazytrain::apps::make_tfrecords(make_tfrecords);
    if (app.got_subcommand("fill_mask")) return lazytrain::apps::fill_mask(fill_mask);
    if (app.got_subcommand("generate")) return lazytrain::apps::generate(generate);
    if (app.got_subcommand("tokenize")) return lazytrain::apps::tokenize(tokenize);
  } catch (const std::bad_alloc&) {
    return fail("out of memory; check the model and batch sizes (hidden_size, vocab_size, --per_device_train_batch_size)");
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}
