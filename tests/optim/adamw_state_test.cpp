// AdamW::state_dict / load_state_dict (optim/adamw_state.h): exact values, the
// checks of a load, and bit-identical training after a resume.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "lazy/lazy_api.h"
#include "nn/layers.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "optim/lr_scheduler.h"
#include "runtime/metrics.h"
#include "train/safetensors.h"

namespace lazytrain {
namespace {

// fc2(gelu(fc1(x))): parameters fc1.weight [6, 4], fc1.bias [6], fc2.weight [3, 6], fc2.bias [3].
struct TinyNet : nn::Module {
  TinyNet() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 6, 0.5));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(6, 3, 0.5));
  }
  Tensor forward(const Tensor& x) const { return fc2->forward(gelu(fc1->forward(x))); }
  std::shared_ptr<nn::Linear> fc1, fc2;
};

// Hugging Face's grouping: weight decay on the weights, none on the biases.
optim::AdamW make_optimizer(const TinyNet& net, double lr) {
  return optim::AdamW({{{net.fc1->weight, net.fc2->weight}, 0.01}, {{net.fc1->bias, net.fc2->bias}, 0.0}}, {lr, 0.9, 0.999, 1e-8, 0.0});
}

std::vector<float> values(int64_t n, double phase) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(phase + 0.7 * static_cast<double>(i)));
  return v;
}

// Optimizer steps first .. first+count-1 of a fixed regression task (a new
// batch each step), with clipping and the schedule, one graph per step.
void train_steps(TinyNet& net, optim::AdamW& optimizer, optim::LambdaLR& scheduler, int first, int count) {
  for (int step = first; step < first + count; ++step) {
    Tensor x = from_vector(values(5 * 4, step), {5, 4});
    Tensor target = from_vector(values(5 * 3, 10.0 + step), {5, 3});
    Tensor diff = sub(net.forward(x), target);
    mean(mul(diff, diff)).backward();
    optim::clip_grad_norm_(net.parameters(), 1.0);
    optimizer.step();
    scheduler.step();
    optimizer.zero_grad();
    lazy::mark_step();
  }
}

std::vector<Literal> snapshot(const nn::Module& net) {
  std::vector<Literal> out;
  for (const auto& [name, p] : net.named_parameters()) out.push_back(p.to_literal());
  return out;
}

void restore(const nn::Module& net, const std::vector<Literal>& saved) {
  auto named = net.named_parameters();
  for (size_t i = 0; i < named.size(); ++i) named[i].second.set_data(from_buffer(saved[i].raw(), saved[i].shape(), saved[i].dtype()));
}

// What a Trainer does with a state dict: a safetensors file of the moments
// (TensorRecords built from the Literals) and the JSON part as its metadata.
optim::AdamWStateDict through_safetensors_file(const optim::AdamWStateDict& sd) {
  std::map<std::string, train::TensorRecord> records;
  for (const auto& [name, lit] : sd.tensors) {
    const auto* bytes = static_cast<const uint8_t*>(lit.raw());
    records[name] = {safetensors_name(lit.dtype()), lit.shape(), std::vector<uint8_t>(bytes, bytes + lit.nbytes())};
  }
  const std::string path =
      (std::filesystem::temp_directory_path() / ("lazytrain_optimizer_" + std::to_string(::getpid()) + ".safetensors")).string();
  train::save_safetensors(path, records, {{"format", "pt"}, {"adamw_state", sd.state.to_json().dump()}});
  std::map<std::string, std::string> metadata;
  std::map<std::string, train::TensorRecord> loaded = train::load_safetensors(path, &metadata);
  std::filesystem::remove(path);
  optim::AdamWStateDict out;
  out.state = optim::AdamWState::from_json(nlohmann::json::parse(metadata.at("adamw_state")), path);
  for (const auto& [name, r] : loaded) {
    Literal lit(r.shape, dtype_from_safetensors_name(r.dtype));
    std::memcpy(lit.mutable_raw(), r.data.data(), r.data.size());
    out.tensors[name] = lit;
  }
  return out;
}

