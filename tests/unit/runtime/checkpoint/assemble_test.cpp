// assemble: the global tensors, bitwise, whatever the sharding and the band.
#include "checkpoint_fixture.h"

namespace {

TEST_F(CheckpointTest, WritesShardsIndexAssemblesAndVerifies) {
  Program program = tinyProgram();
  std::vector<std::vector<char>> globals = writeAll(program);
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"index.json", shardFileName(0, 2),
                                                    shardFileName(1, 2)}));

  // The shard file is a standard safetensors file named by parameter, with initc metadata.
  SafetensorsReader shard;
  std::string error;
  ASSERT_TRUE(shard.open(shardPath(1, 2), error)) << error;
  EXPECT_EQ(*shard.metadataValue("format"), "pt");
  EXPECT_EQ(*shard.metadataValue("initc.program_id"), program.programId);
  EXPECT_EQ(*shard.metadataValue("initc.rank"), "1");
  EXPECT_EQ(*shard.metadataValue("initc.world_size"), "2");
  EXPECT_EQ(shard.tensors().size(), 5u); // no "rope"
  ASSERT_NE(shard.find("z"), nullptr);
  EXPECT_EQ(shard.find("z")->shape, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(shard.find("w")->shape, (std::vector<int64_t>{2, 3}));
  nlohmann::json records = nlohmann::json::parse(*shard.metadataValue("initc.tensors"));
  EXPECT_EQ(records["w"]["offset"], nlohmann::json({3, 0}));
  EXPECT_EQ(records["emb"]["global_shape"], nlohmann::json({4, 6}));
  EXPECT_EQ(records["emb"]["offset"], nlohmann::json({0, 3}));

  nlohmann::json index = readIndexJson();
  EXPECT_EQ(index["format"], "initc-checkpoint");
  EXPECT_EQ(index["version"], 3);
  {
    // The checksum covers the rest of the document as written, keys in order.
    nlohmann::ordered_json ordered = readIndexOrdered();
    std::string recorded = ordered["checksum"];
    ordered.erase("checksum");
    std::string text = ordered.dump();
    EXPECT_EQ(recorded, checksumHex(text.data(), text.size()));
  }
  EXPECT_EQ(index["program_id"], program.programId);
  EXPECT_EQ(index["model"], "tiny");
  EXPECT_EQ(index["seed"], 1234);
  EXPECT_EQ(index["mesh"]["axes"], nlohmann::json({"tp"}));
  EXPECT_EQ(index["world_size"], 2);
  EXPECT_EQ(index["files"], nlohmann::json({shardFileName(0, 2), shardFileName(1, 2)}));
  // A rank's digest is XXH3-64 of its stored tensors' checksums, in program order.
  for (int64_t rank = 0; rank < 2; ++rank) {
    std::string joined;
    for (const char *name : {"w", "b", "emb", "z", "s"}) {
      SafetensorsReader reader;
      ASSERT_TRUE(reader.open(shardPath(rank, 2), error)) << error;
      joined += nlohmann::json::parse(*reader.metadataValue("initc.tensors"))[name]["checksum"]
                    .get<std::string>();
    }
    EXPECT_EQ(index["shard_digests"][rank], checksumHex(joined.data(), joined.size()));
  }
  ASSERT_EQ(index["params"].size(), 5u);
  const nlohmann::json &w = index["params"][0];
  EXPECT_EQ(w["name"], "w");
  EXPECT_EQ(w["aliases"], nlohmann::json({"w_tied"}));
  EXPECT_EQ(w["dtype"], "F32");
  EXPECT_EQ(w["shape"], nlohmann::json({5, 3}));
  EXPECT_EQ(w["sharding"], nlohmann::json::parse(R"([["tp"],[]])"));
  EXPECT_FALSE(w.contains("slices")); // slices follow from the mesh and the sharding
  EXPECT_EQ(index["params"][1]["sharding"], nlohmann::json::parse(R"([[]])"));
  EXPECT_EQ(index["params"][4]["sharding"], nlohmann::json::array());
  EXPECT_EQ(index["total_bytes"], 5 * 3 * 4 + 3 * 4 + 4 * 6 * 2 + 2 * 4 + 8);
  EXPECT_EQ(index["parameter_count"], 15 + 3 + 24 + 2 + 1);

  std::vector<std::string> problems;
  ProgressLog verifying;
  EXPECT_TRUE(verifyCheckpoint(dir, problems, error, verifying.fn())) << error;
  EXPECT_TRUE(problems.empty()) << problems.front();
  // "b" (3 x f32) and the scalar "s" (8 bytes) are on both ranks: verify reads them twice.
  verifying.expectSteadyTo(storedBytes(program, true));
  EXPECT_EQ(storedBytes(program, true), storedBytes(program, false) + 3 * 4 + 8);

  std::string model = root + "/model.safetensors";
  ASSERT_TRUE(assembleCheckpoint(dir, model, error)) << error;
  SafetensorsReader assembled;
  ASSERT_TRUE(assembled.open(model, error)) << error;
  EXPECT_EQ(*assembled.metadataValue("format"), "pt");
  ASSERT_NE(assembled.metadataValue("initc.aliases"), nullptr);
  EXPECT_EQ(nlohmann::json::parse(*assembled.metadataValue("initc.aliases")),
            nlohmann::json::parse(R"({"w_tied":"w"})"));
  EXPECT_EQ(assembled.tensors().size(), 5u);
  EXPECT_EQ(assembled.find("rope"), nullptr);
  EXPECT_EQ(assembled.find("w_tied"), nullptr);
  for (size_t i = 0; i < program.params.size(); ++i) {
    const Param &param = program.params[i];
    const SafetensorsEntry *entry = assembled.find(param.name);
    if (!param.persistent)
      continue;
    ASSERT_NE(entry, nullptr) << param.name;
    EXPECT_EQ(entry->shape, param.shape);
    EXPECT_EQ(entry->dtype, dtypeName(param.dtype));
    std::vector<char> bytes(entry->bytes());
    ASSERT_TRUE(assembled.read(entry->begin, bytes.data(), bytes.size(), error)) << error;
    EXPECT_EQ(bytes, globals[i]) << param.name;
  }
  EXPECT_FALSE(anyHiddenFile(dir));
  EXPECT_FALSE(anyHiddenFile(root));
}

