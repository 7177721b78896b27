// load_safetensors_into with Hugging Face checkpoints: tied decoder copies,
// extra buffers and heads, legacy names, half-precision files, and every kind
// of mismatch in one error that leaves the model untouched.
#include "train/model_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/half.h"
#include "models/bert.h"
#include "models/gpt2.h"
#include "models/roberta.h"
#include "train/safetensors.h"

namespace lazytrain::train {
namespace {

namespace fs = std::filesystem;
using Records = std::map<std::string, TensorRecord>;

models::BertConfig tiny(models::BertConfig c) {
  c.update_from_string("vocab_size=10,hidden_size=4,num_hidden_layers=1,num_attention_heads=2,intermediate_size=6,max_position_embeddings=8");
  return c;
}

// Every parameter's values, by name.
std::map<std::string, std::vector<float>> snapshot(const nn::Module& m) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& [name, t] : m.named_parameters()) out[name] = t.to_vector<float>();
  return out;
}

// The model's parameters as safetensors records (what save_pretrained writes).
Records records_of(const nn::Module& m) {
  Records out;
  for (const auto& [name, t] : m.named_parameters()) {
    const Literal l = t.to_literal();
    const auto* p = static_cast<const uint8_t*>(l.raw());
    out[name] = {safetensors_name(l.dtype()), l.shape(), std::vector<uint8_t>(p, p + l.nbytes())};
  }
  return out;
}

TensorRecord f32(const Shape& shape, float fill) {
  std::vector<float> v(static_cast<size_t>(numel(shape)), fill);
  TensorRecord r{"F32", shape, std::vector<uint8_t>(v.size() * 4)};
  std::memcpy(r.data.data(), v.data(), r.data.size());
  return r;
}

class LoadSafetensorsInto : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lazytrain_model_io_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    path_ = (dir_ / "model.safetensors").string();
    manual_seed(1);
    source_ = std::make_unique<models::BertForMaskedLM>(tiny(models::BertConfig()));
    manual_seed(2);
    target_ = std::make_unique<models::BertForMaskedLM>(tiny(models::BertConfig()));
    before_ = snapshot(*target_);
    ASSERT_NE(before_, snapshot(*source_));
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Loading `records` must fail with exactly `message` and change nothing.
  void expect_error(const Records& records, const std::string& message) {
    save_safetensors(path_, records, {{"format", "pt"}});
    try {
      load_safetensors_into(*target_, path_);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "[load_safetensors] '" + path_ + "': " + message);
    }
    EXPECT_EQ(snapshot(*target_), before_) << "a failed load changed the model";
  }

  fs::path dir_;
  std::string path_;
  std::unique_ptr<models::BertForMaskedLM> source_, target_;
  std::map<std::string, std::vector<float>> before_;
};

TEST(ModuleTiedParameters, ListsEveryAliasOfBertAndRoberta) {
  models::BertForMaskedLM bert(tiny(models::BertConfig()));
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(bert.tied_parameters(), (Pairs{{"cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight"},
                                           {"cls.predictions.decoder.bias", "cls.predictions.bias"}}));
  models::RobertaForMaskedLM roberta(tiny(models::roberta_config()));
  EXPECT_EQ(roberta.tied_parameters(), (Pairs{{"lm_head.decoder.weight", "roberta.embeddings.word_embeddings.weight"},
                                              {"lm_head.decoder.bias", "lm_head.bias"}}));
}

TEST_F(LoadSafetensorsInto, LoadsWhatSavePretrainedWrote) {
  save_pretrained(*source_, source_->config().to_json(), dir_.string());
  const Records written = load_safetensors(path_);
  EXPECT_EQ(written.size(), source_->named_parameters().size());
  EXPECT_EQ(written.count("cls.predictions.decoder.weight"), 0u);  // tied: stored once, as transformers does
  const LoadReport report = load_safetensors_into(*target_, path_);
  EXPECT_EQ(snapshot(*target_), snapshot(*source_));
  EXPECT_TRUE(report.tied_copies.empty() && report.converted.empty() && report.unused_weights.empty());
  EXPECT_EQ(report.warning(path_), "");
}

