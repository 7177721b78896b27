// A custom training loop on lazytrain's public API, built against the installed
// package (find_package(lazytrain)): nn::Linear fits y = x·w + b with AdamW on a
// fresh batch each step. Every step records forward, backward and the optimizer
// update lazily; mark_step() cuts the graph, which compiles on the first step and
// is reused from the cache afterwards. Exits 1 unless the loss falls, w and b are
// recovered, and later steps compile nothing.
#include <cmath>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

#include "lazy/graph_executor.h"
#include "nn/layers.h"
#include "optim/adamw.h"
#include "runtime/metrics.h"
#include "tensor/ops.h"

using namespace lazytrain;

int main() {
  constexpr int64_t kBatch = 64, kFeatures = 4, kSteps = 100;
  const std::vector<float> true_w = {2.0f, -3.0f, 0.5f, 1.0f};
  const float true_b = 0.7f;
  std::mt19937 gen(0);
  std::normal_distribution<float> normal;
  auto make_batch = [&] {  // host data; it enters the graph as device data, not constants
    std::vector<float> x(kBatch * kFeatures), y(kBatch, true_b);
    for (int64_t i = 0; i < kBatch; ++i)
      for (int64_t j = 0; j < kFeatures; ++j) y[i] += true_w[j] * (x[i * kFeatures + j] = normal(gen));
    return std::pair{from_vector(x, {kBatch, kFeatures}), from_vector(y, {kBatch, 1})};
  };

  manual_seed(0);
  nn::Linear model(kFeatures, 1, /*init_std=*/0.02);
  optim::AdamW opt({{model.parameters(), /*weight_decay=*/0.0}}, {.lr = 0.1});

  double first_loss = 0, last_loss = 0;
  int64_t compiles_after_first_step = 0;
  for (int step = 1; step <= kSteps; ++step) {
    auto [x, y] = make_batch();
    Tensor loss = mean(pow(model.forward(x) - y, 2.0));
    loss.backward();
    opt.step();
    opt.zero_grad();
    lazy::mark_step();  // one graph per step: forward + backward + AdamW
    if (step == 1) compiles_after_first_step = runtime::counter_value("UncachedCompile");
    if (step == 1 || step % 20 == 0) {
      last_loss = loss.item();  // waits for this step's execution
      if (step == 1) first_loss = last_loss;
      std::printf("step %3d  loss %.6f\n", step, last_loss);
    }
  }

  std::vector<float> w = model.weight.to_vector<float>(), b = model.bias.to_vector<float>();
  std::printf("w = [%.3f, %.3f, %.3f, %.3f] (true [2, -3, 0.5, 1]), b = %.3f (true 0.7)\n", w[0], w[1], w[2], w[3], b[0]);
  std::printf("%s", runtime::short_metrics_report({"CompileTime", "ExecuteTime"}, {"CachedCompile", "UncachedCompile"}).c_str());

  bool ok = last_loss < 1e-3 * first_loss && std::abs(b[0] - true_b) < 0.05;
  for (int64_t j = 0; j < kFeatures; ++j) ok = ok && std::abs(w[j] - true_w[j]) < 0.05;
  const int64_t compiles = runtime::counter_value("UncachedCompile");
  if (compiles != compiles_after_first_step) {
    std::printf("FAIL: steps 2..%lld compiled %lld more graphs\n", static_cast<long long>(kSteps),
                static_cast<long long>(compiles - compiles_after_first_step));
    ok = false;
  }
  std::printf("%s\n", ok ? "OK: the loss fell, w and b recovered, the step compiled once" : "FAIL");
  return ok ? 0 : 1;
}
