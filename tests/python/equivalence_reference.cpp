// The C++ half of tests/python/test_equivalence.py: a 3-layer MLP and a small
// causal transformer built through the C++ API, trained 20 steps (forward,
// backward, clip, AdamW, linear schedule, mark_step). Writes each step's loss
// and the final parameters to a safetensors file, which the Python test
// compares bit for bit with the same models written in Python.
//
// Usage: python_equivalence_reference mlp|transformer OUT.safetensors
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "lazy/lazy_api.h"
#include "nn/layers.h"
#include "optim/clip_grad.h"
#include "optim/lr_scheduler.h"
#include "tensor/tensor.h"
#include "train/safetensors.h"

using namespace lazytrain;

namespace {

constexpr int kSteps = 20;
constexpr uint64_t kSeed = 1234;

struct Mlp : nn::Module {
  Mlp() {
    l1 = register_module("l1", std::make_shared<nn::Linear>(16, 32, 0.02));
    l2 = register_module("l2", std::make_shared<nn::Linear>(32, 32, 0.02));
    l3 = register_module("l3", std::make_shared<nn::Linear>(32, 5, 0.02));
  }
  Tensor forward(const Tensor& x) const { return l3->forward(relu(l2->forward(relu(l1->forward(x))))); }
  std::shared_ptr<nn::Linear> l1, l2, l3;
};

struct Block : nn::Module {
  static constexpr int64_t kVocab = 50, kDim = 32, kHeads = 2, kSeq = 8, kHidden = 64;
  Block() {
    wte = register_module("wte", std::make_shared<nn::Embedding>(kVocab, kDim, 0.02));
    wpe = register_module("wpe", std::make_shared<nn::Embedding>(kSeq, kDim, 0.02));
    ln1 = register_module("ln1", std::make_shared<nn::LayerNorm>(kDim, 1e-5));
    q = register_module("q", std::make_shared<nn::Linear>(kDim, kDim, 0.02));
    k = register_module("k", std::make_shared<nn::Linear>(kDim, kDim, 0.02));
    v = register_module("v", std::make_shared<nn::Linear>(kDim, kDim, 0.02));
    o = register_module("o", std::make_shared<nn::Linear>(kDim, kDim, 0.02));
    ln2 = register_module("ln2", std::make_shared<nn::LayerNorm>(kDim, 1e-5));
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(kDim, kHidden, 0.02));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(kHidden, kDim, 0.02));
    lnf = register_module("lnf", std::make_shared<nn::LayerNorm>(kDim, 1e-5));
    head = register_module("head", std::make_shared<nn::Linear>(kDim, kVocab, 0.02, /*bias=*/false));
  }
  Tensor forward(const Tensor& tokens, const Tensor& labels) const {
    const int64_t b = tokens.size(0), t = tokens.size(1), d = kDim / kHeads;
    Tensor h = wte->forward(tokens) + wpe->forward(arange(t));
    Tensor a = ln1->forward(h);
    auto heads = [&](const nn::Linear& proj) { return proj.forward(a).view({b, t, kHeads, d}).transpose(1, 2); };
    Tensor qh = heads(*q), kh = heads(*k), vh = heads(*v);
    Tensor scores = matmul(qh, kh.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(d)));
    Tensor mask = gt(arange(t).unsqueeze(0), arange(t).unsqueeze(1));
    Tensor probs = softmax(masked_fill(scores, mask, -INFINITY), -1);
    Tensor ctx = matmul(probs, vh).transpose(1, 2).reshape({b, t, kDim});
    h = h + o->forward(ctx);
    h = h + fc2->forward(gelu(fc1->forward(ln2->forward(h))));
    Tensor logits = head->forward(lnf->forward(h));
    return cross_entropy(logits.view({b * t, kVocab}), labels.view({b * t}));
  }
  std::shared_ptr<nn::Embedding> wte, wpe;
  std::shared_ptr<nn::LayerNorm> ln1, ln2, lnf;
  std::shared_ptr<nn::Linear> q, k, v, o, fc1, fc2, head;
};

// The same deterministic data the Python test makes (no generator involved).
Tensor mlp_inputs() {
  std::vector<float> x(8 * 16);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 16; ++j) x[i * 16 + j] = static_cast<float>(std::sin(0.37 * i + 0.11 * j));
  return from_vector(x, {8, 16});
}
Tensor mlp_targets() {
  std::vector<int64_t> y(8);
  for (int i = 0; i < 8; ++i) y[i] = (i * 7) % 5;
  return from_vector(y, {8});
}
Tensor tokens(int step, int shift) {
  std::vector<int64_t> v(4 * 8);
  for (int b = 0; b < 4; ++b)
    for (int t = 0; t < 8; ++t) v[b * 8 + t] = (b * 13 + (t + shift) * 7 + step * 3) % 50;
  return from_vector(v, {4, 8});
}

template <typename Model, typename Loss>
void train_model(Model& model, const Loss& loss_of_step, const std::string& out) {
  optim::AdamW optimizer({{model.parameters(), 0.01}}, optim::AdamWOptions{.lr = 1e-2});
  optim::LambdaLR scheduler = optim::get_linear_schedule_with_warmup(optimizer, 2, kSteps);
  std::vector<float> losses;
  for (int step = 0; step < kSteps; ++step) {
    optimizer.zero_grad();
    Tensor loss = loss_of_step(step);
    loss.backward();
    optim::clip_grad_norm_(model.parameters(), 1.0);
    optimizer.step();
    scheduler.step();
    lazy::mark_step();
    losses.push_back(static_cast<float>(loss.item()));
  }
  std::map<std::string, train::TensorRecord> records;
  records["losses"] = train::to_tensor_record(from_vector(losses, {kSteps}).to_literal());
  for (const auto& [name, p] : model.named_parameters()) records[name] = train::to_tensor_record(p.to_literal());
  train::save_safetensors(out, records);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s mlp|transformer OUT.safetensors\n", argv[0]);
    return 2;
  }
  const std::string which = argv[1];
  manual_seed(kSeed);
  if (which == "mlp") {
    Mlp model;
    train_model(model, [&](int) { return cross_entropy(model.forward(mlp_inputs()), mlp_targets()); }, argv[2]);
  } else if (which == "transformer") {
    Block model;
    train_model(model, [&](int step) { return model.forward(tokens(step, 0), tokens(step, 1)); }, argv[2]);
  } else {
    std::fprintf(stderr, "unknown model '%s'\n", which.c_str());
    return 2;
  }
  return 0;
}
