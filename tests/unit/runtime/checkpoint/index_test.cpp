// index.json: written once every replica is checked, refused when malformed or edited.
#include "checkpoint_fixture.h"

namespace {

TEST_F(CheckpointTest, ReplicasWithDifferentBytesAreRefused) {
  Program program = tinyProgram();
  std::vector<std::vector<std::string>> sums(2, std::vector<std::string>(6, "0000000000000000"));
  sums[1][1] = "1111111111111111"; // "b" is replicated on ranks 0 and 1
  sums[0][5] = sums[1][5] = "";    // "rope" is not stored
  EXPECT_EQ(replicatedParams(program), (std::vector<size_t>{1, 4})); // b and the scalar s
  std::string error;
  ASSERT_TRUE(checkOutputDir(dir, program, false, error)) << error;
  EXPECT_FALSE(writeIndex(dir, program, {makeRankReport(program, sums[0]),
                                         makeRankReport(program, sums[1])}, error));
  EXPECT_NE(error.find("b: ranks 0 and 1 hold the same slice with different bytes"),
            std::string::npos)
      << error;
  EXPECT_TRUE(listDir(dir).empty());
}

TEST(CheckpointIndex, StaysSmallOnLargeMeshes) {
  Program program;
  program.modelName = "big";
  program.mesh.axisNames = {"dp", "tp"};
  program.mesh.shape = {512, 32};
  program.programId = "0123456789abcdef";
  for (int layer = 0; layer < 100; ++layer) {
    std::string prefix = "layers." + std::to_string(layer) + ".";
    program.params.push_back(makeParam(prefix + "proj", DType::BF16, {16384, 16384}, {{0}, {1}}));
    program.params.push_back(makeParam(prefix + "norm", DType::BF16, {16384}, {{0}}));
  }
  int64_t world = program.mesh.size();
  std::vector<size_t> replicated = replicatedParams(program);
  ASSERT_EQ(replicated.size(), 100u); // the norms: split over dp, copied over tp
  std::vector<RankReport> reports(static_cast<size_t>(world));
  for (int64_t rank = 0; rank < world; ++rank) {
    reports[size_t(rank)].digest = uint64_t(rank) * 0x9e3779b97f4a7c15ull;
    for (size_t j = 0; j < replicated.size(); ++j) // equal within each dp group of 32 ranks
      reports[size_t(rank)].replicated.push_back(uint64_t(rank / 32) << 8 | j);
  }
  char pattern[] = "/tmp/initrt-index-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  std::string dir = pattern;
  std::string error;
  ASSERT_TRUE(writeIndex(dir, program, reports, error)) << error;
  struct stat info;
  ASSERT_EQ(stat((dir + "/index.json").c_str(), &info), 0);
  EXPECT_LT(info.st_size, 1 << 20); // files and digests: 52 bytes per rank
  std::ifstream in(dir + "/index.json");
  nlohmann::json index = nlohmann::json::parse(in);
  EXPECT_EQ(index["shard_digests"].size(), size_t(world));
  EXPECT_EQ(index["shard_digests"][16383], checksumToHex(16383 * 0x9e3779b97f4a7c15ull));

  // One copy of a norm differs: rank 167 (dp 5, tp 7) against the copy of rank 160 (dp 5, tp 0).
  reports[167].replicated[3] ^= 1;
  EXPECT_FALSE(writeIndex(dir, program, reports, error));
  EXPECT_NE(error.find("layers.3.norm: ranks 160 and 167 hold the same slice with different "
                       "bytes"),
            std::string::npos)
      << error;
  ASSERT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
}

TEST_F(CheckpointTest, MalformedIndexIsRefused) {
  Program program = tinyProgram();
  writeAll(program);
  nlohmann::ordered_json good = readIndexOrdered();
  auto expectRefused = [&](nlohmann::ordered_json index, const std::string &why) {
    writeSealedIndex(index);
    std::vector<std::string> problems;
    std::string error;
    EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
    EXPECT_NE(error.find("index.json is malformed (" + why), std::string::npos) << error;
    EXPECT_NE(error.find("rerun the whole job"), std::string::npos) << error;
  };
  nlohmann::ordered_json index = good;
  index["version"] = 1;
  expectRefused(index, "version 1 is not supported");
  index["version"] = 2; // no checksum
  expectRefused(index, "version 2 is not supported");
  index = good;
  index["shard_digests"].erase(1);
  expectRefused(index, "shard_digests does not list world_size digests");
  index = good;
  index["files"][1] = "../elsewhere.safetensors";
  expectRefused(index, "files[1] is \"../elsewhere.safetensors\", not rank-00001-of-00002");
  index = good;
  index["shard_digests"][0] = "xyz";
  expectRefused(index, "shard digest \"xyz\" is not 16 hex digits");
  index = good;
  index["mesh"]["shape"] = {3};
  expectRefused(index, "the mesh does not have world_size ranks");
  index = good;
  index["params"][0]["sharding"] = nlohmann::ordered_json::parse(R"([["dp"],[]])");
  expectRefused(index, "w: sharding names unknown mesh axis dp");
  index = good;
  index["params"][0]["sharding"] = nlohmann::ordered_json::parse(R"([["tp"],["tp"]])");
  expectRefused(index, "w: mesh axis tp splits two dims");
  index = good;
  index["params"][0]["sharding"] = nlohmann::ordered_json::parse(R"([["tp"]])");
  expectRefused(index, "w: sharding does not list every dim");
  index = good;
  index["params"][0]["dtype"] = "F4"; // a safetensors dtype of no whole byte: never assembled
  expectRefused(index, "w: dtype F4 is not one initc writes");

  // Nested millions deep: refused as it is parsed (copying or printing it would recurse once
  // per level and overflow the stack).
  const size_t depth = 4 << 20;
  std::ofstream(dir + "/index.json") << R"({"format":"initc-checkpoint","x":)"
                                     << std::string(depth, '[') << std::string(depth, ']') << "}";
  std::vector<std::string> problems;
  std::string error;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  EXPECT_NE(error.find("index.json is malformed (nested deeper than 64 levels)"), std::string::npos)
      << error;
  EXPECT_FALSE(assembleCheckpoint(dir, root + "/model.safetensors", error));
  EXPECT_NE(error.find("nested deeper than 64 levels"), std::string::npos) << error;
}

// An edited index is the damaged file: one error naming index.json and the command that writes
// it again, for verify and assemble alike; never a problem blamed on every shard, never a pass
// (seed, model, totals, buffer and aliases were not checked against anything).

TEST_F(CheckpointTest, EditedIndexIsReportedAsTheDamagedFile) {
  Program program = tinyProgram();
  writeAll(program);
  std::string pristine;
  ASSERT_TRUE(testprog::readFile(dir + "/index.json", pristine));
  nlohmann::ordered_json good = readIndexOrdered();
  std::vector<std::pair<const char *, std::function<void(nlohmann::ordered_json &)>>> edits = {
      {"dtype", [](auto &i) { i["params"][0]["dtype"] = "BF16"; }},
      {"a param removed", [](auto &i) { i["params"].erase(2); }},
      {"seed", [](auto &i) { i["seed"] = 99; }},
      {"model", [](auto &i) { i["model"] = "other"; }},
      {"total_bytes", [](auto &i) { i["total_bytes"] = 1; }},
      {"parameter_count", [](auto &i) { i["parameter_count"] = 1; }},
      {"buffer", [](auto &i) { i["params"][1]["buffer"] = true; }},
      {"an alias added", [](auto &i) { i["params"][1]["aliases"].push_back("b_tied"); }},
      {"a digest", [](auto &i) { i["shard_digests"][0] = "0000000000000000"; }},
      {"the checksum removed", [](auto &i) { i.erase("checksum"); }},
  };
  for (auto &[what, edit] : edits) {
    nlohmann::ordered_json index = good;
    edit(index);
    std::ofstream(dir + "/index.json") << index.dump();
    std::vector<std::string> problems;
    std::string error;
    EXPECT_FALSE(verifyCheckpoint(dir, problems, error)) << what;
    EXPECT_TRUE(problems.empty()) << what << ": " << problems[0];
    EXPECT_NE(error.find(dir + "/index.json: the contents do not match its \"checksum\""),
              std::string::npos)
        << what << ": " << error;
    EXPECT_NE(error.find("index.json was edited or is damaged, the shards are not at fault: "
                         "rerun the whole job (`mpirun -np N prog/init --layout ranks --out " +
                         dir + " --overwrite`)"),
              std::string::npos)
        << what << ": " << error;
    EXPECT_FALSE(assembleCheckpoint(dir, root + "/model.safetensors", error)) << what;
    EXPECT_NE(error.find("index.json was edited or is damaged"), std::string::npos) << error;
    EXPECT_EQ(access((root + "/model.safetensors").c_str(), F_OK), -1) << what;
    // The rerun the message names: this program's index is rewritten, the shards kept.
    EXPECT_TRUE(checkOutputDir(dir, program, true, error)) << error;
    writeAll(program);
    std::string rewritten;
    ASSERT_TRUE(testprog::readFile(dir + "/index.json", rewritten));
    EXPECT_EQ(rewritten, pristine) << what;
  }
  // Reformatted (jq .) but not edited: the same document, accepted.
  std::ofstream(dir + "/index.json") << good.dump(2);
  std::vector<std::string> problems;
  std::string error;
  EXPECT_TRUE(verifyCheckpoint(dir, problems, error)) << error;
}

// The index lists files, digests and params: a 16,384-rank mesh does not multiply them.

TEST_F(CheckpointTest, FilesThatAreNotRegularAreRefusedWithoutWaiting) {
  Program program = tinyProgram();
  writeAll(program);
  auto inChild = [](const std::function<bool()> &body) {
    pid_t child = fork();
    if (child == 0) {
      alarm(20);
      _exit(body() ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  };
  std::string shard = shardPath(1, 2);
  ASSERT_EQ(unlink(shard.c_str()), 0);
  ASSERT_EQ(mkfifo(shard.c_str(), 0600), 0);
  EXPECT_TRUE(inChild([&] {
    std::vector<std::string> problems;
    std::string error;
    return !verifyCheckpoint(dir, problems, error) && problems.size() == 1 &&
           problems[0].find(shard + ": a FIFO, not a regular file: rerun `prog/init --layout ranks --rank 1") !=
               std::string::npos;
  }));
  EXPECT_TRUE(inChild([&] {
    std::string error;
    return !assembleCheckpoint(dir, root + "/m.safetensors", error) &&
           error.find("a FIFO, not a regular file") != std::string::npos;
  }));
  EXPECT_TRUE(inChild([&] {
    std::string error;
    return !checkOwnShard(dir, program, 1, false, error) &&
           error.find(shard + " is a FIFO, not a shard file: remove it, pass --overwrite") !=
               std::string::npos;
  }));
  std::string error;
  EXPECT_TRUE(inChild([&] { return checkOwnShard(dir, program, 1, true, error); }));
  EXPECT_EQ(access(shard.c_str(), F_OK), -1);

  std::string index = dir + "/index.json";
  ASSERT_EQ(unlink(index.c_str()), 0);
  ASSERT_EQ(mkfifo(index.c_str(), 0600), 0);
  EXPECT_TRUE(inChild([&] {
    std::vector<std::string> problems;
    std::string error;
    return !verifyCheckpoint(dir, problems, error) &&
           error.find(index + " is a FIFO, not a regular file: rerun the whole job") !=
               std::string::npos;
  }));
  EXPECT_TRUE(inChild([&] {
    std::string error;
    return !checkOutputDir(dir, program, false, error) &&
           error.find("index.json is not an initc index") != std::string::npos;
  }));
}

// A shard name that links to another file of the checkpoint would have two writers share it
// (AtomicFile follows links): refused, with or without --overwrite. A link elsewhere is fine.
// A directory at a shard's name is never removed, so --overwrite is not offered for it.

} // namespace
