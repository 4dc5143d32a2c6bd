// The dcp layout: each rank's file of its writeBoxes, read back as PyTorch's
// HuggingFaceStorageReader does (header + DCP_SHARDING_INFO) into the global tensors, and
// verified, resumed and refused.
#include "checkpoint/dcp_file.h"
#include "checkpoint/records.h"
#include "checkpoint_fixture.h"
#include "initrt/base/json_text.h"
#include "initrt/base/sharding.h"

namespace initrt::checkpoint_tests {
namespace {

using records::Json;
using records::makeDirectories;

class DcpLayoutTest : public CheckpointTest {
protected:
  const CheckpointLayout &layout = *checkpointLayout("dcp");

  /// Writes rank `rank`'s file as prog/init does: its writeBoxes, in the writer's order.
  void writeRank(const Program &program, int64_t rank,
                 const std::vector<std::vector<char>> &globals,
                 const std::string &baseStamps = "") {
    std::string error;
    ASSERT_TRUE(layout.prepareRank(dir, program, rank, false, error)) << error;
    std::vector<ShardTensor> tensors;
    std::vector<std::vector<char>> data;
    for (const ParamBox &box : writeBoxes(program, rank)) {
      ShardTensor tensor;
      tensor.param = &program.params[box.param];
      tensor.slice = box.box;
      data.push_back(localBytes(*tensor.param, globals[box.param], box.box));
      tensor.bytes = data.back().size();
      tensors.push_back(tensor);
    }
    std::unique_ptr<RankWriter> writer = layout.openRank(dir, program, rank, tensors, error, baseStamps);
    ASSERT_TRUE(writer) << error;
    for (size_t t : writer->writeOrder()) {
      // Two pieces where there are bytes enough: pieces follow one another within a box.
      uint64_t half = data[t].size() / 2;
      ASSERT_TRUE(writer->writePiece(t, 0, data[t].data(), half, error)) << error;
      ASSERT_TRUE(writer->writePiece(t, half, data[t].data() + half, data[t].size() - half, error))
          << error;
    }
    std::vector<std::string> checksums;
    ASSERT_TRUE(writer->finish(checksums, error)) << error;
    ASSERT_EQ(checksums.size(), tensors.size());
    for (size_t t = 0; t < tensors.size(); ++t)
      EXPECT_EQ(checksums[t], checksumHex(data[t].data(), data[t].size()));
  }

  std::vector<std::vector<char>> writeAllDcp(const Program &program) {
    std::vector<std::vector<char>> globals;
    for (size_t i = 0; i < program.params.size(); ++i)
      globals.push_back(globalBytes(program.params[i], i));
    std::string error;
    EXPECT_TRUE(layout.prepareDir(dir, program, false, error)) << error;
    for (int64_t rank = 0; rank < program.mesh.size(); ++rank)
      writeRank(program, rank, globals);
    EXPECT_TRUE(layout.finishJob(dir, program, {}, error)) << error;
    return globals;
  }

