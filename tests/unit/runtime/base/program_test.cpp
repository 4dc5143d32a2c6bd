// program.json: round trip and every validation error.
#include "initrt/base/program_io.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace initrt;
using nlohmann::json;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

Program sampleProgram() {
  Program program;
  program.modelName = "tiny-llama";
  program.seed = 42;
  program.mesh.axisNames = {"dp", "tp"};
  program.mesh.shape = {2, 4};
  program.kernelsChecksum = "0123456789abcdef";
  program.kernelVariants = {{"x86-64-v4", "", {"avx2", "avx512f"}},
                            {"x86-64-v3", ".x86_64_v3", {"avx2"}}};
  program.programId = "p-1";
  Param embed;
  embed.name = "model.embed_tokens.weight";
  embed.aliases = {"lm_head.weight"};
  embed.dtype = DType::BF16;
  embed.shape = {32000, 4096};
  embed.splitAxes = {{1, 0}};
  embed.kernel = "k0";
  Param inv;
  inv.name = "rotary.inv_freq";
  inv.dtype = DType::F32;
  inv.shape = {64};
  inv.kernel = "k1";
  inv.buffer = true;
  inv.persistent = false;
  Param scalar;
  scalar.name = "scale";
  scalar.dtype = DType::F64;
  scalar.kernel = "k2";
  Param loaded; // read from a base checkpoint: no kernel
  loaded.name = "base.w";
  loaded.dtype = DType::BF16;
  loaded.shape = {8, 4};
  loaded.splitAxes = {{}, {1}};
  loaded.load = Param::Load{"base/model.safetensors.index.json", "w"};
  program.params = {embed, inv, scalar, loaded};
  return program;
}

json sampleJson() { return json::parse(programToJson(sampleProgram())); }

std::string parseError(const json &document) {
  Program program;
  std::string error;
  EXPECT_FALSE(parseProgramJson(document.dump(), "prog/program.json", program, error))
      << document.dump();
  return error;
}

void expectEqual(const Program &a, const Program &b) {
  EXPECT_EQ(a.modelName, b.modelName);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.mesh.axisNames, b.mesh.axisNames);
  EXPECT_EQ(a.mesh.shape, b.mesh.shape);
  EXPECT_EQ(a.kernelsFile, b.kernelsFile);
  EXPECT_EQ(a.kernelsChecksum, b.kernelsChecksum);
  ASSERT_EQ(a.kernelVariants.size(), b.kernelVariants.size());
  for (size_t v = 0; v < a.kernelVariants.size(); ++v) {
    EXPECT_EQ(a.kernelVariants[v].targetCpu, b.kernelVariants[v].targetCpu);
    EXPECT_EQ(a.kernelVariants[v].suffix, b.kernelVariants[v].suffix);
    EXPECT_EQ(a.kernelVariants[v].extensions, b.kernelVariants[v].extensions);
  }
  EXPECT_EQ(a.programId, b.programId);
  EXPECT_EQ(a.hfConfig, b.hfConfig);
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    const Param &x = a.params[i], &y = b.params[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.aliases, y.aliases);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(x.shape, y.shape);
    EXPECT_EQ(x.splitAxes, y.splitAxes);
    EXPECT_EQ(x.kernel, y.kernel);
    EXPECT_EQ(x.buffer, y.buffer);
    EXPECT_EQ(x.persistent, y.persistent);
    ASSERT_EQ(x.load.has_value(), y.load.has_value());
    if (x.load) {
      EXPECT_EQ(x.load->file, y.load->file);
      EXPECT_EQ(x.load->tensor, y.load->tensor);
    }
  }
}

} // namespace

TEST(DType, NamesSizesAndParsing) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64, DType::BOOL, DType::I64}) {
    DType parsed;
    ASSERT_TRUE(parseDType(dtypeName(dtype), parsed));
    EXPECT_EQ(parsed, dtype);
  }
  EXPECT_EQ(dtypeBytes(DType::BF16), 2);
  EXPECT_EQ(dtypeBytes(DType::BOOL), 1);
  EXPECT_EQ(dtypeBytes(DType::I64), 8);
  DType parsed;
  EXPECT_FALSE(parseDType("f32", parsed));
}

