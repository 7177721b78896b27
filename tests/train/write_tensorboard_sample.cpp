// Writes one TensorBoard event file with SummaryWriter for
// tests/train/tensorboard_events_test.py, which parses it with protobuf.
// Usage: write_tensorboard_sample <log_dir> [<tag> <step> <value> <walltime|now>]...
// Prints the event file's path. Built on its own (CMakeLists.txt), not part of lazytrain_tests.
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "train/tensorboard.h"

int main(int argc, char** argv) {
  if (argc < 2 || (argc - 2) % 4 != 0) {
    std::fprintf(stderr, "usage: %s <log_dir> [<tag> <step> <value> <walltime|now>]...\n", argv[0]);
    return 2;
  }
  try {
    lazytrain::train::SummaryWriter writer(argv[1], /*max_queue=*/1000);
    for (int i = 2; i < argc; i += 4) {
      const std::string walltime = argv[i + 3];
      writer.add_scalar(argv[i], std::stod(argv[i + 2]), std::stoll(argv[i + 1]),
                        walltime == "now" ? std::nullopt : std::optional<double>(std::stod(walltime)));
    }
    writer.close();
    std::printf("%s\n", writer.path().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
