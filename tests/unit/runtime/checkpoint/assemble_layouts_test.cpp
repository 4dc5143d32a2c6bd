// assemble from every layout (ranks, hf, dcp) into one file and into an hf directory: the inputs
// are built here byte for byte as the layouts are specified (ir-spec/checkpoint.md), and the
// outputs compared bytewise with what save_pretrained's layout of the same tensors is.
#include "checkpoint_fixture.h"

#include "checkpoint/slice_source.h"
#include "initrt/base/hf_plan.h"
#include "initrt/base/sharding.h"

#include <map>

namespace {

using initrt::checkpoint_tests::CheckpointTest;
using initrt::checkpoint_tests::globalBytes;
using initrt::checkpoint_tests::listDir;
using initrt::checkpoint_tests::localBytes;
using initrt::checkpoint_tests::makeParam;

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

class AssembleLayoutsTest : public CheckpointTest {
protected:
  /// dp=2 x tp=2: boxes split on dim 0 and on dim 1, a slice large enough that its two
  /// replicas split its rows between them, ragged splits, a tie, a scalar.
  static Program meshProgram() {
    Program program;
    program.modelName = "mesh";
    program.seed = 7;
    program.mesh.axisNames = {"dp", "tp"};
    program.mesh.shape = {2, 2};
    program.programId = "00112233445566aa";
    program.hfConfig = "{\"model_type\": \"mesh\"}\n";
    // Split on dim 1 over tp; each slice (2 MiB and more) split by rows between its replicas.
    program.params.push_back(makeParam("big", DType::F32, {1024, 1040}, {{}, {1}}));
    program.params.push_back(makeParam("col", DType::BF16, {6, 10}, {{}, {1}}));
    program.params.back().aliases = {"col_tied"};
    program.params.push_back(makeParam("row", DType::F32, {7, 3}, {{1}}));
    program.params.push_back(makeParam("grid", DType::F32, {5, 6}, {{0}, {1}}));
    program.params.push_back(makeParam("bias", DType::F32, {3}, {}));
    program.params.push_back(makeParam("s", DType::F64, {}, {}));
    return program;
  }

  std::vector<std::vector<char>> globalsOf(const Program &program) {
    std::vector<std::vector<char>> globals;
    for (size_t i = 0; i < program.params.size(); ++i)
      globals.push_back(globalBytes(program.params[i], i));
    return globals;
  }

  /// The files save_pretrained writes for these tensors: name -> bytes.
  static std::map<std::string, std::string> expectedHfFiles(
      const Program &program, uint64_t maxShard, const std::vector<std::vector<char>> &globals) {
    HfPlan plan;
    std::string error;
    EXPECT_TRUE(planHfCheckpoint(program, maxShard, plan, error)) << error;
    std::map<std::string, std::string> files;
    for (size_t f = 0; f < plan.files.size(); ++f) {
      std::string bytes = plan.files[f].header;
      bytes.resize(size_t(plan.files[f].size), '\0');
      files[plan.files[f].name] = bytes;
    }
    for (size_t i = 0; i < program.params.size(); ++i) {
      const HfPlace &place = plan.places[i];
      std::string &bytes = files[plan.files[size_t(place.file)].name];
      EXPECT_EQ(place.bytes, globals[i].size());
      std::memcpy(bytes.data() + place.offset, globals[i].data(), globals[i].size());
    }
    return files;
  }

  /// Every rank's writeBoxes with the checksum of its bytes: param -> [(rank, box, checksum)].
  struct WrittenBox {
    int64_t rank;
    Slice box;
    std::string checksum;
    std::vector<char> bytes;
  };
  static std::vector<std::vector<WrittenBox>> writtenBoxes(
      const Program &program, const std::vector<std::vector<char>> &globals) {
    std::vector<std::vector<WrittenBox>> boxes(program.params.size());
    for (int64_t rank = 0; rank < program.mesh.size(); ++rank)
      for (const ParamBox &part : writeBoxes(program, rank)) {
        std::vector<char> bytes = localBytes(program.params[part.param], globals[part.param],
                                             part.box);
        boxes[part.param].push_back(
            {rank, part.box, checksumHex(bytes.data(), bytes.size()), bytes});
      }
    return boxes;
  }