// A BertForPreTraining-style file: tied copies stored, position_ids buffer,
// pooler and next-sentence head.
TEST_F(LoadSafetensorsInto, AcceptsHuggingFaceExtrasAndWarnsAboutUnusedHeads) {
  Records r = records_of(*source_);
  r["cls.predictions.decoder.weight"] = r.at("bert.embeddings.word_embeddings.weight");
  r["cls.predictions.decoder.bias"] = r.at("cls.predictions.bias");
  std::vector<uint8_t> positions(8 * 8);
  for (int i = 0; i < 8; ++i) positions[8 * i] = static_cast<uint8_t>(i);
  r["bert.embeddings.position_ids"] = {"I64", {1, 8}, positions};
  r["bert.pooler.dense.weight"] = f32({4, 4}, 0.5f);
  r["bert.pooler.dense.bias"] = f32({4}, 0.5f);
  r["cls.seq_relationship.weight"] = f32({2, 4}, 0.5f);
  r["cls.seq_relationship.bias"] = f32({2}, 0.5f);
  save_safetensors(path_, r, {{"format", "pt"}});
  const LoadReport report = load_safetensors_into(*target_, path_);
  EXPECT_EQ(snapshot(*target_), snapshot(*source_));
  EXPECT_EQ(report.tied_copies, (std::vector<std::string>{"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}));
  EXPECT_EQ(report.ignored_buffers, (std::vector<std::string>{"bert.embeddings.position_ids"}));
  EXPECT_EQ(report.unused_weights, (std::vector<std::string>{"bert.pooler.dense.bias", "bert.pooler.dense.weight",
                                                             "cls.seq_relationship.bias", "cls.seq_relationship.weight"}));
  EXPECT_EQ(report.warning(path_), "warning: some weights of '" + path_ +
                                       "' were not used (the model has no such module; expected when it comes from BertForPreTraining or "
                                       "a base model): bert.pooler.dense.bias, bert.pooler.dense.weight, cls.seq_relationship.bias, "
                                       "cls.seq_relationship.weight");
}

TEST_F(LoadSafetensorsInto, TiedWeightStoredOnlyUnderTheDecoderName) {
  Records r = records_of(*source_);
  r["cls.predictions.decoder.weight"] = r.at("bert.embeddings.word_embeddings.weight");
  r.erase("bert.embeddings.word_embeddings.weight");
  save_safetensors(path_, r);
  load_safetensors_into(*target_, path_);
  EXPECT_EQ(snapshot(*target_), snapshot(*source_));
  EXPECT_TRUE(target_->predictions->decoder_weight.is_same(target_->bert->embeddings->word_embeddings->weight));  // still tied
}

TEST_F(LoadSafetensorsInto, TiedCopyThatDiffersIsAnErrorNamingBoth) {
  Records r = records_of(*source_);
  r["cls.predictions.decoder.weight"] = r.at("bert.embeddings.word_embeddings.weight");
  r["cls.predictions.decoder.weight"].data[5] ^= 1;
  expect_error(r, "tied copy differs: 'cls.predictions.decoder.weight' is not equal to 'bert.embeddings.word_embeddings.weight'");
}

TEST_F(LoadSafetensorsInto, EveryProblemIsNamedInOneError) {
  Records r = records_of(*source_);
  r.erase("bert.embeddings.LayerNorm.weight");
  r.erase("cls.predictions.transform.dense.bias");
  r["bert.encoder.layer.0.extra"] = f32({1}, 1);
  r["bert.encoder.layer.0.intermediate.dense.weight"] = f32({4, 6}, 1);
  r["bert.embeddings.token_type_embeddings.weight"].dtype = "I32";
  expect_error(r, "missing: bert.embeddings.LayerNorm.weight, cls.predictions.transform.dense.bias; unexpected: bert.encoder.layer.0.extra; "
                  "shape mismatch: bert.encoder.layer.0.intermediate.dense.weight has [4, 6], the model expects [6, 4]; "
                  "dtype mismatch: bert.embeddings.token_type_embeddings.weight is I32, the model expects F32");
  expect_error({}, "none of the model's 26 parameters is in the file (is it a checkpoint of this model type?); missing: " + [&] {
    std::string all;
    int shown = 0;
    for (const auto& [name, t] : target_->named_parameters())
      if (shown++ < 20) all += (all.empty() ? "" : ", ") + name;
    return all + ", ... and " + std::to_string(target_->named_parameters().size() - 20) + " more";
  }());
}

TEST_F(LoadSafetensorsInto, CorruptFileIsAnErrorNamingItAndChangesNothing) {
  save_pretrained(*source_, source_->config().to_json(), dir_.string());
  fs::resize_file(path_, fs::file_size(path_) - 3);
  try {
    load_safetensors_into(*target_, path_);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[safetensors] '" + path_ + "': file is truncated", 0), 0u) << e.what();
  }
  EXPECT_EQ(snapshot(*target_), before_);
}

// F16, BF16 and F64 files load into f32 parameters (values chosen exact in all).
TEST_F(LoadSafetensorsInto, HalfPrecisionAndDoubleCheckpointsAreConverted) {
  std::map<std::string, std::vector<float>> expected;
  for (const std::string dtype : {"F16", "BF16", "F64"}) {
    Records r;
    for (const auto& [name, t] : target_->named_parameters()) {
      const size_t n = static_cast<size_t>(numel(t.shape()));
      TensorRecord rec{dtype, t.shape(), std::vector<uint8_t>(n * static_cast<size_t>(safetensors_dtype_size(dtype)))};
      std::vector<float>& values = expected[name];
      values.resize(n);
      for (size_t i = 0; i < n; ++i) {
        values[i] = static_cast<float>(static_cast<int>(i % 17) - 8) * 0.125f;
        if (dtype == "F16") {
          const Half h = static_cast<Half>(values[i]);
          std::memcpy(rec.data.data() + 2 * i, &h, 2);
        } else if (dtype == "BF16") {
          const BFloat16 b(values[i]);
          std::memcpy(rec.data.data() + 2 * i, &b.bits, 2);
        } else {
          const double d = values[i];
          std::memcpy(rec.data.data() + 8 * i, &d, 8);
        }
      }
      r[name] = rec;
    }
    save_safetensors(path_, r);
    const LoadReport report = load_safetensors_into(*target_, path_);
    EXPECT_EQ(snapshot(*target_), expected) << dtype;
    EXPECT_EQ(report.converted.size(), target_->named_parameters().size()) << dtype;
    for (const auto& [name, t] : target_->named_parameters()) EXPECT_EQ(t.dtype(), DType::kFloat32);
  }
}

// pytorch-pretrained-bert files name LayerNorm's parameters gamma and beta.
TEST_F(LoadSafetensorsInto, LegacyGammaBetaNamesAreRenamed) {
  Records r;
  for (auto& [name, rec] : records_of(*source_)) {
    std::string n = name;
    if (n.ends_with("LayerNorm.weight")) n.replace(n.size() - 6, 6, "gamma");
    if (n.ends_with("LayerNorm.bias")) n.replace(n.size() - 4, 4, "beta");
    r[n] = rec;
  }
  save_safetensors(path_, r);
  const LoadReport report = load_safetensors_into(*target_, path_);
  EXPECT_EQ(snapshot(*target_), snapshot(*source_));
  EXPECT_EQ(report.renamed.size(), 8u);  // embeddings, 2 per layer, prediction transform: 4 LayerNorms x 2
}

TEST(LoadSafetensorsIntoRoberta, AcceptsStoredDecoderAndPooler) {
  const fs::path dir = fs::temp_directory_path() / ("lazytrain_model_io_roberta_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "model.safetensors").string();
  manual_seed(3);
  models::RobertaForMaskedLM source(tiny(models::roberta_config()));
  manual_seed(4);
  models::RobertaForMaskedLM target(tiny(models::roberta_config()));
  Records r = records_of(source);
  r["lm_head.decoder.weight"] = r.at("roberta.embeddings.word_embeddings.weight");
  r["lm_head.decoder.bias"] = r.at("lm_head.bias");
  r["roberta.embeddings.position_ids"] = {"I64", {1, 8}, std::vector<uint8_t>(64)};
  r["roberta.pooler.dense.weight"] = f32({4, 4}, 1);
  save_safetensors(path, r, {{"format", "pt"}});
  const LoadReport report = load_safetensors_into(target, path);
  EXPECT_EQ(snapshot(target), snapshot(source));
  EXPECT_EQ(report.unused_weights, (std::vector<std::string>{"roberta.pooler.dense.weight"}));
  EXPECT_EQ(report.tied_copies, (std::vector<std::string>{"lm_head.decoder.weight", "lm_head.decoder.bias"}));

  r["lm_head.decoder.bias"] = f32({10}, 3);
  save_safetensors(path, r);
  const auto before = snapshot(target);
  EXPECT_THROW(load_safetensors_into(target, path), Error);
  EXPECT_EQ(snapshot(target), before);
  fs::remove_all(dir);
}

// Hugging Face's gpt2 checkpoints on the Hub are GPT2Model's: no "transformer."
// prefix, no lm_head, and (before transformers 4.31) the attn.bias causal-mask
// and attn.masked_bias buffers. from_pretrained of GPT2LMHeadModel loads them.
TEST(LoadSafetensorsIntoGpt2, LoadsHubBaseModelNamesWithCausalMaskBuffers) {
  const fs::path dir = fs::temp_directory_path() / ("lazytrain_model_io_gpt2_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "model.safetensors").string();
  models::GPT2Config config;
  config.update_from_string("vocab_size=12,n_positions=8,n_embd=4,n_layer=2,n_head=2");
  manual_seed(5);
  models::GPT2LMHeadModel source(config);
  manual_seed(6);
  models::GPT2LMHeadModel target(config);
  Records hub;
  for (auto& [name, rec] : records_of(source)) {
    ASSERT_TRUE(name.starts_with("transformer.")) << name;
    hub[name.substr(std::string("transformer.").size())] = rec;
  }
  for (int layer = 0; layer < 2; ++layer) {
    hub["h." + std::to_string(layer) + ".attn.bias"] = f32({1, 1, 8, 8}, 1);
    hub["h." + std::to_string(layer) + ".attn.masked_bias"] = f32({}, -1e4f);
  }
  save_safetensors(path, hub, {{"format", "pt"}});
  const LoadReport report = load_safetensors_into(target, path);
  EXPECT_EQ(snapshot(target), snapshot(source));
  EXPECT_EQ(report.added_prefix, "transformer");
  EXPECT_EQ(report.ignored_buffers, (std::vector<std::string>{"transformer.h.0.attn.bias", "transformer.h.0.attn.masked_bias",
                                                              "transformer.h.1.attn.bias", "transformer.h.1.attn.masked_bias"}));

  // A file that stores the prefixed names is read as it is; a foreign name is still unexpected.
  hub = records_of(source);
  hub["wte.weight"] = f32({12, 4}, 0);
  save_safetensors(path, hub);
  try {
    load_safetensors_into(target, path);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[load_safetensors] '" + path + "': unexpected: wte.weight");
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lazytrain::train