TEST_F(CheckpointTest, AssemblesRaggedGridShardings) {
  Program program = gridProgram();
  std::vector<std::vector<char>> globals = writeAll(program);
  std::string error;
  std::vector<std::string> problems;
  ProgressLog verifying, assembling;
  EXPECT_TRUE(verifyCheckpoint(dir, problems, error, verifying.fn())) << error;
  EXPECT_TRUE(problems.empty()) << problems.front();
  verifying.expectSteadyTo(storedBytes(program, /*replicas=*/true));
  std::string model = root + "/grid.safetensors";
  ASSERT_TRUE(assembleCheckpoint(dir, model, error, assembling.fn())) << error;
  assembling.expectSteadyTo(storedBytes(program, /*replicas=*/false));
  EXPECT_GT(assembling.calls.size(), 2u);
  SafetensorsReader assembled;
  ASSERT_TRUE(assembled.open(model, error)) << error;
  EXPECT_EQ(assembled.metadataValue("initc.aliases"), nullptr);
  for (size_t i = 0; i < program.params.size(); ++i) {
    const SafetensorsEntry *entry = assembled.find(program.params[i].name);
    ASSERT_NE(entry, nullptr);
    std::vector<char> bytes(entry->bytes());
    ASSERT_TRUE(assembled.read(entry->begin, bytes.data(), bytes.size(), error)) << error;
    EXPECT_EQ(bytes, globals[i]) << program.params[i].name;
  }
}

// Bands of every size, from one element (a band inside a row of "cube", whose 7 columns are split
// 3 ways) through one row, several rows and rows of several planes, to whole tensors: the file
// is the same bytes every time.

