// verify: every damaged byte, replica and replaced file reported, in rank order.
#include "checkpoint_fixture.h"

namespace {

TEST_F(CheckpointTest, FlippedByteIsReportedWithParamAndRank) {
  Program program = tinyProgram();
  writeAll(program);
  std::string error;
  flipBits(shardPath(1, 2), "w", 5, 0x40);
  std::vector<std::string> problems;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  EXPECT_TRUE(error.empty()) << error;
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "w on rank 1 (rank-00001-of-00002.safetensors): checksum mismatch, the "
                         "file is corrupt: rerun `prog/init --layout ranks --rank 1 --out " +
                             dir + "` to regenerate it");
  std::vector<std::string> checksums;
  EXPECT_FALSE(shardIsComplete(dir, program, 1, checksums));
  EXPECT_TRUE(shardIsComplete(dir, program, 0, checksums));
  EXPECT_FALSE(assembleCheckpoint(dir, root + "/model.safetensors", error));
  EXPECT_NE(error.find("w on rank 1 (rank-00001-of-00002.safetensors): checksum mismatch"),
            std::string::npos)
      << error;
  EXPECT_EQ(access((root + "/model.safetensors").c_str(), F_OK), -1);
  EXPECT_FALSE(anyHiddenFile(root));
}

// A pipe cannot take back what it was given: a corrupt slice is found before anything is
// written to one, not after the tensors before it went out.

TEST_F(CheckpointTest, VerifyReportsTheSameInRankOrderOnAnyThreads) {
  Program program = gridProgram();
  writeAll(program);
  std::string error;
  // Damage ranks 1 (a flipped byte), 4 and 5 (missing).
  flipBits(shardPath(1, 6), program.params.front().name, 0, 0x01);
  ASSERT_EQ(unlink(shardPath(4, 6).c_str()), 0);
  ASSERT_EQ(unlink(shardPath(5, 6).c_str()), 0);

  std::vector<std::string> once;
  EXPECT_FALSE(verifyCheckpoint(dir, once, error, {}, 1));
  ASSERT_EQ(once.size(), 3u);
  const char *ranks[] = {"rank 1 ", "rank 4 ", "rank 5 "};
  for (size_t i = 0; i < once.size(); ++i)
    EXPECT_NE(once[i].find(ranks[i]), std::string::npos) << once[i];
  for (int threads : {2, 3, 6, 16}) {
    std::vector<std::string> problems;
    ProgressLog progress;
    EXPECT_FALSE(verifyCheckpoint(dir, problems, error, progress.fn(), threads));
    EXPECT_EQ(problems, once) << threads << " threads";
    progress.expectSteadyTo(storedBytes(program, true));
  }
}

// verify reads a file's tensors in the order they lie in it (by alignment, then name: rows
// before cube here) but reports them in the index's.

TEST_F(CheckpointTest, VerifyReportsTensorsInTheIndexOrder) {
  Program program = gridProgram();
  writeAll(program);
  SafetensorsReader shard;
  std::string error;
  ASSERT_TRUE(shard.open(shardPath(0, 6), error)) << error;
  ASSERT_LT(shard.find("rows")->begin, shard.find("cube")->begin);
  flipBits(shardPath(0, 6), "rows", 0, 0x01);
  flipBits(shardPath(0, 6), "cube", 0, 0x01);
  std::vector<std::string> problems;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].rfind("cube on rank 0 ", 0), 0u) << problems[0];
  EXPECT_EQ(problems[1].rfind("rows on rank 0 ", 0), 0u) << problems[1];
}

TEST_F(CheckpointTest, CorruptReplicaIsReported) {
  Program program = tinyProgram();
  writeAll(program);
  SafetensorsReader shard;
  std::string error;
  ASSERT_TRUE(shard.open(shardPath(1, 2), error)) << error;
  uint64_t position = shard.dataStart() + shard.find("b")->begin;
  shard = SafetensorsReader();
  {
    std::fstream file(shardPath(1, 2), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(std::streamoff(position));
    file.put('\x55');
  }
  std::vector<std::string> problems;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("b on rank 1 (rank-00001-of-00002.safetensors): checksum", 0), 0u)
      << problems[0];
  // Assemble reads the owner's copy only, which is intact.
  EXPECT_TRUE(assembleCheckpoint(dir, root + "/model.safetensors", error)) << error;
}

