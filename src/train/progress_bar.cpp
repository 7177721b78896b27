#include "train/progress_bar.h"

#include <algorithm>
#include <cstdio>
#include <unistd.h>

namespace lazytrain::train {

ProgressBar::ProgressBar(int64_t total, bool disabled)
    : total_(total), disabled_(disabled), tty_(isatty(fileno(stderr)) != 0), start_(std::chrono::steady_clock::now()) {}

std::string ProgressBar::line(int64_t step, double loss) const {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double rate = elapsed > 0 ? static_cast<double>(step) / elapsed : 0.0;
  int pct = total_ > 0 ? static_cast<int>(100 * step / total_) : 100;
  int filled = pct / 5;
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%3d%%|%-20s| %lld/%lld [%.0fs, %.2f it/s, loss=%.4f]", pct, std::string(static_cast<size_t>(filled), '#').c_str(),
                static_cast<long long>(step), static_cast<long long>(total_), elapsed, rate, loss);
  return buf;
}

void ProgressBar::update(int64_t step, double loss) {
  last_step_ = step;
  last_loss_ = loss;
  if (disabled_) return;
  if (tty_) {
    std::fprintf(stderr, "\r%s", line(step, loss).c_str());
  } else if (total_ < 10 || step % std::max<int64_t>(1, total_ / 10) == 0) {
    std::fprintf(stderr, "%s\n", line(step, loss).c_str());
  }
  std::fflush(stderr);
}

void ProgressBar::message(const std::string& text) {
  if (disabled_) {
    std::fprintf(stderr, "%s\n", text.c_str());  // log lines show even without the bar
    return;
  }
  std::fprintf(stderr, tty_ ? "\r\033[K%s\n%s" : "%s\n%s", text.c_str(), tty_ ? line(last_step_, last_loss_).c_str() : "");
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!disabled_ && tty_) std::fprintf(stderr, "\n");
}

}  // namespace lazytrain::train