TEST(AdamWStateDict, NamesShapesAndValuesAreTheOptimizersBitForBit) {
  TinyNet net;
  optim::AdamW optimizer = make_optimizer(net, 1e-2);
  optim::LambdaLR scheduler = optim::get_linear_schedule_with_warmup(optimizer, 1, 10);
  train_steps(net, optimizer, scheduler, 0, 2);
  const optim::AdamWStateDict sd = optimizer.state_dict(net.named_parameters());

  EXPECT_EQ(sd.state.step, 2);
  ASSERT_EQ(sd.state.param_groups.size(), 2u);
  EXPECT_EQ(sd.state.param_groups[0].params, (std::vector<std::string>{"fc1.weight", "fc2.weight"}));
  EXPECT_EQ(sd.state.param_groups[1].params, (std::vector<std::string>{"fc1.bias", "fc2.bias"}));
  EXPECT_EQ(sd.state.param_groups[0].weight_decay, 0.01);
  EXPECT_EQ(sd.state.param_groups[1].weight_decay, 0.0);
  for (const auto& g : sd.state.param_groups) {
    EXPECT_EQ(g.lr, optimizer.lr());
    EXPECT_EQ(g.lr, 1e-2 * (8.0 / 9.0));  // linear schedule after 2 steps: (10 - 2) / (10 - 1)
    EXPECT_EQ(g.beta1, 0.9);
    EXPECT_EQ(g.beta2, 0.999);
    EXPECT_EQ(g.eps, 1e-8);
  }
  std::vector<std::string> names;
  for (const auto& [name, lit] : sd.tensors) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.bias.exp_avg", "fc1.bias.exp_avg_sq", "fc1.weight.exp_avg", "fc1.weight.exp_avg_sq",
                                             "fc2.bias.exp_avg", "fc2.bias.exp_avg_sq", "fc2.weight.exp_avg", "fc2.weight.exp_avg_sq"}));
  const Literal& m = sd.tensors.at("fc2.weight.exp_avg");
  EXPECT_EQ(m.dtype(), DType::kFloat32);
  EXPECT_EQ(m.shape(), (Shape{3, 6}));
  EXPECT_EQ(m, optimizer.exp_avg(0, 1).to_literal());
  EXPECT_EQ(sd.tensors.at("fc1.bias.exp_avg_sq"), optimizer.exp_avg_sq(1, 0).to_literal());
  float nonzero = 0;
  for (int64_t i = 0; i < m.numel(); ++i) nonzero += std::abs(m.data<float>()[i]);
  EXPECT_GT(nonzero, 0.0f);

  // The JSON part reads back to the same struct, through text.
  nlohmann::json j = sd.state.to_json();
  EXPECT_EQ(j["param_groups"][0]["betas"], nlohmann::json({0.9, 0.999}));
  EXPECT_EQ(j["param_groups"][0]["steps"], nlohmann::json({2, 2}));  // each parameter's count (torch's state["step"])
  EXPECT_EQ(optim::AdamWState::from_json(nlohmann::json::parse(j.dump()), "text"), sd.state);
  // A checkpoint written before the counts were kept: every parameter at "step".
  for (auto& g : j["param_groups"]) g.erase("steps");
  EXPECT_EQ(optim::AdamWState::from_json(j, "old").param_groups[1].steps, (std::vector<int64_t>{2, 2}));

  // Loading into a fresh optimizer gives it exactly these moments.
  TinyNet other;
  optim::AdamW loaded = make_optimizer(other, 1.0);
  loaded.load_state_dict(sd, other.named_parameters());
  EXPECT_EQ(loaded.step_count(), 2);
  EXPECT_EQ(loaded.lr(), optimizer.lr());
  EXPECT_EQ(loaded.exp_avg(0, 1).to_literal(), m);
  EXPECT_EQ(loaded.exp_avg_sq(1, 0).to_literal(), sd.tensors.at("fc1.bias.exp_avg_sq"));
}