// A shard records the versions of the base checkpoints it was computed from: a rerun that finds
// others computes it again, and one that cannot open them (no stamps to compare) keeps it.

TEST_F(CheckpointTest, ReplacedShardIsReported) {
  Program program = tinyProgram();
  writeAll(program);
  // Rank 1's file replaced by one that is valid in itself: its "w" slice holds other bytes.
  replaceShard(program, 1, 0, '\x11');
  std::string error;
  std::vector<std::string> problems;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "rank 1 (rank-00001-of-00002.safetensors): its tensors' checksums are "
                         "not those index.json recorded for this rank (the file changed after "
                         "the job wrote it): rerun `prog/init --layout ranks --rank 1 --out " +
                             dir + "` to regenerate it");
  EXPECT_FALSE(assembleCheckpoint(dir, root + "/model.safetensors", error));
  EXPECT_NE(error.find("rank 1 (rank-00001-of-00002.safetensors): its tensors' checksums"),
            std::string::npos)
      << error;

  // The replicated "b" differing between ranks, with an index that agrees with each file:
  // verify still finds that the copies differ.
  replaceShard(program, 1, 1, '\x22');
  std::vector<std::string> sums;
  ASSERT_TRUE(shardIsComplete(dir, program, 1, sums));
  nlohmann::ordered_json index = readIndexOrdered();
  index["shard_digests"][1] = checksumToHex(shardDigest(program, sums));
  writeSealedIndex(index);
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("b: ranks 0 and 1 hold the same slice with different bytes", 0),
            0u)
      << problems[0];
}

TEST_F(CheckpointTest, GlobalShapeMismatchIsNamed) {
  Program program = tinyProgram();
  writeAll(program);
  SafetensorsReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(shardPath(1, 2), error)) << error;
  std::vector<std::string> data;
  std::vector<SafetensorsTensor> tensors;
  for (const SafetensorsEntry &entry : reader.tensors()) {
    data.emplace_back(entry.bytes(), '\0');
    ASSERT_TRUE(reader.read(entry.begin, data.back().data(), entry.bytes(), error)) << error;
  }
  for (size_t t = 0; t < reader.tensors().size(); ++t) {
    const SafetensorsEntry &entry = reader.tensors()[t];
    tensors.push_back({entry.name, entry.dtype, entry.shape, data[t].data(), entry.bytes()});
  }
  SafetensorsMetadata metadata = reader.metadata();
  for (auto &[key, value] : metadata)
    if (key == "initc.tensors") {
      nlohmann::ordered_json records = nlohmann::ordered_json::parse(value);
      records["w"]["global_shape"] = {6, 3};
      value = records.dump();
    }
  ASSERT_TRUE(writeSafetensors(shardPath(1, 2), tensors, metadata, error)) << error;
  std::vector<std::string> problems;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "w on rank 1 (rank-00001-of-00002.safetensors): the file holds F32 [2, 3] "
                         "at [3, 0] of a tensor of shape [6, 3], the index expects F32 [2, 3] at "
                         "[3, 0] of a tensor of shape [5, 3]: rerun `prog/init --layout ranks --rank 1 --out " +
                             dir + "` to regenerate it");
  EXPECT_FALSE(assembleCheckpoint(dir, root + "/model.safetensors", error));
  EXPECT_NE(error.find("of a tensor of shape [6, 3], the index expects"), std::string::npos)
      << error;
}

// A FIFO (or a directory) where index.json or a shard should be: verify, assemble and a rerun
// refuse it at once instead of waiting for a writer. Run in a child with an alarm, so that a
// regression fails rather than hangs.

} // namespace