  /// A sums file as ir-spec/checkpoint.md lays it out ("Sums files").
  static std::string sumsFile(const std::string &programId, int64_t rank, int64_t world,
                              const std::vector<std::string> &checksums) {
    std::string out = "INITCSUM";
    auto u64 = [&](uint64_t value) {
      for (int i = 0; i < 8; ++i)
        out.push_back(char(value >> (8 * i)));
    };
    u64(1 | uint64_t(programId.size()) << 32);
    u64(uint64_t(rank));
    u64(uint64_t(world));
    u64(checksums.size());
    out += programId;
    while (out.size() % 8)
      out.push_back('\0');
    for (const std::string &hex : checksums)
      u64(std::stoull(hex, nullptr, 16));
    u64(std::stoull(checksumHex(out.data(), out.size()), nullptr, 16));
    return out;
  }

  /// `path`, one file assemble wrote, holds every tensor of `program` as `globals`.
  static void expectOneFile(const std::string &path, const Program &program,
                            const std::vector<std::vector<char>> &globals,
                            SafetensorsReader &reader) {
    std::string error;
    ASSERT_TRUE(reader.open(path, error)) << error;
    for (size_t i = 0; i < program.params.size(); ++i) {
      const SafetensorsEntry *entry = reader.find(program.params[i].name);
      ASSERT_NE(entry, nullptr);
      std::vector<char> bytes(entry->bytes());
      ASSERT_TRUE(reader.read(entry->begin, bytes.data(), bytes.size(), error)) << error;
      EXPECT_EQ(bytes, globals[i]) << program.params[i].name;
    }
  }

  /// An hf checkpoint as prog/init --layout hf writes it: its record and every rank's sums.
  void writeHfInput(const std::string &out, const Program &program, uint64_t maxShard,
                    const std::vector<std::vector<char>> &globals) {
    ASSERT_EQ(mkdir(out.c_str(), 0755), 0);
    HfPlan plan;
    std::string error;
    ASSERT_TRUE(planHfCheckpoint(program, maxShard, plan, error)) << error;
    for (const auto &[name, bytes] : expectedHfFiles(program, maxShard, globals))
      writeText(out + "/" + name, bytes);
    writeText(out + "/model.safetensors.index.json", hfIndexJson(program, plan));
    writeText(out + "/config.json", program.hfConfig);
    ASSERT_EQ(mkdir((out + "/.initc").c_str(), 0755), 0);
    std::vector<std::vector<std::string>> sums(size_t(program.mesh.size()));
    for (const std::vector<WrittenBox> &boxes : writtenBoxes(program, globals))
      for (const WrittenBox &box : boxes) // param order within each rank: writeBoxes order
        sums[size_t(box.rank)].push_back(box.checksum);
    for (int64_t rank = 0; rank < program.mesh.size(); ++rank)
      writeText(out + "/.initc/" + sumsName(rank),
                sumsFile(program.programId, rank, program.mesh.size(), sums[size_t(rank)]));
    writeText(out + "/initc-checkpoint.json",
              expectedRecord(program, plan, maxShard, false).dump(1));
  }

  static std::string sumsName(int64_t rank) {
    char name[32];
    std::snprintf(name, sizeof name, "rank-%05lld.sums", (long long)rank);
    return name;
  }

