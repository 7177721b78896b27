// save_metrics as Hugging Face's Trainer.save_metrics(split, metrics, combined=True).
#include "train/results_files.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <unistd.h>

#include "core/error.h"
#include "train/json_file.h"

namespace lazytrain::train {
namespace {

namespace fs = std::filesystem;
constexpr double kInf = std::numeric_limits<double>::infinity();

class SaveMetrics : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("lazytrain_results_" + std::to_string(::getpid()))).string();
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string text(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::string dir_;
};

TEST_F(SaveMetrics, AllResultsMergesSplitsAndNewValuesReplaceOld) {
  save_metrics(dir_, "train", {{"train_loss", 6.5}, {"epoch", 1.0}});
  save_metrics(dir_, "eval", {{"eval_loss", 5.25}, {"perplexity", std::exp(5.25)}, {"epoch", 2.0}});
  EXPECT_EQ(text("train_results.json"), "{\n  \"epoch\": 1.0,\n  \"train_loss\": 6.5\n}\n");
  const nlohmann::json all = read_json_file(dir_ + "/all_results.json");
  EXPECT_EQ(all, (nlohmann::json{{"train_loss", 6.5}, {"eval_loss", 5.25}, {"perplexity", std::exp(5.25)}, {"epoch", 2.0}}));
  EXPECT_EQ(read_json_file(dir_ + "/eval_results.json").size(), 3u);
  // An evaluation again: its values replace the old ones, train_loss stays.
  save_metrics(dir_, "eval", {{"eval_loss", 4.0}, {"perplexity", std::exp(4.0)}, {"epoch", 2.0}});
  EXPECT_EQ(read_json_file(dir_ + "/all_results.json"),
            (nlohmann::json{{"train_loss", 6.5}, {"eval_loss", 4.0}, {"perplexity", std::exp(4.0)}, {"epoch", 2.0}}));
  // combined=false leaves all_results.json alone.
  save_metrics(dir_, "test", {{"test_loss", 1.0}}, /*combined=*/false);
  EXPECT_FALSE(read_json_file(dir_ + "/all_results.json").contains("test_loss"));
}

TEST_F(SaveMetrics, NonFiniteMetricsAreInfinityNotNull) {
  save_metrics(dir_, "eval", {{"eval_loss", 812.5}, {"perplexity", kInf}});
  EXPECT_EQ(text("eval_results.json"), "{\n  \"eval_loss\": 812.5,\n  \"perplexity\": Infinity\n}\n");
  EXPECT_EQ(read_json_file(dir_ + "/all_results.json").at("perplexity").get<double>(), kInf);
  // ... and merging reads them back.
  save_metrics(dir_, "train", {{"train_loss", std::nan("")}});
  const nlohmann::json all = read_json_file(dir_ + "/all_results.json");
  EXPECT_EQ(all.at("perplexity").get<double>(), kInf);
  EXPECT_TRUE(std::isnan(all.at("train_loss").get<double>()));
  EXPECT_EQ(text("all_results.json"), "{\n  \"eval_loss\": 812.5,\n  \"perplexity\": Infinity,\n  \"train_loss\": NaN\n}\n");
}

TEST_F(SaveMetrics, AnAllResultsThatIsNotAnObjectIsNamed) {
  std::ofstream(dir_ + "/all_results.json") << "[1, 2]\n";
  try {
    save_metrics(dir_, "eval", {{"eval_loss", 1.0}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[save_metrics] '" + dir_ +
                                         "/all_results.json' holds array, expected a JSON object of metrics to merge the eval metrics into");
  }
}

}  // namespace
}  // namespace lazytrain::train