TEST_F(CheckpointTest, AssembledBytesDoNotDependOnTheBand) {
  Program program = gridProgram();
  writeAll(program);
  std::string error;
  std::string reference = root + "/whole.safetensors";
  ASSERT_TRUE(assembleCheckpoint(dir, reference, error)) << error;
  std::string expected, bytes;
  ASSERT_TRUE(testprog::readFile(reference, expected));
  ASSERT_FALSE(expected.empty());
  for (uint64_t band : {1, 2, 4, 8, 12, 20, 28, 56, 84, 112, 140, 200, 560, 1000}) {
    std::string out = root + "/band.safetensors";
    ProgressLog assembling;
    ASSERT_TRUE(assembleCheckpoint(dir, out, error, assembling.fn(), {band})) << error;
    ASSERT_TRUE(testprog::readFile(out, bytes));
    EXPECT_EQ(bytes, expected) << "band of " << band << " bytes";
    assembling.expectSteadyTo(storedBytes(program, /*replicas=*/false));
  }
}

TEST_F(CheckpointTest, AssembleToAPipeWritesNothingFromACorruptCheckpoint) {
  Program program = gridProgram();
  writeAll(program);
  std::string error, fifo = root + "/model.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // Held open for reading, so that assemble's open for writing does not wait; the model is far
  // below the pipe's buffer, so that its writes do not either.
  int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  flipBits(shardPath(3, 6), "rows", 0, 0x01); // rank 3 owns the last row of "rows"
  EXPECT_FALSE(assembleCheckpoint(dir, fifo, error));
  EXPECT_NE(error.find("rows on rank 3 (rank-00003-of-00006.safetensors): checksum mismatch"),
            std::string::npos)
      << error;
  char byte;
  EXPECT_LE(::read(reader, &byte, 1), 0) << "the pipe got bytes of a corrupt checkpoint";
  ::close(reader);
}

TEST_F(CheckpointTest, AssembleRefusesToWriteIntoTheCheckpoint) {
  Program program = tinyProgram();
  writeAll(program);
  std::string shard = shardPath(0, 2), before, after;
  ASSERT_TRUE(testprog::readFile(shard, before));
  ASSERT_EQ(symlink(shard.c_str(), (root + "/link.safetensors").c_str()), 0);
  ASSERT_EQ(link((dir + "/index.json").c_str(), (root + "/hard.json").c_str()), 0);
  for (std::string out : {shard, dir + "/index.json", dir + "/./index.json",
                          root + "/link.safetensors", root + "/hard.json"}) {
    std::string error;
    EXPECT_FALSE(assembleCheckpoint(dir, out, error)) << out;
    EXPECT_NE(error.find("-o " + out + " is the checkpoint's own "), std::string::npos) << error;
    EXPECT_NE(error.find("choose another -o"), std::string::npos) << error;
  }
  ASSERT_TRUE(testprog::readFile(shard, after));
  EXPECT_EQ(before, after);
  std::vector<std::string> problems;
  std::string error;
  EXPECT_TRUE(verifyCheckpoint(dir, problems, error)) << error;
  ASSERT_EQ(unlink(shardPath(1, 2).c_str()), 0);
  EXPECT_FALSE(assembleCheckpoint(dir, shardPath(1, 2), error));
  EXPECT_NE(error.find("is the checkpoint's own rank-00001-of-00002.safetensors"),
            std::string::npos)
      << error;
  EXPECT_EQ(listDir(dir).size(), 2u);
}

// A rank that owns no slice (every parameter replicated: rank 1 holds copies only) is still part
// of the checkpoint: assemble refuses it missing or damaged, as verify does.