// A state_dict() right after step(), before mark_step(), computes the pending
// moments first: the values are the ones the step's graph then gives.
TEST(AdamWStateDict, PendingMomentsAreComputedBeforeTheyAreRead) {
  TinyNet net;
  optim::AdamW optimizer = make_optimizer(net, 1e-2);
  Tensor diff = sub(net.forward(from_vector(values(2 * 4, 0.5), {2, 4})), from_vector(values(2 * 3, 1.5), {2, 3}));
  mean(mul(diff, diff)).backward();
  optimizer.step();
  ASSERT_TRUE(optimizer.exp_avg(0, 0).impl()->has_pending_ir());
  const optim::AdamWStateDict sd = optimizer.state_dict(net.named_parameters());
  lazy::mark_step();
  EXPECT_EQ(sd.state.step, 1);
  EXPECT_EQ(sd.tensors.at("fc1.weight.exp_avg"), optimizer.exp_avg(0, 0).to_literal());
  EXPECT_EQ(sd.tensors.at("fc2.bias.exp_avg_sq"), optimizer.exp_avg_sq(1, 1).to_literal());
  float sum = 0;
  for (int64_t i = 0; i < 6 * 4; ++i) sum += std::abs(sd.tensors.at("fc1.weight.exp_avg").data<float>()[i]);
  EXPECT_GT(sum, 0.0f);
}

// Three steps in one run, or one step, a checkpoint (moments through a
// safetensors file, parameters and schedule through host values), a new model
// and optimizer, and two more steps: the same parameters, bit for bit, and the
// resumed steps reuse the compiled step graph.
TEST(AdamWStateDict, ResumedTrainingIsBitIdenticalToUninterrupted) {
  TinyNet uninterrupted;
  const std::vector<Literal> init = snapshot(uninterrupted);
  optim::AdamW opt_a = make_optimizer(uninterrupted, 1e-2);
  optim::LambdaLR sched_a = optim::get_cosine_schedule_with_warmup(opt_a, 0, 4);
  train_steps(uninterrupted, opt_a, sched_a, 0, 3);

  TinyNet first;
  restore(first, init);
  optim::AdamW opt_b = make_optimizer(first, 1e-2);
  optim::LambdaLR sched_b = optim::get_cosine_schedule_with_warmup(opt_b, 0, 4);
  train_steps(first, opt_b, sched_b, 0, 1);
  const std::vector<Literal> params_after_1 = snapshot(first);
  const optim::AdamWStateDict saved = through_safetensors_file(opt_b.state_dict(first.named_parameters()));
  const std::string scheduler_json = sched_b.state_dict().dump();

  TinyNet resumed;
  restore(resumed, params_after_1);
  optim::AdamW opt_c = make_optimizer(resumed, 1e-2);
  optim::LambdaLR sched_c = optim::get_cosine_schedule_with_warmup(opt_c, 0, 4);
  opt_c.load_state_dict(saved, resumed.named_parameters());
  sched_c.load_state_dict(nlohmann::json::parse(scheduler_json));
  EXPECT_EQ(opt_c.lr(), opt_b.lr());
  const int64_t compiles = runtime::counter_value("UncachedCompile");
  train_steps(resumed, opt_c, sched_c, 1, 2);
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), compiles) << "the loaded state entered the graph as constants";

  const std::vector<Literal> want = snapshot(uninterrupted), got = snapshot(resumed);
  auto names = resumed.named_parameters();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == want[i]) << names[i].first << " differs from the uninterrupted run";
  EXPECT_FALSE(got[0] == params_after_1[0]);  // the resumed steps did train
  const optim::AdamWStateDict end_a = opt_a.state_dict(uninterrupted.named_parameters());
  const optim::AdamWStateDict end_c = opt_c.state_dict(resumed.named_parameters());
  EXPECT_EQ(end_c.state, end_a.state);
  for (const auto& [name, lit] : end_a.tensors) EXPECT_TRUE(end_c.tensors.at(name) == lit) << name;
  EXPECT_EQ(sched_c.state_dict(), sched_a.state_dict());
}