  /// The global tensors read back from the files alone, as DCP's reader places them (each
  /// file's header and DCP_SHARDING_INFO); fails the test on an element stored twice or never.
  void expectAssembles(const Program &program, const std::vector<std::vector<char>> &globals) {
    std::map<std::string, size_t> byName;
    for (size_t i = 0; i < program.params.size(); ++i)
      byName[program.params[i].name] = i;
    std::vector<std::vector<char>> read(globals.size());
    std::vector<std::vector<int>> hits(globals.size());
    for (size_t i = 0; i < globals.size(); ++i) {
      read[i].assign(globals[i].size(), 0);
      hits[i].assign(size_t(program.params[i].numElements()), 0);
    }
    int64_t world = program.mesh.size();
    std::set<std::string> seen;
    EXPECT_EQ(listDir(dir).size(), size_t(world)) << "one file per rank, nothing else";
    for (int64_t rank = 0; rank < world; ++rank) {
      SafetensorsReader reader;
      std::string error;
      ASSERT_TRUE(reader.open(dir + "/" + dcpFileName(rank, world), error)) << error;
      ASSERT_TRUE(reader.metadataValue("format"));
      EXPECT_EQ(*reader.metadataValue("format"), "pt");
      Json info;
      ASSERT_TRUE(parseJsonText(*reader.metadataValue("DCP_SHARDING_INFO"), info, error)) << error;
      EXPECT_EQ(info.size(), reader.tensors().size());
      for (const SafetensorsEntry &entry : reader.tensors()) {
        seen.insert(entry.name);
        size_t p = byName.at(entry.name);
        const Param &param = program.params[p];
        EXPECT_EQ(entry.dtype, dtypeName(param.dtype));
        Slice box{info.at(entry.name).at("saved_offsets").get<std::vector<int64_t>>(),
                  entry.shape};
        std::vector<char> bytes(entry.bytes());
        ASSERT_TRUE(reader.read(entry.begin, bytes.data(), bytes.size(), error)) << error;
        // Scatter the box into the global tensor, counting each element's writers.
        int64_t elementBytes = dtypeBytes(param.dtype);
        size_t dims = param.shape.size();
        std::vector<int64_t> index(dims, 0);
        for (int64_t local = 0; local < box.numElements(); ++local) {
          int64_t g = 0;
          for (size_t d = 0; d < dims; ++d)
            g = g * param.shape[d] + box.offset[d] + index[d];
          std::memcpy(read[p].data() + g * elementBytes, bytes.data() + local * elementBytes,
                      size_t(elementBytes));
          ++hits[p][size_t(g)];
          for (size_t d = dims; d-- > 0;) {
            if (++index[d] < box.shape[d])
              break;
            index[d] = 0;
          }
        }
      }
    }
    for (size_t p = 0; p < globals.size(); ++p) {
      if (!program.params[p].persistent)
        continue;
      // Every tensor of the model, empty ones too, is in some file for DCP's reader to find.
      EXPECT_TRUE(seen.count(program.params[p].name)) << program.params[p].name;
      EXPECT_EQ(read[p], globals[p]) << program.params[p].name;
      for (int count : hits[p])
        ASSERT_EQ(count, 1) << program.params[p].name << ": an element stored " << count
                            << " times";
    }
  }
};

TEST_F(DcpLayoutTest, RegisteredAndStoresEachElementOnce) {
  ASSERT_NE(checkpointLayout("dcp"), nullptr);
  EXPECT_FALSE(layout.storesReplicas());
  std::vector<std::string> names = checkpointLayoutNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "dcp"), names.end());
}

TEST_F(DcpLayoutTest, ShardingInfoIsSpelledAsTorchWritesIt) {
  // json.dumps({"a.w": {"saved_offsets": [0, 4]}, "\u00e9": {"saved_offsets": []}})
  EXPECT_EQ(dcpShardingInfoText({{"a.w", {0, 4}}, {"\xc3\xa9", {}}}),
            "{\"a.w\": {\"saved_offsets\": [0, 4]}, \"\\u00e9\": {\"saved_offsets\": []}}");
  EXPECT_EQ(dcpShardingInfoText({}), "{}");
  EXPECT_EQ(dcpFileName(3, 16), "shard-00003-of-00016.safetensors");
  int64_t rank, world;
  EXPECT_TRUE(parseDcpFileName("shard-00003-of-00016.safetensors", rank, world));
  EXPECT_EQ(rank, 3);
  EXPECT_EQ(world, 16);
  EXPECT_FALSE(parseDcpFileName("shard-00016-of-00016.safetensors", rank, world));
  EXPECT_FALSE(parseDcpFileName("rank-00003-of-00016.safetensors", rank, world));
}

TEST_F(DcpLayoutTest, FilesAssembleToTheGlobalTensors) {
  for (const Program &program : {tinyProgram(), gridProgram()}) {
    std::vector<std::vector<char>> globals = writeAllDcp(program);
    expectAssembles(program, globals);
    std::vector<std::string> problems;
    std::string error;
    EXPECT_TRUE(verifyCheckpoint(dir, problems, error)) << error << testing::PrintToString(problems);
    for (int64_t rank = 0; rank < program.mesh.size(); ++rank) {
      std::vector<std::string> checksums;
      std::string reason;
      EXPECT_EQ(layout.rankState(dir, program, rank, checksums, reason, nullptr, false),
                ShardState::Complete)
          << reason;
    }
    ASSERT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
  }
}