TEST(ProgramJson, RoundTripsThroughAFile) {
  char dir[] = "/tmp/initrt-program-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string error;
  Program program = sampleProgram();
  ASSERT_TRUE(writeProgramJson(std::string(dir) + "/program.json", program, error)) << error;
  Program read;
  ASSERT_TRUE(readProgram(dir, read, error)) << error;
  expectEqual(program, read);
  EXPECT_EQ(read.params[0].numElements(), 32000 * 4096);
  EXPECT_EQ(read.mesh.size(), 8);
  // No temporary file is left behind.
  EXPECT_EQ(std::system((std::string("test $(ls -A ") + dir + " | wc -l) -eq 1").c_str()), 0);
  std::system((std::string("rm -rf ") + dir).c_str());
}

TEST(ProgramJson, TheFileIsTheProgramWithItsChecksumAsTheLastMember) {
  char dir[] = "/tmp/initrt-program-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/program.json";
  Program program = sampleProgram();
  Param orthogonal; // a double, and a name that is not UTF-8 (replaced as it is written)
  orthogonal.name = "w\xff.q";
  orthogonal.dtype = DType::F32;
  orthogonal.shape = {4, 4};
  orthogonal.kernel = "k3";
  orthogonal.transform = "orthogonal";
  orthogonal.gain = 1.0 / 3.0;
  program.params.push_back(orthogonal);
  std::string error;
  ASSERT_TRUE(writeProgramJson(path, program, error)) << error;
  std::ifstream in(path);
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The spec's layout: programToJson's document, one more member, dumped the same way.
  nlohmann::ordered_json document = nlohmann::ordered_json::parse(programToJson(program));
  document["checksum"] = programChecksum(program);
  EXPECT_EQ(written,
            document.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
  Program read;
  EXPECT_TRUE(readProgram(dir, read, error)) << error;
  EXPECT_EQ(read.params.back().gain, 1.0 / 3.0);
  std::system((std::string("rm -rf ") + dir).c_str());
}

TEST(ProgramJson, TheChecksumCoversTheContentsWhateverTheLayout) {
  char dir[] = "/tmp/initrt-program-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/program.json";
  std::string error;
  Program program = sampleProgram();
  ASSERT_TRUE(writeProgramJson(path, program, error)) << error;
  std::ifstream in(path);
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto readText = [&](const std::string &text) {
    std::ofstream(path, std::ios::trunc) << text;
    Program read;
    error.clear();
    return readProgram(dir, read, error);
  };
  // Laid out otherwise, the same contents are the same program.
  EXPECT_TRUE(readText(json::parse(written).dump(4))) << error;
  EXPECT_TRUE(readText(json::parse(written).dump())) << error;
  // An edit anywhere is refused, the checksum member as written or not.
  std::string edited = written;
  edited.replace(edited.find("embed_tokens"), 12, "embed_tokenz");
  EXPECT_FALSE(readText(edited));
  EXPECT_NE(error.find("do not match \"checksum\""), std::string::npos) << error;
  EXPECT_FALSE(readText(json::parse(edited).dump(2)));
  EXPECT_NE(error.find("do not match \"checksum\""), std::string::npos) << error;
  EXPECT_TRUE(readText(written)) << error;
  std::system((std::string("rm -rf ") + dir).c_str());
}

// programToJson prints the document without "checksum", which writeProgramJson appends last.
TEST(ProgramJson, KeepsKeyOrderOfTheSpec) {
  nlohmann::ordered_json document = nlohmann::ordered_json::parse(programToJson(sampleProgram()));
  std::vector<std::string> keys;
  for (const auto &member : document.items())
    keys.push_back(member.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"format", "version", "model", "seed", "mesh", "kernels",
                                            "program_id", "params"}));
}

// A config as a user writes one: keys unsorted, other spacing, floats as transformers prints them.
const char *const kUserConfig =
    "{\"vocab_size\": 320, \"model_type\": \"llama\",\n\t\"rms_norm_eps\": 1e-05,"
    " \"rope_theta\": 500000.0, \"initializer_range\": 0.02,\n"
    " \"architectures\": [\"LlamaForCausalLM\"], \"rope_scaling\": null,"
    " \"name\": \"caf\u00e9 \u00b7 m\u00fcde\", \"nested\": {\"b\": [1, {\"z\": true}], \"a\": {}}}";