TEST_F(CheckpointTest, AssembleChecksShardsItReadsNoSliceFrom) {
  Program program = tinyProgram();
  for (Param &param : program.params)
    for (std::vector<int> &axes : param.splitAxes)
      axes.clear();
  writeAll(program);
  std::string error, out = root + "/model.safetensors";
  ASSERT_TRUE(assembleCheckpoint(dir, out, error)) << error;
  ASSERT_EQ(unlink(out.c_str()), 0);
  std::string bytes;
  ASSERT_TRUE(testprog::readFile(shardPath(1, 2), bytes));
  ASSERT_EQ(unlink(shardPath(1, 2).c_str()), 0);
  EXPECT_FALSE(assembleCheckpoint(dir, out, error));
  EXPECT_NE(error.find("rank 1 (rank-00001-of-00002.safetensors): " + shardPath(1, 2) +
                       ": no such file: rerun `prog/init --layout ranks --rank 1"),
            std::string::npos)
      << error;
  std::ofstream(shardPath(1, 2)) << "garbage";
  EXPECT_FALSE(assembleCheckpoint(dir, out, error));
  EXPECT_NE(error.find("rank 1 (rank-00001-of-00002.safetensors): "), std::string::npos) << error;
  // Valid in itself, but another program's.
  Program other = program;
  other.programId = "aaaaaaaaaaaaaaaa";
  ASSERT_EQ(unlink(shardPath(1, 2).c_str()), 0);
  std::vector<std::vector<char>> globals;
  for (size_t i = 0; i < program.params.size(); ++i)
    globals.push_back(globalBytes(program.params[i], i));
  writeShard(other, 1, globals);
  EXPECT_FALSE(assembleCheckpoint(dir, out, error));
  EXPECT_NE(error.find("rank 1 (rank-00001-of-00002.safetensors): belongs to another program"),
            std::string::npos)
      << error;
  // prog/init replaces another program's file only with --overwrite: the hint says so.
  EXPECT_NE(error.find("rerun `prog/init --layout ranks --rank 1 --out " + dir + " --overwrite` to regenerate it"),
            std::string::npos)
      << error;
  EXPECT_EQ(access(out.c_str(), F_OK), -1);
  std::vector<std::string> problems;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("belongs to another program"), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find(" --overwrite` to regenerate it"), std::string::npos) << problems[0];

  // Every shard another program's, the same one: the index is the stranger.
  ASSERT_EQ(unlink(shardPath(0, 2).c_str()), 0);
  writeShard(other, 0, globals);
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find(dir + "/index.json has program id " + program.programId +
                             ", but all 2 shards have program id aaaaaaaaaaaaaaaa: the index or "
                             "the shards were copied from another checkpoint; with the prog/init "
                             "of the one you want, rerun the whole job (`mpirun -np N prog/init "
                             "--layout ranks --out " +
                             dir + " --overwrite`)"),
            std::string::npos)
      << problems[0];
}

// A shard whose metadata records another global shape for a slice of the right shape and place:
// the message says which global shapes differ.

TEST_F(CheckpointTest, AShardNameLinkedToAnotherFileOfTheCheckpointIsRefused) {
  Program program = tinyProgram();
  writeAll(program);
  std::string shard = shardPath(1, 2), error;
  for (const char *target : {"rank-00000-of-00002.safetensors", "index.json"}) {
    ASSERT_EQ(unlink(shard.c_str()), 0);
    ASSERT_EQ(symlink(target, shard.c_str()), 0);
    std::string whose =
        std::string(target) == "index.json" ? "the checkpoint's index" : "rank 0's shard";
    for (bool overwrite : {false, true}) {
      EXPECT_FALSE(checkOwnShard(dir, program, 1, overwrite, error));
      EXPECT_NE(error.find(shard + " is a symbolic link to " + target + ", " + whose +
                           ", so two writers would share one file: remove the link"),
                std::string::npos)
          << error;
    }
  }
  // The same file through another spelling of the directory is still the same file.
  ASSERT_EQ(unlink(shard.c_str()), 0);
  ASSERT_EQ(symlink((dir + "/./rank-00000-of-00002.safetensors").c_str(), shard.c_str()), 0);
  EXPECT_FALSE(checkOwnShard(dir, program, 1, false, error));
  EXPECT_NE(error.find("rank 0's shard"), std::string::npos) << error;
  // A link to a file outside the checkpoint is written through, as before.
  ASSERT_EQ(unlink(shard.c_str()), 0);
  ASSERT_EQ(symlink((root + "/elsewhere.safetensors").c_str(), shard.c_str()), 0);
  EXPECT_TRUE(checkOwnShard(dir, program, 1, false, error)) << error;

  ASSERT_EQ(unlink(shard.c_str()), 0);
  ASSERT_EQ(mkdir(shard.c_str(), 0755), 0);
  for (bool overwrite : {false, true}) {
    EXPECT_FALSE(checkOwnShard(dir, program, 1, overwrite, error));
    EXPECT_NE(error.find(shard + " is a directory, not a shard file: remove it or choose another "
                                 "--out"),
              std::string::npos)
        << error;
  }
}

// Files and directories get 0666 and 0777 less the umask, as other tools' files do (they were
// 0644 and 0755 whatever the umask).

} // namespace