  /// initc-checkpoint.json of `program`: as prog/init writes it, or with `whole`, as assemble
  /// does (one rank that wrote every tensor whole).
  static nlohmann::ordered_json expectedRecord(const Program &program, const HfPlan &plan,
                                               uint64_t maxShard, bool whole) {
    nlohmann::ordered_json record;
    record["format"] = "initc-hf";
    record["version"] = 2;
    record["program_id"] = program.programId;
    record["model"] = program.modelName;
    record["mesh"] = whole ? nlohmann::ordered_json{{"axes", nlohmann::ordered_json::array()},
                                                   {"shape", nlohmann::ordered_json::array()}}
                           : nlohmann::ordered_json{{"axes", program.mesh.axisNames},
                                                   {"shape", program.mesh.shape}};
    record["max_shard_size"] = maxShard;
    record["write_boxes"] = {{"rule", "replicas-split-rows"}, {"min_box_bytes", 1 << 20}};
    record["sums"] = {{"dir", ".initc"}, {"ranks", whole ? 1 : program.mesh.size()}};
    record["files"] = nlohmann::ordered_json::array();
    for (const HfFile &file : plan.files)
      record["files"].push_back({{"name", file.name}, {"size", file.size}});
    record["tensors"] = nlohmann::ordered_json::object();
    for (size_t i = 0; i < program.params.size(); ++i) {
      const Param &param = program.params[i];
      std::vector<std::vector<int>> split = whole ? std::vector<std::vector<int>>() : param.splitAxes;
      while (!split.empty() && split.back().empty())
        split.pop_back();
      record["tensors"][param.name] = {{"index", i},
                                       {"file", plan.files[size_t(plan.places[i].file)].name},
                                       {"dtype", dtypeName(param.dtype)},
                                       {"shape", param.shape},
                                       {"aliases", param.aliases},
                                       {"offset", plan.places[i].offset},
                                       {"split_axes", split}};
    }
    return record;
  }

  /// A dcp checkpoint as prog/init --layout dcp writes it: one file per rank of its boxes.
  void writeDcpInput(const std::string &out, const Program &program,
                     const std::vector<std::vector<char>> &globals) {
    ASSERT_EQ(mkdir(out.c_str(), 0755), 0);
    const int64_t world = program.mesh.size();
    std::vector<std::vector<WrittenBox>> boxes = writtenBoxes(program, globals);
    for (int64_t rank = 0; rank < world; ++rank) {
      std::vector<SafetensorsTensor> tensors;
      nlohmann::ordered_json sharding = nlohmann::ordered_json::object();
      nlohmann::ordered_json records = nlohmann::ordered_json::object();
      for (size_t i = 0; i < program.params.size(); ++i)
        for (const WrittenBox &box : boxes[i]) {
          if (box.rank != rank)
            continue;
          const Param &param = program.params[i];
          tensors.push_back({param.name, dtypeName(param.dtype), box.box.shape, box.bytes.data(),
                             box.bytes.size()});
          sharding[param.name] = {{"saved_offsets", box.box.offset}};
          records[param.name] = {{"global_shape", param.shape},
                                 {"checksum", box.checksum},
                                 {"index", i},
                                 {"aliases", param.aliases}};
        }
      nlohmann::ordered_json initc = {
          {"format", "initc-dcp"},
          {"version", 1},
          {"program_id", program.programId},
          {"rank", rank},
          {"world_size", world},
          {"mesh", {{"axes", program.mesh.axisNames}, {"shape", program.mesh.shape}}},
          {"tensors", records}};
      SafetensorsMetadata metadata = {{"format", "pt"},
                                      {"DCP_SHARDING_INFO", sharding.dump()},
                                      {"initc", initc.dump()}};
      char name[64];
      std::snprintf(name, sizeof(name), "/shard-%05lld-of-%05lld.safetensors", (long long)rank,
                    (long long)world);
      std::string error;
      ASSERT_TRUE(writeSafetensors(out + name, tensors, metadata, error)) << error;
    }
  }

