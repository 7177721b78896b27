// resave_pretrained IN_DIR OUT_DIR: loads a Hugging Face model directory
// (config.json + model.safetensors) into lazytrain's model of its model_type and
// writes it back with save_pretrained. Used by hf_checkpoint_format_test.sh to
// hold lazytrain's checkpoints to the files tools/make_golden_hf_checkpoint.py
// writes the way transformers does. A .cc file: not part of lazytrain_tests.
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "models/auto_model.h"
#include "train/model_io.h"

int main(int argc, char** argv) {
  using namespace lazytrain;
  if (argc != 3) {
    std::fprintf(stderr, "usage: resave_pretrained IN_DIR OUT_DIR\n");
    return 2;
  }
  const std::string in = argv[1], out = argv[2];
  try {
    models::BertConfig config = models::BertConfig::from_json_file(in + "/config.json");
    config.validate("'" + in + "/config.json'");
    auto model = models::AutoModelForMaskedLM::from_config(config);
    const train::LoadReport report = train::load_safetensors_into(*model, in + "/model.safetensors");
    const std::string warning = report.warning(in + "/model.safetensors");
    if (!warning.empty()) std::fprintf(stderr, "%s\n", warning.c_str());
    std::filesystem::create_directories(out);
    train::save_pretrained(*model, config.to_json(), out);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
