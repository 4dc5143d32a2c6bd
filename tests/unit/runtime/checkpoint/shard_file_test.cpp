// Shard files: their names, a rerun's check of them, and writing them atomically.
#include "checkpoint_fixture.h"

namespace {

TEST(ShardFileName, IsZeroPadded) {
  EXPECT_EQ(shardFileName(3, 4), "rank-00003-of-00004.safetensors");
  EXPECT_EQ(shardFileName(12345, 131072), "rank-12345-of-131072.safetensors");
}

/// The bytes of the persistent params: of every rank's slice (what verify reads), or of the
/// model once (what assemble reads and writes).

TEST_F(CheckpointTest, ShardOfAnotherBaseVersionIsComputedAgain) {
  Program program = tinyProgram();
  std::string error;
  ASSERT_TRUE(checkOutputDir(dir, program, false, error)) << error;
  std::vector<std::vector<char>> globals;
  for (size_t i = 0; i < program.params.size(); ++i)
    globals.push_back(globalBytes(program.params[i], i));
  std::vector<ShardTensor> tensors = writeShard(program, 0, globals); // the bytes to stream
  const std::string stamps = R"({"base.safetensors":{"bytes":100,"mtime":[7,0]}})";
  ShardFileStream stream;
  ASSERT_TRUE(stream.open(dir, program, 0, tensors, error, stamps)) << error;
  for (size_t t = 0; t < tensors.size(); ++t)
    ASSERT_TRUE(stream.writePiece(t, 0, tensors[t].data, tensors[t].bytes, error)) << error;
  std::vector<std::string> written, checksums;
  ASSERT_TRUE(stream.finish(written, error)) << error;

  std::string reason;
  EXPECT_EQ(shardState(dir, program, 0, checksums, reason, &stamps), ShardState::Complete)
      << reason;
  EXPECT_EQ(checksums[0], tensors[0].checksum);
  EXPECT_EQ(shardState(dir, program, 0, checksums, reason), ShardState::Complete) << reason;
  const std::string why = shardPath(0, 2) + ": ";
  const std::pair<std::string, std::string> changes[] = {
      {R"({"base.safetensors":{"bytes":100,"mtime":[7,1]}})",
       "computed from another version of base.safetensors"},
      {R"({"base.safetensors":{"bytes":101,"mtime":[7,0]}})",
       "computed from another version of base.safetensors"},
      {R"({"other.safetensors":{"bytes":100,"mtime":[7,0]}})",
       "computed from other base checkpoint files (not other.safetensors)"},
      {"", "computed from other base checkpoint files (base.safetensors among them)"}};
  for (const auto &[now, said] : changes) {
    EXPECT_EQ(shardState(dir, program, 0, checksums, reason, &now), ShardState::BaseChanged) << now;
    EXPECT_EQ(reason, why + said);
  }
  // With some base files absent, only those there are compared.
  const std::string none;
  EXPECT_EQ(shardState(dir, program, 0, checksums, reason, &none, /*someBasesMissing=*/true),
            ShardState::Complete)
      << reason;
  EXPECT_EQ(shardState(dir, program, 0, checksums, reason, &changes[0].first, true),
            ShardState::BaseChanged);
  EXPECT_EQ(reason, why + changes[0].second);
  // A shard that records none (or what is not JSON) is of another base, unless none is loaded.
  writeShard(program, 0, globals);
  EXPECT_EQ(shardState(dir, program, 0, checksums, reason, &stamps), ShardState::BaseChanged);
  EXPECT_EQ(reason, why + "records no version of its base checkpoints");
  EXPECT_EQ(shardState(dir, program, 0, checksums, reason, &none), ShardState::Complete) << reason;
}

TEST_F(CheckpointTest, TruncatedOrMissingShardIsIncomplete) {
  Program program = tinyProgram();
  writeAll(program);
  struct stat info;
  ASSERT_EQ(stat(shardPath(0, 2).c_str(), &info), 0);
  ASSERT_EQ(truncate(shardPath(0, 2).c_str(), info.st_size - 3), 0);
  std::vector<std::string> checksums;
  std::string reason;
  EXPECT_FALSE(shardIsComplete(dir, program, 0, checksums, reason));
  EXPECT_NE(reason.find("truncated"), std::string::npos) << reason;
  EXPECT_TRUE(shardIsComplete(dir, program, 1, checksums));

  std::vector<std::string> problems;
  std::string error;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("rank 0 (rank-00000-of-00002.safetensors)"), std::string::npos)
      << problems[0];
  EXPECT_NE(problems[0].find("--rank 0"), std::string::npos) << problems[0];