TEST_F(DcpLayoutTest, TheInitcRecordDescribesTheFile) {
  Program program = tinyProgram();
  writeAllDcp(program);
  SafetensorsReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(dir + "/" + dcpFileName(0, 2), error)) << error;
  DcpFileRecord record;
  ASSERT_TRUE(parseDcpMetadata(reader.metadata(), reader.path(), record, error)) << error;
  EXPECT_EQ(record.programId, program.programId);
  EXPECT_EQ(record.rank, 0);
  EXPECT_EQ(record.worldSize, 2);
  EXPECT_EQ(record.mesh.axisNames, program.mesh.axisNames);
  const DcpTensorRecord &w = record.tensors.at("w");
  EXPECT_EQ(w.globalShape, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(w.offset, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(w.index, 0);
  EXPECT_EQ(w.aliases, std::vector<std::string>{"w_tied"});
  EXPECT_EQ(record.tensors.at("s").index, 4); // "rope" is not persistent and comes after
  EXPECT_FALSE(record.tensors.count("rope"));
  EXPECT_EQ(*reader.metadataValue("DCP_VERSION"), "1.0");
}

TEST_F(DcpLayoutTest, ARankWithoutBoxesWritesAHeaderOnlyFile) {
  // dp=2 and one small replicated tensor: its first replica writes it all.
  Program program;
  program.modelName = "small";
  program.mesh.axisNames = {"dp"};
  program.mesh.shape = {2};
  program.programId = "00000000000000aa";
  program.params.push_back(makeParam("bias", DType::F32, {8}, {}));
  ASSERT_TRUE(writeBoxes(program, 1).empty());
  std::vector<std::vector<char>> globals = writeAllDcp(program);
  expectAssembles(program, globals);
  SafetensorsReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(dir + "/" + dcpFileName(1, 2), error)) << error;
  EXPECT_TRUE(reader.tensors().empty());
  EXPECT_EQ(*reader.metadataValue("DCP_SHARDING_INFO"), "{}");
  std::vector<std::string> problems;
  EXPECT_TRUE(verifyCheckpoint(dir, problems, error)) << testing::PrintToString(problems);
}

TEST_F(DcpLayoutTest, VerifyNamesTheDamagedTensorAndTheRepair) {
  Program program = gridProgram();
  writeAllDcp(program);
  std::string path = dir + "/" + dcpFileName(4, 6);
  struct stat info;
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  ASSERT_EQ(truncate(path.c_str(), info.st_size - 1), 0);
  std::vector<std::string> problems;
  std::string error;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  EXPECT_TRUE(error.empty()) << error;
  std::string all = testing::PrintToString(problems);
  EXPECT_NE(all.find("truncated"), std::string::npos) << all;
  EXPECT_NE(all.find("on rank 4"), std::string::npos) << all;
  EXPECT_NE(all.find("prog/init --rank 4 --out " + dir + " --layout dcp"), std::string::npos)
      << all;
  std::vector<std::string> checksums;
  std::string reason;
  EXPECT_EQ(layout.rankState(dir, program, 4, checksums, reason, nullptr, false),
            ShardState::Incomplete);

  // A changed byte: the tensor it is in, by its checksum.
  std::vector<std::vector<char>> globals;
  for (size_t i = 0; i < program.params.size(); ++i)
    globals.push_back(globalBytes(program.params[i], i));
  writeRank(program, 4, globals);
  SafetensorsReader reader;
  ASSERT_TRUE(reader.open(path, error)) << error;
  const std::string firstName = reader.tensors().front().name;
  uint64_t at = reader.dataStart() + reader.tensors().front().begin;
  reader = SafetensorsReader();
  int fd = open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char byte;
  ASSERT_EQ(pread(fd, &byte, 1, off_t(at)), 1);
  byte = char(~byte);
  ASSERT_EQ(pwrite(fd, &byte, 1, off_t(at)), 1);
  close(fd);
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  all = testing::PrintToString(problems);
  EXPECT_NE(all.find(firstName + " "), std::string::npos) << all;
  EXPECT_NE(all.find("checksum mismatch"), std::string::npos) << all;

  // A missing file: its rank, and the elements no file holds.
  ASSERT_EQ(unlink(path.c_str()), 0);
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  all = testing::PrintToString(problems);
  EXPECT_NE(all.find("rank 4 (shard-00004-of-00006.safetensors): missing"), std::string::npos)
      << all;
  EXPECT_NE(all.find("elements are in no file"), std::string::npos) << all;
}

TEST_F(DcpLayoutTest, AnotherLayoutOrProgramIsRefusedUnlessOverwrite) {
  Program program = tinyProgram();
  std::string error;
  ASSERT_TRUE(makeDirectories(dir, error)) << error;
  ASSERT_TRUE(writeFileAtomically(dir + "/index.json", "{}", error)) << error;
  EXPECT_FALSE(layout.prepareDir(dir, program, false, error));
  EXPECT_NE(error.find("index.json is a file of the ranks layout"), std::string::npos) << error;
  EXPECT_NE(error.find("--overwrite"), std::string::npos) << error;
  ASSERT_TRUE(layout.prepareDir(dir, program, true, error)) << error;
  EXPECT_TRUE(listDir(dir).empty());

  // Another program's file under this rank's name.
  Program other = tinyProgram();
  other.programId = "ffffffffffffffff";
  writeAllDcp(other);
  EXPECT_TRUE(layout.prepareDir(dir, program, false, error)) << error; // same world size
  EXPECT_FALSE(layout.prepareRank(dir, program, 0, false, error));
  EXPECT_NE(error.find("program id ffffffffffffffff"), std::string::npos) << error;
  ASSERT_TRUE(layout.prepareRank(dir, program, 0, true, error)) << error;
  EXPECT_EQ(access((dir + "/" + dcpFileName(0, 2)).c_str(), F_OK), -1);

  // Files of another world size, by their names.
  Program grid = gridProgram();
  EXPECT_FALSE(layout.prepareDir(dir, grid, false, error));
  EXPECT_NE(error.find("from a run with 2 ranks"), std::string::npos) << error;
}

