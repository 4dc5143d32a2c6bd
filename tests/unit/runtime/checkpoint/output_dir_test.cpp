// The output directory: another program's checkpoint refused, a killed run's temporaries removed.
#include "checkpoint_fixture.h"

namespace {

TEST_F(CheckpointTest, OutputDirRefusesAnotherProgram) {
  std::string error;
  Program program = tinyProgram();
  std::string nested = root + "/a/b/c";
  EXPECT_TRUE(checkOutputDir(nested, program, false, error)) << error;
  struct stat info;
  EXPECT_EQ(stat(nested.c_str(), &info), 0);

  writeAll(program);
  // Our own checkpoint: fine (a rerun resumes it).
  EXPECT_TRUE(checkOutputDir(dir, program, false, error)) << error;

  // A cut index is damage, not another program's; --overwrite replaces only the index.
  std::string indexText;
  ASSERT_TRUE(testprog::readFile(dir + "/index.json", indexText));
  ASSERT_EQ(truncate((dir + "/index.json").c_str(), 20), 0);
  EXPECT_FALSE(checkOutputDir(dir, program, false, error));
  EXPECT_NE(error.find(dir + "/index.json is malformed ("), std::string::npos) << error;
  EXPECT_NE(error.find("pass --overwrite to write it again (complete shards are kept)"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find("another program"), std::string::npos) << error;
  EXPECT_TRUE(checkOutputDir(dir, program, true, error)) << error;
  EXPECT_EQ(listDir(dir).size(), 2u);
  std::ofstream(dir + "/index.json", std::ios::binary) << indexText;

  Program other = gridProgram();
  EXPECT_FALSE(checkOutputDir(dir, other, false, error));
  EXPECT_NE(error.find("another program"), std::string::npos) << error;
  EXPECT_NE(error.find("--overwrite"), std::string::npos) << error;
  EXPECT_EQ(listDir(dir).size(), 3u);

  // Same world size, other program id, no index: the directory check cannot tell without reading
  // every header; each rank refuses its own file.
  ASSERT_EQ(unlink((dir + "/index.json").c_str()), 0);
  Program sameMesh = tinyProgram();
  sameMesh.programId = "aaaaaaaaaaaaaaaa";
  EXPECT_TRUE(checkOutputDir(dir, sameMesh, false, error)) << error;
  for (int64_t rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(checkOwnShard(dir, program, rank, false, error)) << error;
    EXPECT_FALSE(checkOwnShard(dir, sameMesh, rank, false, error));
    EXPECT_NE(error.find("rank-0000" + std::to_string(rank) +
                         "-of-00002.safetensors has program id 0123456789abcdef"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("--overwrite"), std::string::npos) << error;
  }
  // --overwrite removes a rank's foreign file (its rank writes it again) and leaves the others.
  EXPECT_TRUE(checkOwnShard(dir, sameMesh, 1, true, error)) << error;
  EXPECT_EQ(listDir(dir).size(), 1u);
  // A missing file is simply not written yet.
  EXPECT_TRUE(checkOwnShard(dir, sameMesh, 1, false, error)) << error;

  // Another mesh size: refused, or removed with --overwrite, by the names alone.
  EXPECT_FALSE(checkOutputDir(dir, other, false, error));
  EXPECT_NE(error.find("rank-00000-of-00002.safetensors is from a run with 2 ranks"),
            std::string::npos)
      << error;
  EXPECT_TRUE(checkOutputDir(dir, other, true, error)) << error;
  EXPECT_TRUE(listDir(dir).empty());

  // A safetensors file that is not an initc shard, under a shard's name.
  std::ofstream(dir + "/rank-00000-of-00002.safetensors", std::ios::binary)
      .write("\x02\0\0\0\0\0\0\0{}", 10);
  EXPECT_FALSE(checkOwnShard(dir, program, 0, false, error));
  EXPECT_NE(error.find("rank-00000-of-00002.safetensors is not an initc shard"), std::string::npos)
      << error;

  // A plain file where the directory should be.
  std::ofstream(root + "/file") << "x";
  EXPECT_FALSE(checkOutputDir(root + "/file", program, false, error));
  EXPECT_NE(error.find("not a directory"), std::string::npos) << error;
}

// A rerun's cleanup removes what a killed writer left, never the temporary of a writer still at
// work (a second `prog/init --rank K` on the same directory): that one completes its file.

TEST_F(CheckpointTest, CleanupLeavesLiveWritersTemporaries) {
  Program program = tinyProgram();
  std::string error;
  ASSERT_TRUE(checkOutputDir(dir, program, false, error)) << error;
  std::string name = shardFileName(1, 2);
  std::ofstream(dir + "/." + name + ".tmp-999999999") << "left by a killed run";
  AtomicFile live;
  ASSERT_TRUE(live.open(dir + "/" + name, 4, error)) << error;
  ASSERT_TRUE(live.write("abcd", 4, error)) << error;
  EXPECT_EQ(listDir(dir).size(), 2u);
  EXPECT_EQ(removeStaleTemporaries(dir, program, 1), 1);
  EXPECT_EQ(removeStaleTemporaries(dir, program, -1), 0);
  std::vector<std::string> left = listDir(dir);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0], "." + name + ".tmp-" + std::to_string(getpid()));
  EXPECT_TRUE(live.commit(error)) << error;
  EXPECT_EQ(listDir(dir), std::vector<std::string>{name});
}

// assemble refuses to write over the checkpoint it reads: a shard, the index, through a link,
// a hard link, or under a shard's name that is missing.

} // namespace
