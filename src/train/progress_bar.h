// ProgressBar: a tqdm-like line on stderr with step, loss and steps/s. On a
// terminal it redraws in place; otherwise it prints a line every 10% of the run.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace lazytrain::train {

class ProgressBar {
 public:
  ProgressBar(int64_t total, bool disabled);
  void update(int64_t step, double loss);
  // Prints `text` on its own line (a log entry), keeping the bar intact; printed
  // even when the bar is disabled.
  void message(const std::string& text);
  void finish();

 private:
  std::string line(int64_t step, double loss) const;
  int64_t total_;
  bool disabled_, tty_;
  int64_t last_step_ = 0;
  double last_loss_ = 0.0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace lazytrain::train
