// Checkpoint directories: a checkpoint counts only with its completion marker
// and whole files; a failed save leaves nothing that looks like one; rotation
// removes the oldest and never the best.
#include "train/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/error.h"

namespace lazytrain::train {
namespace {

namespace fs = std::filesystem;

struct CheckpointTest : ::testing::Test {
  void SetUp() override {
    dir = (fs::temp_directory_path() / ("lazytrain_checkpoint_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string save(int64_t step, const std::string& contents = "weights") {
    return write_checkpoint(dir, step, [&](const std::string& d) {
      write_file_atomically(d + "/model.safetensors", contents);
      write_file_atomically(d + "/trainer_state.json", "{}");
    });
  }
  std::vector<int64_t> steps() const {
    std::vector<int64_t> out;
    for (const CheckpointDir& c : list_checkpoints(dir)) out.push_back(c.step);
    return out;
  }
  std::string dir;
};

TEST_F(CheckpointTest, ACompleteCheckpointHasItsMarkerAndWholeFiles) {
  const std::string path = save(7);
  EXPECT_EQ(path, dir + "/checkpoint-7");
  EXPECT_TRUE(fs::is_regular_file(path + "/" + kCheckpointMarker));
  EXPECT_EQ(checkpoint_problem(path), "");
  EXPECT_EQ(get_last_checkpoint(dir), path);
  EXPECT_FALSE(fs::exists(dir + "/tmp-checkpoint-7"));
}

TEST_F(CheckpointTest, ADamagedOrUnmarkedCheckpointDoesNotCount) {
  const std::string older = save(1);
  const std::string newer = save(2, "0123456789");
  // A truncated file under a marker: not whole, so the older one is the last.
  fs::resize_file(newer + "/model.safetensors", 4);
  EXPECT_NE(checkpoint_problem(newer).find("model.safetensors has 4 bytes, the marker says 10"), std::string::npos) << checkpoint_problem(newer);
  EXPECT_EQ(get_last_checkpoint(dir), older);
  // Same size, other bytes.
  std::ofstream(newer + "/model.safetensors", std::ios::binary) << "abcdefghij";
  EXPECT_NE(checkpoint_problem(newer).find("CRC32C mismatch"), std::string::npos);
  // No marker: a save that did not finish.
  fs::create_directories(dir + "/checkpoint-3");
  std::ofstream(dir + "/checkpoint-3/model.safetensors") << "x";
  EXPECT_NE(checkpoint_problem(dir + "/checkpoint-3").find("no checkpoint_complete.json"), std::string::npos);
  EXPECT_EQ(steps(), (std::vector<int64_t>{1, 2}));
  try {
    resolve_checkpoint(dir + "/checkpoint-3", dir);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--resume_from_checkpoint '" + dir + "/checkpoint-3': not a complete checkpoint: no checkpoint_complete.json"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(resolve_checkpoint(dir + "/nowhere", dir), Error);
  EXPECT_EQ(resolve_checkpoint("latest", dir), older);
}

TEST_F(CheckpointTest, AFailedSaveLeavesNoCheckpointAndTheOthersUntouched) {
  const std::string kept = save(1);
  EXPECT_THROW(write_checkpoint(dir, 2, [&](const std::string& d) {
                 write_file_atomically(d + "/model.safetensors", "partial");
                 throw Error("disk full");
               }),
               Error);
  EXPECT_FALSE(fs::exists(dir + "/checkpoint-2"));
  EXPECT_FALSE(fs::exists(dir + "/tmp-checkpoint-2"));
  EXPECT_EQ(checkpoint_problem(kept), "");
  // A staging directory left by a killed process is cleared by the next save.
  fs::create_directories(dir + "/tmp-checkpoint-5");
  save(6);
  EXPECT_FALSE(fs::exists(dir + "/tmp-checkpoint-5"));
  EXPECT_EQ(steps(), (std::vector<int64_t>{1, 6}));
}

TEST_F(CheckpointTest, RotationRemovesTheOldestButNeverTheBest) {
  for (int64_t s : {10, 20, 30, 40}) save(s);
  EXPECT_EQ(rotate_checkpoints(dir, 3), (std::vector<std::string>{dir + "/checkpoint-10"}));
  save(50);
  EXPECT_EQ(rotate_checkpoints(dir, 2, dir + "/checkpoint-20"), (std::vector<std::string>{dir + "/checkpoint-30", dir + "/checkpoint-40"}));
  EXPECT_EQ(steps(), (std::vector<int64_t>{20, 50}));
  EXPECT_TRUE(rotate_checkpoints(dir, 2, dir + "/checkpoint-20").empty());
  // A limit of 1 with an older best keeps both (Hugging Face's rule).
  EXPECT_TRUE(rotate_checkpoints(dir, 1, dir + "/checkpoint-20").empty());
  EXPECT_EQ(rotate_checkpoints(dir, 1).size(), 1u);
  EXPECT_EQ(steps(), (std::vector<int64_t>{50}));
}

// An older run's checkpoints in the same directory (--overwrite_output_dir)
// and the one this run read are protected: neither counted against the limit
// nor removed, however their steps sort against this run's.
TEST_F(CheckpointTest, RotationLeavesProtectedCheckpointsOutOfTheCount) {
  for (int64_t s : {10, 20, 30}) save(s);
  const std::vector<std::string> older_run = {dir + "/checkpoint-10", dir + "/checkpoint-20", dir + "/checkpoint-30"};
  save(2);  // the new run's first checkpoint, a lower step than the old ones
  EXPECT_TRUE(rotate_checkpoints(dir, 1, "", older_run).empty());
  save(3);
  EXPECT_EQ(rotate_checkpoints(dir, 1, "", older_run), (std::vector<std::string>{dir + "/checkpoint-2"}));
  EXPECT_EQ(steps(), (std::vector<int64_t>{3, 10, 20, 30}));
  // Protected paths that are not checkpoints of the directory change nothing.
  save(4);
  EXPECT_EQ(rotate_checkpoints(dir, 1, "", {"/nonexistent/checkpoint-3"}), (std::vector<std::string>{dir + "/checkpoint-3", dir + "/checkpoint-4",
                                                                                                   dir + "/checkpoint-10", dir + "/checkpoint-20"}));
  EXPECT_EQ(steps(), (std::vector<int64_t>{30}));
}

TEST_F(CheckpointTest, ReplacingACheckpointOfTheSameStep) {
  save(5, "old");
  save(5, "new weights");
  std::ifstream in(dir + "/checkpoint-5/model.safetensors");
  std::string contents((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(contents, "new weights");
  EXPECT_EQ(checkpoint_problem(dir + "/checkpoint-5"), "");
}

}  // namespace
}  // namespace lazytrain::train