TEST(ProgramJson, CarriesTheHfConfigAsAnObjectAndReadsBackTheSameText) {
  std::string canonical, why;
  ASSERT_TRUE(canonicalHfConfig(kUserConfig, canonical, why)) << why;
  // The same value; keys sorted, two spaces of indent and a newline, as save_pretrained has it.
  EXPECT_EQ(json::parse(canonical), json::parse(kUserConfig));
  const std::string start = "{\n  \"architectures\": [\n    \"LlamaForCausalLM\"\n  ],\n";
  EXPECT_EQ(canonical.substr(0, start.size()), start);
  EXPECT_NE(canonical.find("\"rms_norm_eps\": 1e-05,"), std::string::npos) << canonical;
  EXPECT_NE(canonical.find("\"rope_theta\": 500000.0,"), std::string::npos) << canonical;
  EXPECT_NE(canonical.find("caf\u00e9"), std::string::npos) << canonical; // UTF-8, unescaped
  EXPECT_EQ(canonical.back(), '\n');
  std::string again;
  ASSERT_TRUE(canonicalHfConfig(canonical, again, why)) << why;
  EXPECT_EQ(again, canonical);

  char dir[] = "/tmp/initrt-program-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string error;
  for (const std::string &given : {canonical, std::string(kUserConfig)}) {
    Program program = sampleProgram();
    program.hfConfig = given;
    ASSERT_TRUE(writeProgramJson(std::string(dir) + "/program.json", program, error)) << error;
    std::ifstream in(std::string(dir) + "/program.json");
    nlohmann::ordered_json document = nlohmann::ordered_json::parse(in);
    ASSERT_TRUE(document["hf_config"].is_object());
    EXPECT_EQ(json(json::parse(document["hf_config"].dump())), json::parse(kUserConfig));
    std::vector<std::string> keys;
    for (const auto &member : document.items())
      keys.push_back(member.key());
    EXPECT_EQ(keys, (std::vector<std::string>{"format", "version", "model", "seed", "mesh",
                                              "kernels", "program_id", "hf_config", "params",
                                              "checksum"}));
    Program read;
    ASSERT_TRUE(readProgram(dir, read, error)) << error;
    EXPECT_EQ(read.hfConfig, canonical);
    program.hfConfig = canonical;
    expectEqual(program, read);
    // The config is inside the checksum like every other field.
    EXPECT_NE(programChecksum(read), programChecksum(sampleProgram()));
  }
  std::system((std::string("rm -rf ") + dir).c_str());

  // No config (hand-written IR, captured programs): no field, and none read.
  EXPECT_FALSE(json::parse(programToJson(sampleProgram())).contains("hf_config"));
  Program read;
  ASSERT_TRUE(parseProgramJson(programToJson(sampleProgram()), "p", read, error)) << error;
  EXPECT_EQ(read.hfConfig, "");
}