TEST_F(DcpLayoutTest, VerifyNamesASafetensorsFileDcpWouldReadToo) {
  Program program = tinyProgram();
  writeAllDcp(program);
  std::string error;
  ASSERT_TRUE(writeFileAtomically(dir + "/model.safetensors", "x", error)) << error;
  std::vector<std::string> problems;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 1u) << testing::PrintToString(problems);
  EXPECT_NE(problems[0].find("model.safetensors is not a file of this checkpoint"),
            std::string::npos)
      << problems[0];
  // prog/init refuses such a directory too, and --overwrite clears it.
  EXPECT_FALSE(layout.prepareDir(dir, program, false, error));
  EXPECT_NE(error.find("DCP's reader would read it"), std::string::npos) << error;
}

TEST_F(DcpLayoutTest, ALinkToAnotherRanksFileIsRefused) {
  Program program = tinyProgram();
  writeAllDcp(program);
  std::string link = dir + "/" + dcpFileName(1, 2);
  ASSERT_EQ(unlink(link.c_str()), 0);
  ASSERT_EQ(symlink(dcpFileName(0, 2).c_str(), link.c_str()), 0);
  std::string error;
  EXPECT_FALSE(layout.prepareRank(dir, program, 1, false, error));
  EXPECT_NE(error.find("rank 0's file, so two ranks would write one file"), std::string::npos)
      << error;
}

TEST_F(DcpLayoutTest, AFileOfAnotherBaseVersionIsComputedAgain) {
  Program program = tinyProgram();
  std::vector<std::vector<char>> globals;
  for (size_t i = 0; i < program.params.size(); ++i)
    globals.push_back(globalBytes(program.params[i], i));
  std::string error;
  ASSERT_TRUE(layout.prepareDir(dir, program, false, error)) << error;
  const std::string stamps = R"({"/data/base.safetensors":"1-2-3"})";
  writeRank(program, 0, globals, stamps);
  std::vector<std::string> checksums;
  std::string reason;
  EXPECT_EQ(layout.rankState(dir, program, 0, checksums, reason, &stamps, false),
            ShardState::Complete)
      << reason;
  const std::string changed = R"({"/data/base.safetensors":"1-2-4"})";
  EXPECT_EQ(layout.rankState(dir, program, 0, checksums, reason, &changed, false),
            ShardState::BaseChanged);
  EXPECT_NE(reason.find("another version of /data/base.safetensors"), std::string::npos)
      << reason;
}

TEST_F(DcpLayoutTest, VerifyNamesAFileOfAnotherProgram) {
  Program program = tinyProgram();
  writeAllDcp(program);
  Program other = tinyProgram();
  other.programId = "ffffffffffffffff";
  std::vector<std::vector<char>> globals;
  for (size_t i = 0; i < other.params.size(); ++i)
    globals.push_back(globalBytes(other.params[i], i));
  std::string error;
  ASSERT_TRUE(layout.prepareRank(dir, other, 1, true, error)) << error;
  writeRank(other, 1, globals);
  std::vector<std::string> problems;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  std::string all = testing::PrintToString(problems);
  EXPECT_NE(all.find("rank 1 (shard-00001-of-00002.safetensors): belongs to another program "
                     "(program id ffffffffffffffff"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("--layout dcp --overwrite"), std::string::npos) << all;
  EXPECT_NE(all.find("elements are in no file"), std::string::npos) << all;
}

TEST_F(DcpLayoutTest, EveryRankMakesTheDirectoryWhereItRuns) {
  // On a host of its own, a rank finds no DIR: rank 0 made its own host's.
  Program program = tinyProgram();
  std::string error;
  ASSERT_TRUE(layout.prepareRank(dir + "/local", program, 1, false, error)) << error;
  struct stat info;
  EXPECT_EQ(stat((dir + "/local").c_str(), &info), 0);
  EXPECT_TRUE(S_ISDIR(info.st_mode));
}

} // namespace
} // namespace initrt::checkpoint_tests
