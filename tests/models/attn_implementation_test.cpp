// config.attn_implementation: "sdpa" (one fused scaled_dot_product_attention)
// against "eager" (matmul, mask, softmax, matmul) on the same parameters, for
// GPT-2 (causal, with and without padding) and BERT (padding): logits, loss and
// every gradient agree to f32 rounding with dropout off, over sequences that
// cross the kernel's blocks (32 query rows, 64 keys). The eager path itself is
// checked against PyTorch by the golden tests (gpt2_golden_test.cpp, ...).
#include <gtest/gtest.h>

#include "../support/golden.h"
#include "core/error.h"
#include "models/bert.h"
#include "models/gpt2.h"

namespace lazytrain {
namespace {

using testing::expect_close;

template <typename Model>
void copy_parameters(const Model& from, Model& to) {
  const auto source = from.named_parameters();
  auto target = to.named_parameters();
  ASSERT_EQ(source.size(), target.size());
  for (size_t i = 0; i < source.size(); ++i) {
    ASSERT_EQ(source[i].first, target[i].first);
    target[i].second.set_data(source[i].second.detach());
  }
}

// loss and logits of `model` on the batch, then its gradients, as f32 vectors.
struct Result {
  std::vector<float> logits, loss;
  std::vector<std::pair<std::string, std::vector<float>>> grads;
};

template <typename Model, typename Forward>
Result run(Model& model, Forward forward) {
  auto out = forward(model);
  out.loss.backward();
  Result r{out.logits.template to_vector<float>(), out.loss.template to_vector<float>(), {}};
  for (const auto& [name, p] : model.named_parameters()) r.grads.emplace_back(name, p.grad().template to_vector<float>());
  return r;
}

void expect_same(const Result& sdpa, const Result& eager) {
  // 1e-5 relative, with an absolute floor of 1e-5 of each tensor's largest value (sums of many
  // terms), and of 1e-10 for the key biases' gradients, which are 0 but for rounding (softmax
  // ignores a shift of a whole row).
  auto check = [](const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    float largest = 0;
    for (float x : b) largest = std::max(largest, std::fabs(x));
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5 * std::fabs(b[i]) + 1e-5 * largest + 1e-10) << what << " [" << i << "]";
  };
  check(sdpa.loss, eager.loss, "loss");
  check(sdpa.logits, eager.logits, "logits");
  ASSERT_EQ(sdpa.grads.size(), eager.grads.size());
  for (size_t i = 0; i < sdpa.grads.size(); ++i) check(sdpa.grads[i].second, eager.grads[i].second, "grad." + sdpa.grads[i].first);
}

models::GPT2Config tiny_gpt2() {
  models::GPT2Config c;
  c.vocab_size = 50, c.n_positions = 160, c.n_embd = 32, c.n_layer = 2, c.n_head = 4;
  c.resid_pdrop = c.embd_pdrop = c.attn_pdrop = 0.0;
  return c;
}

// Row 0: no padding; row 1: its last 37 positions padding (labels -100).
std::tuple<Tensor, Tensor, Tensor> batch(int64_t vocab, int64_t s) {
  std::vector<int64_t> ids(static_cast<size_t>(2 * s)), mask(ids.size(), 1), labels(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = labels[i] = static_cast<int64_t>((i * 7919 + 13) % static_cast<size_t>(vocab));
  for (int64_t j = s - 37; j < s; ++j) mask[static_cast<size_t>(s + j)] = 0, labels[static_cast<size_t>(s + j)] = -100;
  return {from_vector(ids, {2, s}), from_vector(mask, {2, s}), from_vector(labels, {2, s})};
}

TEST(AttnImplementation, GPT2SdpaMatchesEagerCausalAndPadded) {
  const auto [ids, mask, labels] = batch(tiny_gpt2().vocab_size, 150);
  // With the padding mask (sdpa: a bool causal-and-padding mask), and without (is_causal).
  for (const bool padded : {true, false}) {
    manual_seed(11);
    models::GPT2Config c = tiny_gpt2();
    c.attn_implementation = "eager";
    models::GPT2LMHeadModel eager(c);
    c.attn_implementation = "sdpa";
    models::GPT2LMHeadModel sdpa(c);
    copy_parameters(eager, sdpa);
    auto forward = [&](const models::GPT2LMHeadModel& m) { return padded ? m.forward(ids, mask, labels) : m.forward(ids, Tensor(), ids); };
    SCOPED_TRACE(padded ? "padded" : "causal only");
    expect_same(run(sdpa, forward), run(eager, forward));
  }
}

TEST(AttnImplementation, BertSdpaMatchesEagerPadded) {
  manual_seed(12);
  models::BertConfig c;
  c.vocab_size = 50, c.hidden_size = 32, c.num_hidden_layers = 2, c.num_attention_heads = 4, c.intermediate_size = 64;
  c.max_position_embeddings = 160, c.hidden_dropout_prob = c.attention_probs_dropout_prob = 0.0;
  c.attn_implementation = "eager";
  models::BertForMaskedLM eager(c);
  c.attn_implementation = "sdpa";
  models::BertForMaskedLM sdpa(c);
  copy_parameters(eager, sdpa);
  const auto [ids, mask, labels] = batch(c.vocab_size, 150);
  auto forward = [&](const models::BertForMaskedLM& m) { return m.forward(ids, mask, labels); };
  expect_same(run(sdpa, forward), run(eager, forward));
}

// With attn_pdrop > 0 the sdpa path drops attention weights in training (its
// own stream, drawn in the kernel) and none in eval, where it equals eager.
TEST(AttnImplementation, GPT2SdpaDropsOnlyInTraining) {
  manual_seed(13);
  models::GPT2Config c = tiny_gpt2();
  c.attn_pdrop = 0.5;
  models::GPT2LMHeadModel sdpa(c);
  c.attn_implementation = "eager";
  models::GPT2LMHeadModel eager(c);
  copy_parameters(sdpa, eager);
  const auto [ids, mask, labels] = batch(c.vocab_size, 40);
  sdpa.eval();
  eager.eval();
  const std::vector<float> sdpa_eval = sdpa.forward(ids, mask).logits.to_vector<float>();
  expect_close(eager.forward(ids, mask).logits, sdpa_eval, 1e-5, 1e-6, "eval logits");
  sdpa.train();
  const std::vector<float> a = sdpa.forward(ids, mask).logits.to_vector<float>(), b = sdpa.forward(ids, mask).logits.to_vector<float>();
  EXPECT_NE(a, sdpa_eval);
  EXPECT_NE(a, b);  // a new seed each call
}

TEST(AttnImplementation, ConfigReadsButNeverWritesIt) {
  EXPECT_EQ(models::GPT2Config().attn_implementation, "sdpa");
  EXPECT_EQ(models::BertConfig().attn_implementation, "eager");
  const models::GPT2Config g = models::GPT2Config::from_json({{"attn_implementation", "eager"}}, "test");
  EXPECT_EQ(g.attn_implementation, "eager");
  EXPECT_FALSE(g.to_json().contains("attn_implementation"));  // transformers never saves it
  const models::BertConfig bert = models::BertConfig::from_json({{"attn_implementation", "sdpa"}}, "test");
  EXPECT_EQ(bert.attn_implementation, "sdpa");
  EXPECT_FALSE(bert.to_json().contains("attn_implementation"));
  models::GPT2Config bad = models::GPT2Config::from_json({{"attn_implementation", "flash_attention_2"}}, "'c.json'");
  try {
    bad.validate("'c.json'");
    FAIL() << "flash_attention_2 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'c.json': attn_implementation 'flash_attention_2' is not supported"), std::string::npos) << e.what();
  }
  EXPECT_THROW(models::BertConfig::from_json({{"attn_implementation", 3}}, "test"), Error);
}

}  // namespace
}  // namespace lazytrain