// Each bad state is one Error naming the tensor or key, and a failed load
// changes nothing (step, rate, moments).
TEST(AdamWStateDict, LoadChecksEverythingBeforeAssigningAnything) {
  TinyNet net;
  optim::AdamW optimizer = make_optimizer(net, 1e-2);
  optim::LambdaLR scheduler = optim::get_constant_schedule(optimizer);
  train_steps(net, optimizer, scheduler, 0, 1);
  const optim::AdamWStateDict good = optimizer.state_dict(net.named_parameters());

  TinyNet target_net;
  optim::AdamW target = make_optimizer(target_net, 5e-3);
  const Literal zero_moment = target.exp_avg(0, 0).to_literal();
  auto expect_error = [&](const optim::AdamWStateDict& bad, const std::string& fragment, const optim::NamedTensors& names) {
    try {
      target.load_state_dict(bad, names);
      ADD_FAILURE() << "no error for a state with " << fragment;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
    EXPECT_EQ(target.step_count(), 0);
    EXPECT_EQ(target.lr(), 5e-3);
    EXPECT_EQ(target.exp_avg(0, 0).to_literal(), zero_moment);
  };
  const optim::NamedTensors names = target_net.named_parameters();

  optim::AdamWStateDict bad = good;
  bad.tensors.erase("fc2.bias.exp_avg_sq");
  expect_error(bad, "no tensor 'fc2.bias.exp_avg_sq'", names);

  bad = good;
  bad.tensors["fc2.weight.exp_avg"] = Literal({6, 3}, DType::kFloat32);
  expect_error(bad, "tensor 'fc2.weight.exp_avg' is float32[6, 3], expected float32[3, 6]", names);

  bad = good;
  bad.tensors["fc1.bias.exp_avg"] = Literal({6}, DType::kBFloat16);
  expect_error(bad, "tensor 'fc1.bias.exp_avg' is bfloat16[6], expected float32[6]", names);

  bad = good;
  bad.tensors["fc3.weight.exp_avg"] = Literal({1}, DType::kFloat32);
  expect_error(bad, "unexpected tensor 'fc3.weight.exp_avg'", names);

  bad = good;
  std::swap(bad.state.param_groups[0].params[0], bad.state.param_groups[0].params[1]);
  expect_error(bad, "param_groups[0] holds ['fc2.weight', 'fc1.weight']", names);

  bad = good;
  bad.state.param_groups.pop_back();
  expect_error(bad, "the state has 1 parameter groups, this optimizer 2", names);

  bad = good;
  bad.state.param_groups[1].eps = 1e-6;
  expect_error(bad, "param_groups[1]'s lr, betas or eps differ", names);

  bad = good;
  for (auto& g : bad.state.param_groups) g.beta2 = 1.0;
  expect_error(bad, "Invalid beta parameter at index 1", names);

  optim::NamedTensors without_fc2_bias(names.begin(), names.end() - 1);
  expect_error(good, "parameter 1 of group 1 (float32[3]) has no name", without_fc2_bias);

  optim::NamedTensors twice = names;
  twice.emplace_back("fc1.weight", Tensor());
  expect_error(good, "the name 'fc1.weight' is listed twice", twice);

  // A name for a tensor the optimizer does not hold is ignored; the good state loads.
  optim::NamedTensors extra = names;
  extra.emplace_back("frozen.weight", from_vector(std::vector<float>{1}, {1}));
  target.load_state_dict(good, extra);
  EXPECT_EQ(target.step_count(), 1);
  EXPECT_EQ(target.lr(), 1e-2);
}

TEST(AdamWStateDict, FromJsonNamesTheBadKey) {
  auto error_of = [](const std::string& text) {
    try {
      optim::AdamWState::from_json(nlohmann::json::parse(text), "optimizer.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of(R"({"param_groups": []})"), "[AdamWState] optimizer.json: the state has no key 'step'");
  EXPECT_EQ(error_of(R"({"step": -1, "param_groups": []})"), "[AdamWState] optimizer.json: 'step' is -1, expected an integer >= 0");
  EXPECT_EQ(error_of(R"({"step": 1, "param_groups": [{"params": ["a"], "lr": 1e-3, "betas": [0.9], "eps": 1e-8, "weight_decay": 0}]})"),
            "[AdamWState] optimizer.json: param_groups[0]'s 'betas' is [0.9], expected [beta1, beta2]");
  EXPECT_EQ(error_of(R"({"step": 1, "param_groups": [{"params": ["a"], "lr": "high", "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0}]})"),
            "[AdamWState] optimizer.json: param_groups[0]'s 'lr' is \"high\", expected a number");
  EXPECT_EQ(error_of(R"({"step": 1, "param_groups": [{"params": ["a"], "lr": 1e-3, "betas": [0.9, 0.99], "eps": 1e-8}]})"),
            "[AdamWState] optimizer.json: param_groups[0] has no key 'weight_decay'");
}

}  // namespace
}  // namespace lazytrain