TEST(ProgramJson, AnEditedHfConfigIsRefusedByTheChecksum) {
  char dir[] = "/tmp/initrt-program-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/program.json";
  Program program = sampleProgram();
  program.hfConfig = kUserConfig;
  std::string error;
  ASSERT_TRUE(writeProgramJson(path, program, error)) << error;
  std::string written;
  {
    std::ifstream in(path);
    written.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  size_t at = written.find("\"vocab_size\": 320");
  ASSERT_NE(at, std::string::npos);
  written.replace(at, 17, "\"vocab_size\": 321");
  std::ofstream(path, std::ios::trunc) << written;
  Program read;
  EXPECT_FALSE(readProgram(dir, read, error));
  EXPECT_NE(error.find("do not match \"checksum\""), std::string::npos) << error;
  std::system((std::string("rm -rf ") + dir).c_str());
}

TEST(ProgramJson, AnHfConfigMustBeAJsonObject) {
  // As read: any other JSON value under "hf_config".
  for (const json &value : {json("{}"), json::array(), json(3), json(nullptr)}) {
    json document = sampleJson();
    document["hf_config"] = value;
    EXPECT_NE(parseError(document).find("field \"hf_config\" must be a JSON object"),
              std::string::npos)
        << value.dump();
  }
  json document = sampleJson();
  document["hf_config"] = json::object();
  Program read;
  std::string error;
  ASSERT_TRUE(parseProgramJson(document.dump(), "p", read, error)) << error;
  EXPECT_EQ(read.hfConfig, "{}\n");
  // As written: text that is not an object, or nests deeper than program.json may hold.
  const std::string tooDeep = "{\"a\":" + std::string(63, '[') + std::string(63, ']') + "}";
  const std::string deepest = "{\"a\":" + std::string(62, '[') + std::string(62, ']') + "}";
  for (const auto &[text, message] :
       std::vector<std::pair<std::string, std::string>>{
           {"{\"a\": ", "field \"hf_config\" is not valid JSON"},
           {"[1, 2]", "field \"hf_config\" must be a JSON object"},
           {"{\"a\": {\"b\": 1, \"b\": 2}}", "has the key \"b\" twice in one object"},
           {"{\"a\":" + std::string(70, '[') + std::string(70, ']') + "}",
            "nests deeper than 63 levels"},
           {tooDeep, "nests deeper than 63 levels"}}) {
    Program program = sampleProgram();
    program.hfConfig = text;
    EXPECT_FALSE(writeProgramJson("/tmp/never-written.json", program, error));
    EXPECT_NE(error.find(message), std::string::npos) << error;
    EXPECT_NE(access("/tmp/never-written.json", F_OK), 0);
  }
  // Printed without a crash however deep (a print recurses per level), and refused when read.
  {
    Program program = sampleProgram();
    program.hfConfig = std::string(1 << 20, '[') + std::string(1 << 20, ']');
    json document = json::parse(programToJson(program));
    EXPECT_TRUE(document["hf_config"].is_string());
    EXPECT_NE(parseError(document).find("field \"hf_config\" must be a JSON object"),
              std::string::npos);
  }
  Program program = sampleProgram();
  program.hfConfig = deepest;
  ASSERT_TRUE(validateProgram(program, error)) << error;
  ASSERT_TRUE(parseProgramJson(programToJson(program), "p", read, error)) << error;
  EXPECT_EQ(json::parse(read.hfConfig), json::parse(deepest));
}

TEST(ProgramJson, LargeSeedTravelsAsString) {
  Program program = sampleProgram();
  program.seed = 18446744073709551615ull;
  json document = json::parse(programToJson(program));
  EXPECT_TRUE(document["seed"].is_string());
  Program read;
  std::string error;
  ASSERT_TRUE(parseProgramJson(document.dump(), "p", read, error)) << error;
  EXPECT_EQ(read.seed, 18446744073709551615ull);
  program.seed = uint64_t(1) << 53;
  EXPECT_TRUE(json::parse(programToJson(program))["seed"].is_number_unsigned());
  document["seed"] = "9007199254740993";
  ASSERT_TRUE(parseProgramJson(document.dump(), "p", read, error)) << error;
  EXPECT_EQ(read.seed, 9007199254740993ull);
}

TEST(ProgramJson, MissingFileSaysWhatToDo) {
  Program program;
  std::string error;
  EXPECT_FALSE(readProgram("/nonexistent-initrt-dir", program, error));
  EXPECT_NE(error.find("/nonexistent-initrt-dir/program.json"), std::string::npos) << error;
  EXPECT_NE(error.find("initc compile"), std::string::npos) << error;
}

// program.json that is not a regular file, or far larger than any program: refused before a
// byte is read (a FIFO was waited on forever, /dev/zero read until memory ran out, a directory
// reported as "unexpected end of input"). Each case runs in a child with an alarm and a memory
// limit, so that a regression fails instead of hanging or exhausting the machine.
TEST(ProgramJson, RefusesWhatIsNotARegularFile) {
  char dir[] = "/tmp/initrt-program-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/program.json";
  auto refused = [&](const char *what, const std::string &expected) {
    int report[2];
    ASSERT_EQ(pipe(report), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(report[0]);
      alarm(20);
      // AddressSanitizer reserves terabytes of address space for its shadow: under a limit it
      // cannot map its own bookkeeping. The alarm still bounds the time there.
      if (!kAddressSanitizer) {
        rlimit limit{rlim_t(2) << 30, rlim_t(2) << 30};
        setrlimit(RLIMIT_AS, &limit);
      }
      Program program;
      std::string error;
      bool ok = readProgram(dir, program, error);
      if (write(report[1], error.data(), error.size()) < 0)
        _exit(3);
      _exit(ok ? 1 : 0);
    }
    close(report[1]);
    std::string error;
    char buffer[512];
    for (ssize_t got; (got = read(report[0], buffer, sizeof buffer)) > 0;)
      error.append(buffer, size_t(got));
    close(report[0]);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << what << ": killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0) << what;
    EXPECT_NE(error.find(path + " is " + expected), std::string::npos) << what << ": " << error;
    EXPECT_NE(error.find("recompile"), std::string::npos) << error;
  };
  ASSERT_EQ(symlink("/dev/zero", path.c_str()), 0);
  refused("/dev/zero", "a character device, not a regular file");
  ASSERT_EQ(unlink(path.c_str()), 0);
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  refused("a FIFO", "a FIFO, not a regular file");
  ASSERT_EQ(unlink(path.c_str()), 0);
  ASSERT_EQ(mkdir(path.c_str(), 0700), 0);
  refused("a directory", "a directory, not a regular file");
  ASSERT_EQ(rmdir(path.c_str()), 0);
  std::ofstream(path).close();
  ASSERT_EQ(truncate(path.c_str(), off_t(300) << 20), 0); // sparse
  refused("300 MiB", "314572800 bytes, more than the 256 MiB such a file can have");
  std::system((std::string("rm -rf ") + dir).c_str());
}

TEST(ProgramJson, RejectsNotJson) {
  Program program;
  std::string error;
  EXPECT_FALSE(parseProgramJson("{\"format\": ", "prog/program.json", program, error));
  EXPECT_NE(error.find("prog/program.json: not valid JSON"), std::string::npos) << error;
  const size_t depth = 4 << 20; // a parsed copy or print of it would overflow the stack
  std::string deep = "{\"params\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  EXPECT_FALSE(parseProgramJson(deep, "prog/program.json", program, error));
  EXPECT_NE(error.find("prog/program.json: not valid JSON (nested deeper than 64 levels)"),
            std::string::npos)
      << error;
  // Two equal keys: nlohmann would keep the second without a word.
  EXPECT_FALSE(parseProgramJson(R"({"format": "initc-program", "seed": 1, "seed": 2})",
                                "prog/program.json", program, error));
  EXPECT_NE(error.find("the key \"seed\" appears twice in one object"), std::string::npos) << error;
}

struct InvalidCase {
  const char *what;
  std::function<void(json &)> mutate;
  const char *message; // a substring of the error
};

TEST(ProgramJson, EachValidationErrorNamesFieldAndParam) {
  const std::string p0 = "params[0] (model.embed_tokens.weight)";
  std::vector<InvalidCase> cases = {
      {"top level", [](json &d) { d = json::array(); }, "the top level must be a JSON object"},
      {"format", [](json &d) { d["format"] = "other"; }, "field \"format\" is \"other\""},
      {"version", [](json &d) { d["version"] = 1; }, "field \"version\" is 1"},
      {"version type", [](json &d) { d["version"] = "1"; }, "\"version\" must be an integer"},
      {"model missing", [](json &d) { d.erase("model"); }, "field \"model\" is missing"},
      {"model type", [](json &d) { d["model"] = 3; }, "\"model\" must be a string"},
      {"seed negative", [](json &d) { d["seed"] = -1; }, "\"seed\" must not be negative"},
      {"seed float", [](json &d) { d["seed"] = 1.5; }, "\"seed\" must be an unsigned integer"},
      {"seed string", [](json &d) { d["seed"] = "12x"; }, "\"seed\" \"12x\" is not a decimal"},
      {"seed overflow", [](json &d) { d["seed"] = "18446744073709551616"; },
       "is not a decimal integer in [0, 2^64)"},
      {"unknown key", [](json &d) { d["extra"] = 1; }, "\"extra\" is not part of program format"},
      {"mesh type", [](json &d) { d["mesh"] = 1; }, "\"mesh\" must be an object"},
      {"mesh axes type", [](json &d) { d["mesh"]["axes"] = "dp"; }, "\"mesh.axes\" must be"},
      {"mesh axis name", [](json &d) { d["mesh"]["axes"][1] = 5; },
       "\"mesh.axes[1]\" must be a string"},
      {"mesh size type", [](json &d) { d["mesh"]["shape"][0] = 1.5; },
       "\"mesh.shape[0]\" must be an integer"},
      {"mesh size zero", [](json &d) { d["mesh"]["shape"][1] = 0; },
       "\"mesh.shape[1]\" is 0, mesh sizes must be >= 1"},
      {"mesh lengths", [](json &d) { d["mesh"]["shape"] = {2}; },
       "\"mesh\" has 2 axis names but 1 sizes"},
      {"mesh duplicate axis",
       [](json &d) {
         d["mesh"]["axes"] = {"dp", "dp"};
       },
       "repeats the axis name \"dp\""},
      {"mesh too big",
       [](json &d) {
         d["mesh"]["shape"] = {65536, 65536};
       },
       "more than 2^31 - 1 devices"},
      {"kernels type", [](json &d) { d["kernels"] = "k.so"; }, "\"kernels\" must be an object"},
      {"kernels file", [](json &d) { d["kernels"]["file"] = "../k.so"; },
       "\"kernels.file\" must be a file name inside the program directory"},
      {"kernels checksum", [](json &d) { d["kernels"]["checksum"] = "ABC"; },
       "\"kernels.checksum\" must be 16 lowercase hex digits"},
      {"variants missing", [](json &d) { d["kernels"].erase("variants"); },
       "\"kernels.variants\" is missing"},
      {"variants empty", [](json &d) { d["kernels"]["variants"] = json::array(); },
       "\"kernels.variants\" must be a non-empty array"},
      {"variant type", [](json &d) { d["kernels"]["variants"][1] = "x86-64"; },
       "\"kernels.variants[1]\" must be an object"},
      {"target cpu", [](json &d) { d["kernels"]["variants"][0]["target_cpu"] = false; },
       "\"kernels.variants[0].target_cpu\" must be a string"},
      {"old target_cpu", [](json &d) { d["kernels"]["target_cpu"] = "x86-64"; }, "target_cpu"},
      {"extensions missing", [](json &d) { d["kernels"]["variants"][0].erase("extensions"); },
       "\"kernels.variants[0].extensions\" is missing"},
      {"extensions type", [](json &d) { d["kernels"]["variants"][1]["extensions"] = "avx2"; },
       "\"kernels.variants[1].extensions\" must be an array of strings"},
      {"extension empty", [](json &d) { d["kernels"]["variants"][0]["extensions"][1] = ""; },
       "\"kernels.variants[0].extensions[1]\" must be a non-empty string"},
      {"program id", [](json &d) { d["program_id"] = ""; }, "\"program_id\" must not be empty"},
      {"params type", [](json &d) { d["params"] = json::object(); }, "\"params\" must be an array"},
      {"param type", [](json &d) { d["params"][0] = 1; }, "\"params[0]\" must be an object"},
      {"param name missing", [](json &d) { d["params"][0].erase("name"); },
       "\"params[0].name\" is missing"},
      {"param name empty", [](json &d) { d["params"][0]["name"] = ""; },
       "\"params[0].name\" must not be empty"},
      {"param duplicate", [](json &d) { d["params"][1]["name"] = "lm_head.weight"; },
       "\"params[1] (lm_head.weight).name\" repeats the name"},
      {"param unknown key", [](json &d) { d["params"][0]["persistant"] = true; },
       ".persistant\" is not part of program format"},
      {"aliases type", [](json &d) { d["params"][0]["aliases"] = "x"; },
       ".aliases\" must be an array of strings"},
      {"alias type", [](json &d) { d["params"][0]["aliases"][0] = 1; },
       ".aliases[0]\" must be a string"},
      {"dtype", [](json &d) { d["params"][0]["dtype"] = "F8"; },
       ".dtype\" is \"F8\", expected one of"},
      {"shape type", [](json &d) { d["params"][0]["shape"] = 4; }, ".shape\" must be an array"},
      {"shape entry", [](json &d) { d["params"][0]["shape"][1] = "4"; },
       ".shape[1]\" must be an integer"},
      {"shape negative", [](json &d) { d["params"][0]["shape"][1] = -4; },
       ".shape[1]\" is -4, dims must be >= 0"},
      {"shape overflow",
       [](json &d) {
         d["params"][0]["shape"] = {int64_t(1) << 32, int64_t(1) << 32};
       },
       ".shape\" has more elements than fit in a signed 64-bit integer"},
      {"bytes overflow",
       [](json &d) {
         d["params"][0]["shape"] = {int64_t(1) << 31, int64_t(1) << 31};
       },
       ".shape\" has more bytes than fit in a signed 64-bit integer"},
      {"split type", [](json &d) { d["params"][0]["split_axes"] = 0; },
       ".split_axes\" must be an array"},
      {"split entry", [](json &d) { d["params"][0]["split_axes"][0] = 0; },
       ".split_axes[0]\" must be an array of mesh axis indices"},
      {"split too long",
       [](json &d) {
         d["params"][0]["split_axes"] = {{0}, {1}, json::array()};
       },
       ".split_axes\" has 3 entries but the tensor has 2 dims"},
      {"split axis range", [](json &d) { d["params"][0]["split_axes"] = {{2}}; },
       ".split_axes[0][0]\" is 2 but the mesh has 2 axes"},
      {"split axis negative", [](json &d) { d["params"][0]["split_axes"] = {{-1}}; }, "is -1 but"},
      {"split axis twice",
       [](json &d) {
         d["params"][0]["split_axes"] = {{0}, {0}};
       },
       ".split_axes[1][0]\" splits over mesh axis \"dp\" a second time"},
      {"kernel empty", [](json &d) { d["params"][0]["kernel"] = ""; },
       ".kernel\" must name a kernel"},
      {"buffer type", [](json &d) { d["params"][0]["buffer"] = 0; },
       ".buffer\" must be true or false"},
      {"load type", [](json &d) { d["params"][3]["load"] = "base.safetensors"; },
       "\"params[3] (base.w).load\" must be an object with \"file\" and \"tensor\""},
      {"load tensor missing", [](json &d) { d["params"][3]["load"].erase("tensor"); },
       "\"params[3] (base.w).load.tensor\" is missing"},
      {"load unknown key", [](json &d) { d["params"][3]["load"]["dtype"] = "BF16"; },
       "\"params[3] (base.w).load.dtype\" is not part of program format"},
      {"load file empty", [](json &d) { d["params"][3]["load"]["file"] = ""; },
       "\"params[3] (base.w).load\" must name a file and a tensor"},
      {"load with a kernel", [](json &d) { d["params"][3]["kernel"] = "k0"; },
       "\"params[3] (base.w).load\" is only allowed without a kernel, kernel_args or transform"},
      {"kernel empty without load", [](json &d) { d["params"][3].erase("load"); },
       "\"params[3] (base.w).kernel\" must name a kernel"},
      {"persistent missing", [](json &d) { d["params"][0].erase("persistent"); },
       ".persistent\" is missing"},
  };
  for (const InvalidCase &c : cases) {
    json document = sampleJson();
    c.mutate(document);
    std::string error = parseError(document);
    // Messages about a field of params[0] must name the parameter too.
    std::string expected = c.message[0] == '.' ? p0 + c.message : c.message;
    EXPECT_NE(error.find(expected), std::string::npos)
        << c.what << ": got \"" << error << "\", expected it to contain \"" << expected << "\"";
    EXPECT_EQ(error.rfind("prog/program.json: ", 0), 0u) << c.what << ": " << error;
  }
}

// Parameters are read as the parse meets them; what is said is what reading the whole
// document first would say.
TEST(ProgramJson, ErrorsComeInTheOrderOfTheFields) {
  auto errorOf = [](const std::string &text) {
    Program program;
    std::string error;
    EXPECT_FALSE(parseProgramJson(text, "prog/program.json", program, error));
    return error;
  };
  json twoWrong = sampleJson();
  twoWrong["params"][1]["dtype"] = "F8";
  twoWrong["params"][3]["shape"] = "wide";
  EXPECT_NE(errorOf(twoWrong.dump()).find("params[1] (rotary.inv_freq).dtype"), std::string::npos);
  // A field before "params" first, wherever it stands in the text.
  json seedToo = twoWrong;
  seedToo["seed"] = -1;
  EXPECT_NE(errorOf(seedToo.dump()).find("\"seed\" must not be negative"), std::string::npos);
  nlohmann::ordered_json paramsFirst = nlohmann::ordered_json::object();
  paramsFirst["params"] = twoWrong["params"];
  for (auto &[key, value] : seedToo.items())
    if (key != "params")
      paramsFirst[key] = value;
  EXPECT_NE(errorOf(paramsFirst.dump()).find("\"seed\" must not be negative"), std::string::npos);
  // A document that is not JSON after a wrong parameter is not JSON.
  std::string broken = twoWrong.dump();
  broken.insert(broken.size() - 1, ", ");
  EXPECT_NE(errorOf(broken).find("not valid JSON"), std::string::npos) << errorOf(broken);
  // Every parameter, read as it comes, in order.
  Program read;
  std::string error;
  ASSERT_TRUE(parseProgramJson(sampleJson().dump(), "p", read, error)) << error;
  ASSERT_EQ(read.params.size(), sampleProgram().params.size());
  for (size_t i = 0; i < read.params.size(); ++i)
    EXPECT_EQ(read.params[i].name, sampleProgram().params[i].name);
}

TEST(ProgramJson, WriteRefusesAnInvalidProgram) {
  Program program = sampleProgram();
  program.params[0].shape[0] = -1;
  std::string error;
  EXPECT_FALSE(writeProgramJson("/tmp/never-written.json", program, error));
  EXPECT_NE(error.find("dims must be >= 0"), std::string::npos) << error;
  EXPECT_NE(access("/tmp/never-written.json", F_OK), 0);
}

TEST(ProgramJson, WriteReportsAnUnwritableDirectory) {
  std::string error;
  EXPECT_FALSE(writeProgramJson("/nonexistent-initrt-dir/program.json", sampleProgram(), error));
  EXPECT_NE(error.find("directory /nonexistent-initrt-dir does not exist"), std::string::npos) << error;
}

// A parameter on a pipeline stage carries "stage": [axis, index]; the others carry no key.
TEST(ProgramJson, CarriesPipelineStagesAndRefusesImpossibleOnes) {
  Program program = sampleProgram();
  program.params[3].stageAxis = 0;
  program.params[3].stage = 1;
  json document = json::parse(programToJson(program));
  EXPECT_FALSE(document["params"][0].contains("stage"));
  EXPECT_EQ(document["params"][3]["stage"], json::array({0, 1}));
  Program read;
  std::string error;
  ASSERT_TRUE(parseProgramJson(document.dump(), "p", read, error)) << error;
  EXPECT_EQ(read.params[3].stageAxis, 0);
  EXPECT_EQ(read.params[3].stage, 1);
  EXPECT_EQ(read.params[0].stageAxis, -1);

  json bad = document;
  bad["params"][3]["stage"] = json::array({0, 2});
  EXPECT_NE(parseError(bad).find("is stage 2 of mesh axis \"dp\" of size 2"), std::string::npos);
  bad["params"][3]["stage"] = json::array({1, 0}); // tp also splits it
  EXPECT_NE(parseError(bad).find("which also splits it"), std::string::npos);
  bad["params"][3]["stage"] = json::array({5, 0});
  EXPECT_NE(parseError(bad).find("but the mesh has 2 axes"), std::string::npos);
  bad["params"][3]["stage"] = "dp";
  EXPECT_NE(parseError(bad).find("must be [mesh axis index, stage index]"), std::string::npos);
  bad = document;
  bad["params"][2]["stage"] = json::array({0, 0});
  EXPECT_NE(parseError(bad).find("scalars are held by every rank"), std::string::npos);
}