  /// `out` is exactly the hf checkpoint of these tensors: its files, index, record, config.
  void expectHfOutput(const std::string &out, const Program &program, uint64_t maxShard,
                      const std::vector<std::vector<char>> &globals, bool config) {
    std::map<std::string, std::string> files = expectedHfFiles(program, maxShard, globals);
    std::vector<std::string> names;
    for (const auto &[name, bytes] : files)
      names.push_back(name);
    names.push_back(".initc");
    names.push_back("initc-checkpoint.json");
    names.push_back("model.safetensors.index.json");
    if (config)
      names.push_back("config.json");
    std::sort(names.begin(), names.end());
    EXPECT_EQ(listDir(out), names);
    for (const auto &[name, bytes] : files)
      EXPECT_TRUE(readAll(out + "/" + name) == bytes) << name << " differs";
    HfPlan plan;
    std::string error;
    ASSERT_TRUE(planHfCheckpoint(program, maxShard, plan, error)) << error;
    EXPECT_EQ(readAll(out + "/model.safetensors.index.json"), hfIndexJson(program, plan));
    if (config)
      EXPECT_EQ(readAll(out + "/config.json"), program.hfConfig);
    EXPECT_EQ(nlohmann::ordered_json::parse(readAll(out + "/initc-checkpoint.json")),
              expectedRecord(program, plan, maxShard, true));
    // One rank wrote every tensor whole: the checksum of each (with elements), in order.
    std::vector<std::string> sums;
    for (const std::vector<char> &bytes : globals)
      if (!bytes.empty())
        sums.push_back(checksumHex(bytes.data(), bytes.size()));
    EXPECT_EQ(listDir(out + "/.initc"), std::vector<std::string>{sumsName(0)});
    EXPECT_TRUE(readAll(out + "/.initc/" + sumsName(0)) ==
                sumsFile(program.programId, 0, 1, sums));
  }
};

TEST_F(AssembleLayoutsTest, TheProgramSplitsAsTheTestsNeed) {
  Program program = meshProgram();
  std::vector<std::vector<WrittenBox>> boxes = writtenBoxes(program, globalsOf(program));
  // "big": each tp slice [1024, 520] is split by rows between its two replicas.
  ASSERT_EQ(boxes[0].size(), 4u);
  EXPECT_EQ(boxes[0][0].box.shape, (std::vector<int64_t>{512, 520}));
  EXPECT_EQ(boxes[0][2].box.offset, (std::vector<int64_t>{512, 0}));
  EXPECT_EQ(boxes[0][3].box.offset, (std::vector<int64_t>{512, 520}));
  // "col" on dim 1, "row" on dim 0 (ragged), "bias" and "s" by rank 0 alone.
  EXPECT_EQ(boxes[1][1].box.offset, (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(boxes[2][1].box.shape, (std::vector<int64_t>{3, 3}));
  ASSERT_EQ(boxes[4].size(), 1u);
  EXPECT_EQ(boxes[4][0].rank, 0);
  ASSERT_EQ(boxes[5].size(), 1u);
}

TEST_F(AssembleLayoutsTest, RanksIntoHfDirectory) {
  Program program = meshProgram();
  std::vector<std::vector<char>> globals = writeAll(program);
  const uint64_t maxShard = 1000000; // "big" alone, the rest in a second file
  AssembleOptions options;
  options.maxShardBytes = maxShard;
  options.bandBytes = 4096;
  std::string error, out = root + "/hf";
  ASSERT_TRUE(assembleCheckpoint(dir, out, error, {}, options)) << error;
  HfPlan plan;
  ASSERT_TRUE(planHfCheckpoint(program, maxShard, plan, error)) << error;
  EXPECT_EQ(plan.files.size(), 2u);
  expectHfOutput(out, program, maxShard, globals, /*config=*/false);

  // Again into the same directory, now one file: the earlier files go.
  ASSERT_TRUE(assembleCheckpoint(dir, out, error)) << error;
  expectHfOutput(out, program, kDefaultMaxShardBytes, globals, false);
  // A config.json put beside the weights is kept (a ranks checkpoint has none).
  writeText(out + "/config.json", program.hfConfig);
  ASSERT_TRUE(assembleCheckpoint(dir, out, error, {}, options)) << error;
  expectHfOutput(out, program, maxShard, globals, true);
}

TEST_F(AssembleLayoutsTest, HfIntoHfDirectoryAndOneFile) {
  Program program = meshProgram();
  std::vector<std::vector<char>> globals = globalsOf(program);
  std::string in = root + "/in", error;
  writeHfInput(in, program, kDefaultMaxShardBytes, globals);
  for (uint64_t band : {uint64_t(8), uint64_t(1000), uint64_t(32) << 20}) {
    AssembleOptions options;
    options.maxShardBytes = 2000;
    options.bandBytes = band;
    std::string out = root + "/out-" + std::to_string(band);
    ASSERT_TRUE(assembleCheckpoint(in, out, error, {}, options)) << error;
    expectHfOutput(out, program, 2000, globals, /*config=*/true);
  }
  // And the hf output, read as a source, gives the same one file as its tensors.
  std::string model = root + "/model.safetensors";
  ASSERT_TRUE(assembleCheckpoint(root + "/out-8", model, error)) << error;
  SafetensorsReader reader;
  expectOneFile(model, program, globals, reader);
  EXPECT_EQ(nlohmann::json::parse(*reader.metadataValue("initc.aliases")),
            nlohmann::json::parse(R"({"col_tied":"col"})"));
}

TEST_F(AssembleLayoutsTest, DcpIntoHfDirectory) {
  Program program = meshProgram();
  std::vector<std::vector<char>> globals = globalsOf(program);
  std::string in = root + "/dcp", error;
  writeDcpInput(in, program, globals);
  for (uint64_t band : {uint64_t(4), uint64_t(2080), uint64_t(32) << 20}) {
    AssembleOptions options;
    options.maxShardBytes = 600;
    options.bandBytes = band;
    std::string out = root + "/out-" + std::to_string(band);
    ASSERT_TRUE(assembleCheckpoint(in, out, error, {}, options)) << error;
    Program unnamed = program; // a dcp file does not record the model's name
    unnamed.modelName = "";
    expectHfOutput(out, unnamed, 600, globals, /*config=*/false);
  }
  // The same model written by the ranks layout assembles to the same bytes.
  writeAll(program);
  std::string fromRanks = root + "/ranks.safetensors", fromDcp = root + "/dcp.safetensors";
  ASSERT_TRUE(assembleCheckpoint(dir, fromRanks, error)) << error;
  ASSERT_TRUE(assembleCheckpoint(in, fromDcp, error)) << error;
  EXPECT_TRUE(readAll(fromRanks) == readAll(fromDcp));
}

// An MoE model written per expert reads back as the stacked one: every box of every tensor the
// same bytes, and assembled into the stacked format again the same files byte for byte.
TEST_F(AssembleLayoutsTest, PerExpertHfReadsBackAsTheStacked) {
  Program program;
  program.modelName = "moe";
  program.mesh.axisNames = {"ep", "tp"};
  program.mesh.shape = {2, 2};
  program.programId = "00112233445566bb";
  program.hfConfig = "{\"model_type\": \"qwen3_moe\"}\n";
  program.params.push_back(makeParam("model.embed_tokens.weight", DType::F32, {7, 3}, {{1}}));
  // Rows over tp: a box crosses every expert, its runs cut where each expert's tensor ends.
  program.params.push_back(
      makeParam("model.layers.0.mlp.experts.gate_up_proj", DType::BF16, {4, 6, 5}, {{}, {1}}));
  // Experts over ep, columns over tp: runs shorter than a piece.
  program.params.push_back(
      makeParam("model.layers.0.mlp.experts.down_proj", DType::F32, {4, 5, 4}, {{0}, {}, {1}}));
  std::vector<std::vector<char>> globals = globalsOf(program);
  std::string in = root + "/in", stacked = root + "/stacked", per = root + "/per",
              back = root + "/back", error;
  writeHfInput(in, program, kDefaultMaxShardBytes, globals);
  AssembleOptions options;
  options.maxShardBytes = 150; // pieces spread over several files
  options.bandBytes = 16;
  options.hfExpertsGiven = true;
  options.hfExperts = HfExperts::Stacked;
  ASSERT_TRUE(assembleCheckpoint(in, stacked, error, {}, options)) << error;
  options.hfExperts = HfExperts::PerExpert;
  ASSERT_TRUE(assembleCheckpoint(in, per, error, {}, options)) << error;
  ASSERT_NE(readAll(per + "/model.safetensors.index.json").find("experts.3.up_proj.weight"),
            std::string::npos);

  std::unique_ptr<SliceSource> a = openHfSource(stacked, error);
  ASSERT_TRUE(a) << error;
  std::unique_ptr<SliceSource> b = openHfSource(per, error);
  ASSERT_TRUE(b) << error;
  ASSERT_EQ(a->tensors().size(), b->tensors().size());
  for (size_t i = 0; i < a->tensors().size(); ++i) {
    std::vector<StoredBox> boxesA, boxesB;
    ASSERT_TRUE(a->boxes(i, boxesA, error) && b->boxes(i, boxesB, error)) << error;
    ASSERT_EQ(boxesA.size(), boxesB.size());
    const uint64_t element = uint64_t(dtypeBytes(program.params[i].dtype));
    for (size_t k = 0; k < boxesA.size(); ++k) {
      EXPECT_EQ(boxesA[k].offset, boxesB[k].offset);
      EXPECT_EQ(boxesA[k].checksum, boxesB[k].checksum);
      const uint64_t bytes = uint64_t(Slice{boxesA[k].offset, boxesA[k].shape}.numElements()) * element;
      std::vector<char> x(bytes), y(bytes);
      ASSERT_TRUE(a->readBox(boxesA[k], element, 0, x.data(), bytes, error)) << error;
      // In reads of every length, each cut where a run or a piece ends.
      for (uint64_t from = 0, step = 1; from < bytes; from += step, step = step % 37 + 3)
        ASSERT_TRUE(b->readBox(boxesB[k], element, from, y.data() + from,
                               std::min(step, bytes - from), error))
            << error;
      EXPECT_EQ(x, y) << program.params[i].name;
      EXPECT_EQ(x, globals[i]) << program.params[i].name;
    }
  }
  a.reset();
  b.reset();

  // Per expert -> stacked: the stacked directory byte for byte; -> one file: the tensors.
  options.hfExperts = HfExperts::Stacked;
  ASSERT_TRUE(assembleCheckpoint(per, back, error, {}, options)) << error;
  std::vector<std::string> names = listDir(stacked);
  EXPECT_EQ(listDir(back), names);
  names.push_back(".initc/" + sumsName(0));
  for (const std::string &name : names)
    if (name != ".initc")
      EXPECT_EQ(readAll(back + "/" + name), readAll(stacked + "/" + name)) << name;
  ASSERT_TRUE(assembleCheckpoint(per, root + "/model.safetensors", error)) << error;
  SafetensorsReader reader;
  expectOneFile(root + "/model.safetensors", program, globals, reader);

  // A piece changed: the box that holds it fails its checksum, naming its files and the rerun.
  HfPlan plan;
  ASSERT_TRUE(planHfCheckpoint(program, 150, plan, error, HfExperts::PerExpert)) << error;
  const HfPiece &piece = plan.places[1].pieces.at(5);
  const std::string damaged = per + "/" + plan.files[size_t(piece.file)].name;
  std::string bytes = readAll(damaged);
  bytes[size_t(piece.offset + 1)] ^= 0x10;
  writeText(damaged, bytes);
  EXPECT_FALSE(assembleCheckpoint(per, root + "/bad.safetensors", error));
  EXPECT_NE(error.find("checksum mismatch"), std::string::npos) << error;
  EXPECT_NE(error.find(plan.files[size_t(piece.file)].name), std::string::npos) << error;
  EXPECT_NE(error.find("rerun"), std::string::npos) << error;
  // Truncated: refused when opened, naming the file.
  writeText(damaged, bytes.substr(0, size_t(piece.offset)));
  EXPECT_FALSE(openHfSource(per, error));
  EXPECT_NE(error.find(damaged + ": "), std::string::npos) << error;
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
  EXPECT_NE(error.find("rerun the whole job"), std::string::npos) << error;
}

TEST_F(AssembleLayoutsTest, RefusesCorruptIncompleteAndMisplaced) {
  Program program = meshProgram();
  std::vector<std::vector<char>> globals = globalsOf(program);
  std::string dcp = root + "/dcp", hf = root + "/hf", error;
  writeDcpInput(dcp, program, globals);
  writeHfInput(hf, program, 2000, globals);

  // A flipped bit in one box: the box is named, and nothing is left under a final name.
  std::string shard = dcp + "/shard-00003-of-00004.safetensors";
  {
    SafetensorsReader reader;
    ASSERT_TRUE(reader.open(shard, error)) << error;
    uint64_t at = reader.dataStart() + reader.find("big")->begin + 1000;
    int fd = open(shard.c_str(), O_RDWR);
    char byte;
    ASSERT_EQ(pread(fd, &byte, 1, off_t(at)), 1);
    byte ^= 4;
    ASSERT_EQ(pwrite(fd, &byte, 1, off_t(at)), 1);
    close(fd);
  }
  std::string out = root + "/out";
  EXPECT_FALSE(assembleCheckpoint(dcp, out, error));
  EXPECT_NE(error.find("big on rank 3 (shard-00003-of-00004.safetensors): checksum mismatch"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("--layout dcp --rank 3"), std::string::npos) << error;
  EXPECT_TRUE(listDir(out).empty()) << listDir(out).front();
  EXPECT_FALSE(assembleCheckpoint(dcp, root + "/one.safetensors", error));
  EXPECT_EQ(access((root + "/one.safetensors").c_str(), F_OK), -1);

  // A box of an hf checkpoint corrupt: named by tensor, box and writer rank.
  {
    HfPlan plan;
    ASSERT_TRUE(planHfCheckpoint(program, 2000, plan, error)) << error;
    std::string file = hf + "/" + plan.files[size_t(plan.places[2].file)].name;
    int fd = open(file.c_str(), O_RDWR);
    char byte = 0x5a; // "row", its last element: rank 1's box (tp 1, dp 0)
    ASSERT_EQ(pwrite(fd, &byte, 1, off_t(plan.places[2].offset + 7 * 3 * 4 - 1)), 1);
    close(fd);
    EXPECT_FALSE(assembleCheckpoint(hf, out, error));
    EXPECT_NE(error.find("row box at [4, 0] by rank 1 (" + plan.files[size_t(plan.places[2].file)].name +
                         "): checksum mismatch"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("--layout hf --rank 1"), std::string::npos) << error;
  }

  // Half-written: a dcp rank's file missing; an hf directory without its record.
  ASSERT_EQ(unlink((dcp + "/shard-00001-of-00004.safetensors").c_str()), 0);
  EXPECT_FALSE(assembleCheckpoint(dcp, out, error));
  EXPECT_NE(error.find("not completely written: shard-00001-of-00004.safetensors is missing"),
            std::string::npos)
      << error;
  std::string record = readAll(hf + "/initc-checkpoint.json");
  ASSERT_EQ(unlink((hf + "/initc-checkpoint.json").c_str()), 0);
  EXPECT_FALSE(assembleCheckpoint(hf, out, error));
  EXPECT_NE(error.find("is an hf checkpoint not completely written"), std::string::npos) << error;
  writeText(hf + "/initc-checkpoint.json", record);
  // A directory that is no checkpoint.
  std::string other = root + "/other";
  ASSERT_EQ(mkdir(other.c_str(), 0755), 0);
  EXPECT_FALSE(assembleCheckpoint(other, out, error));
  EXPECT_NE(error.find("is not a checkpoint"), std::string::npos) << error;

  // Outputs inside the checkpoint, or over its files, or a directory holding other files.
  EXPECT_FALSE(assembleCheckpoint(hf, hf, error));
  EXPECT_NE(error.find("is inside the checkpoint"), std::string::npos) << error;
  EXPECT_FALSE(assembleCheckpoint(hf, hf + "/sub", error));
  EXPECT_NE(error.find("is inside the checkpoint"), std::string::npos) << error;
  EXPECT_FALSE(assembleCheckpoint(hf, hf + "/model-00001-of-00002.safetensors", error));
  EXPECT_NE(error.find("is the checkpoint's own model-00001-of-00002.safetensors"),
            std::string::npos)
      << error;
  EXPECT_FALSE(assembleCheckpoint(hf, hf + "/model.safetensors.index.json", error));
  EXPECT_NE(error.find("is the checkpoint's own model.safetensors.index.json"), std::string::npos)
      << error;
  writeText(other + "/notes.txt", "mine");
  EXPECT_FALSE(assembleCheckpoint(hf, other, error));
  EXPECT_NE(error.find("holds notes.txt, which is not a file of an hf checkpoint"),
            std::string::npos)
      << error;
  EXPECT_EQ(readAll(other + "/notes.txt"), "mine");
}

} // namespace

namespace {

// A pipe cannot take bytes back: from an hf checkpoint too, every box is checked before the
// first byte goes out (the corrupt one here is a box split on dim 1, read row by row).
TEST_F(AssembleLayoutsTest, PipeGetsNothingFromACorruptHfCheckpoint) {
  Program program = meshProgram();
  program.params.erase(program.params.begin()); // small enough for the pipe's buffer
  std::vector<std::vector<char>> globals = globalsOf(program);
  std::string hf = root + "/hf", error, fifo = root + "/model.fifo";
  writeHfInput(hf, program, kDefaultMaxShardBytes, globals);
  HfPlan plan;
  ASSERT_TRUE(planHfCheckpoint(program, kDefaultMaxShardBytes, plan, error)) << error;
  {
    // "col" [6, 10] BF16, its element [5, 9]: rank 1's box at [0, 5].
    int fd = open((hf + "/" + plan.files[0].name).c_str(), O_RDWR);
    char byte;
    off_t at = off_t(plan.places[0].offset + (5 * 10 + 9) * 2);
    ASSERT_EQ(pread(fd, &byte, 1, at), 1);
    byte ^= 1;
    ASSERT_EQ(pwrite(fd, &byte, 1, at), 1);
    close(fd);
  }
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  EXPECT_FALSE(assembleCheckpoint(hf, fifo, error));
  EXPECT_NE(error.find("col box at [0, 5] by rank 1 (" + plan.files[0].name +
                       "): checksum mismatch"),
            std::string::npos)
      << error;
  char byte;
  EXPECT_LE(::read(reader, &byte, 1), 0) << "the pipe got bytes of a corrupt checkpoint";
  ::close(reader);
}

} // namespace

namespace {

// A dcp checkpoint is the set of files in the directory: one of another job among them, or boxes
// that do not tile their tensor, are refused before anything is written.
TEST_F(AssembleLayoutsTest, DcpFilesOfAnotherJobOrThatDoNotTileAreRefused) {
  Program program = meshProgram();
  program.params.erase(program.params.begin());
  std::vector<std::vector<char>> globals = globalsOf(program);
  std::string dcp = root + "/dcp", other = root + "/other", error, out = root + "/out";
  writeDcpInput(dcp, program, globals);
  Program another = program;
  another.programId = "ffeeddccbbaa9988";
  writeDcpInput(other, another, globals);
  const std::string name = "/shard-00002-of-00004.safetensors";
  std::string mine = readAll(dcp + name);
  writeText(dcp + name, readAll(other + name));
  EXPECT_FALSE(assembleCheckpoint(dcp, out, error));
  EXPECT_NE(error.find("shard-00002-of-00004.safetensors is another program's (program_id "
                       "ffeeddccbbaa9988"),
            std::string::npos)
      << error;

  // Rank 1's box of "col" moved onto rank 0's: [0, 0] twice, [0, 5] never.
  writeText(dcp + name, mine);
  {
    SafetensorsReader reader;
    ASSERT_TRUE(reader.open(dcp + "/shard-00001-of-00004.safetensors", error)) << error;
    std::vector<SafetensorsTensor> tensors;
    std::vector<std::vector<char>> bytes;
    for (const SafetensorsEntry &entry : reader.tensors()) {
      bytes.emplace_back(entry.bytes());
      ASSERT_TRUE(reader.read(entry.begin, bytes.back().data(), entry.bytes(), error)) << error;
    }
    for (size_t i = 0; i < reader.tensors().size(); ++i) {
      const SafetensorsEntry &entry = reader.tensors()[i];
      tensors.push_back({entry.name, entry.dtype, entry.shape, bytes[i].data(), bytes[i].size()});
    }
    nlohmann::json sharding = nlohmann::json::parse(*reader.metadataValue("DCP_SHARDING_INFO"));
    ASSERT_EQ(sharding["col"]["saved_offsets"], nlohmann::json({0, 5}));
    sharding["col"]["saved_offsets"] = {0, 0};
    SafetensorsMetadata metadata = {{"format", "pt"},
                                    {"DCP_SHARDING_INFO", sharding.dump()},
                                    {"initc", *reader.metadataValue("initc")}};
    ASSERT_TRUE(writeSafetensors(dcp + "/shard-00001-of-00004.safetensors", tensors, metadata,
                                 error))
        << error;
  }
  EXPECT_FALSE(assembleCheckpoint(dcp, out, error));
  EXPECT_NE(error.find("col on rank 0 (shard-00000-of-00004.safetensors) and col on rank 1 "
                       "(shard-00001-of-00004.safetensors) overlap"),
            std::string::npos)
      << error;
  EXPECT_TRUE(listDir(out).empty());
}

} // namespace