  ASSERT_EQ(unlink(shardPath(1, 2).c_str()), 0);
  EXPECT_FALSE(shardIsComplete(dir, program, 1, checksums));
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  EXPECT_EQ(problems.size(), 2u);

  // A shard of another program under the same name is not complete for this one.
  Program other = tinyProgram();
  other.programId = "ffffffffffffffff";
  writeAll(other, /*overwrite=*/true);
  EXPECT_FALSE(shardIsComplete(dir, program, 1, checksums, reason));
  EXPECT_NE(reason.find("another program"), std::string::npos) << reason;
}

TEST_F(CheckpointTest, FailedWritesLeaveNothingBehind) {
  Program program = tinyProgram();
  std::string error;
  ASSERT_TRUE(checkOutputDir(dir, program, false, error)) << error;
  std::vector<char> data(64);
  ShardTensor tensor;
  tensor.param = &program.params[0];
  tensor.slice = sliceForRank(program.mesh, program.params[0], 0);
  tensor.data = data.data();
  tensor.bytes = 7; // wrong size
  EXPECT_FALSE(writeShardFile(dir, program, 0, {tensor}, error));
  EXPECT_NE(error.find("rank-00000-of-00002.safetensors"), std::string::npos) << error;
  EXPECT_TRUE(listDir(dir).empty());

  std::vector<RankReport> reports(1); // wrong world size
  EXPECT_FALSE(writeIndex(dir, program, reports, error));
  EXPECT_TRUE(listDir(dir).empty());

  EXPECT_FALSE(writeShardFile(root + "/nowhere", program, 0, {}, error));
  EXPECT_NE(error.find("does not exist"), std::string::npos) << error;

  std::vector<std::string> problems;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  EXPECT_NE(error.find("index.json"), std::string::npos) << error;
  EXPECT_FALSE(assembleCheckpoint(dir, root + "/m.safetensors", error));
  EXPECT_NE(error.find("index.json"), std::string::npos) << error;
  EXPECT_TRUE(listDir(dir).empty());
}

TEST_F(CheckpointTest, ModesFollowTheUmask) {
  for (mode_t mask : {mode_t(002), mode_t(022), mode_t(077)}) {
    mode_t saved = umask(mask);
    std::string error;
    ASSERT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
    Program program = tinyProgram();
    writeAll(program);
    umask(saved);
    struct stat info;
    ASSERT_EQ(stat(dir.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0777 & ~mask) << "directory, umask " << mask;
    for (const std::string &name : listDir(dir)) {
      ASSERT_EQ(stat((dir + "/" + name).c_str(), &info), 0);
      EXPECT_EQ(info.st_mode & 0777, 0666 & ~mask) << name << ", umask " << mask;
    }
  }
}

TEST_F(CheckpointTest, RewritingAShardReplacesItAtomically) {
  Program program = tinyProgram();
  writeAll(program);
  writeAll(program); // a rerun over a complete checkpoint
  EXPECT_EQ(listDir(dir).size(), 3u);
  std::vector<std::string> problems;
  std::string error;
  EXPECT_TRUE(verifyCheckpoint(dir, problems, error)) << error;
}

} // namespace
