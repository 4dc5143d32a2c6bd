// The safetensors writer reproduces the reference bytes; the reader rejects what the reference
// reader rejects.
#include "initrt/base/atomic_file.h"
#include "initrt/base/checksum.h"
#include "initrt/base/safetensors.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <csignal>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace initrt;

namespace {

// The cleanup handler is installed once, over the actions it finds, and leaves an ignored signal
// ignored (as nohup wants). These tests start from the default actions, whatever the shell that
// ran them ignored: a non-interactive shell starts its background jobs with SIGINT ignored.
const bool kDefaultSignalActions = [] {
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGABRT})
    std::signal(signal, SIG_DFL);
  return true;
}();

class SafetensorsTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/initrt-safetensors-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
  }
  void TearDown() override {
    std::string command = "rm -rf '" + dir + "'";
    ASSERT_EQ(std::system(command.c_str()), 0);
  }
  std::string path(const std::string &name) const { return dir + "/" + name; }

  std::string dir;
};

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

std::string fromList(std::initializer_list<int> bytes) {
  std::string out;
  for (int byte : bytes)
    out.push_back(char(byte));
  return out;
}

std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> names;
  DIR *listing = opendir(dir.c_str());
  while (dirent *entry = readdir(listing))
    if (std::strcmp(entry->d_name, ".") && std::strcmp(entry->d_name, ".."))
      names.emplace_back(entry->d_name);
  closedir(listing);
  return names;
}

/// A file as the reference writes it: 8-byte length, JSON padded to 8, data.
std::string rawFile(const std::string &json, const std::string &data) {
  std::string header = json;
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i)
    out[i] = char((length >> (8 * i)) & 0xff);
  return out + header + data;
}

const float kZeroToFive[6] = {0, 1, 2, 3, 4, 5};

// Vectors from huggingface/safetensors tensor.rs (reference/safetensors_vectors.py).
TEST_F(SafetensorsTest, ReproducesReferenceBytes) {
  std::string error;
  SafetensorsTensor attn{"attn.0", "F32", {1, 2, 3}, kZeroToFive, sizeof(kZeroToFive)};
  ASSERT_TRUE(writeSafetensors(path("a"), {attn}, std::nullopt, error)) << error;
  EXPECT_EQ(readBytes(path("a")),
            fromList({64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123,
                      34, 100, 116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104,
                      97, 112, 101, 34, 58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97,
                      95, 111, 102, 102, 115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125,
                      125, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0,
                      0, 160, 64}));

  SafetensorsTensor aligned{"attn0", "F32", {1, 1, 2, 3}, kZeroToFive, sizeof(kZeroToFive)};
  ASSERT_TRUE(writeSafetensors(path("b"), {aligned}, std::nullopt, error)) << error;
  EXPECT_EQ(readBytes(path("b")),
            fromList({72, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 48, 34, 58, 123, 34,
                      100, 116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97,
                      112, 101, 34, 58, 91, 49, 44, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116,
                      97, 95, 111, 102, 102, 115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93,
                      125, 125, 32, 32, 32, 32, 32, 32, 32, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64,
                      0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64}));

  ASSERT_TRUE(writeSafetensors(path("c"), {}, std::nullopt, error)) << error;
  EXPECT_EQ(readBytes(path("c")),
            fromList({8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32}));

  ASSERT_TRUE(writeSafetensors(path("d"), {}, SafetensorsMetadata{{"framework", "pt"}}, error))
      << error;
  EXPECT_EQ(readBytes(path("d")),
            fromList({40,  0,   0,   0,   0,   0,   0,   0,   123, 34,  95,  95,  109, 101,
                      116, 97,  100, 97,  116, 97,  95,  95,  34,  58,  123, 34,  102, 114,
                      97,  109, 101, 119, 111, 114, 107, 34,  58,  34,  112, 116, 34,  125,
                      125, 32,  32,  32,  32,  32}));
}

TEST_F(SafetensorsTest, OrdersByDescendingAlignmentThenName) {
  uint8_t flags[2] = {1, 0};
  double wide[1] = {1.5};
  uint16_t half[2] = {1, 2};
  std::vector<SafetensorsTensor> tensors = {
      {"b_bool", "BOOL", {2}, flags, 2},  {"z_f32", "F32", {1}, kZeroToFive, 4},
      {"a_f32", "F32", {1}, kZeroToFive, 4}, {"half", "BF16", {2}, half, 4},
      {"wide", "F64", {1}, wide, 8}};
  std::string header, error;
  std::vector<size_t> order;
  ASSERT_TRUE(buildSafetensorsHeader(tensors, std::nullopt, header, order, error)) << error;
  EXPECT_EQ(order, (std::vector<size_t>{4, 2, 1, 3, 0}));
  std::string json = header.substr(8);
  EXPECT_EQ(json.substr(0, json.find_last_not_of(' ') + 1),
            "{\"wide\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]},"
            "\"a_f32\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
            "\"z_f32\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]},"
            "\"half\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[16,20]},"
            "\"b_bool\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[20,22]}}");
  EXPECT_EQ(header.size() % 8, 0u);
}

TEST_F(SafetensorsTest, RoundTripsTensorsAndMetadata) {
  std::vector<float> big(1000);
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = float(i) * 0.5f;
  uint16_t half[6] = {1, 2, 3, 4, 5, 6};
  float scalar = 42.0f;
  std::vector<SafetensorsTensor> tensors = {
      {"model.big", "F32", {10, 100}, big.data(), big.size() * 4},
      {"model.half", "BF16", {2, 3}, half, sizeof(half)},
      {"scalar", "F32", {}, &scalar, 4},
      {"empty", "F32", {0, 7}, nullptr, 0}};
  SafetensorsMetadata metadata = {{"format", "pt"}, {"note", "x"}};
  std::string error;
  ASSERT_TRUE(writeSafetensors(path("rt.safetensors"), tensors, metadata, error)) << error;

  SafetensorsReader reader;
  ASSERT_TRUE(reader.open(path("rt.safetensors"), error)) << error;
  EXPECT_TRUE(reader.hasMetadata());
  ASSERT_NE(reader.metadataValue("format"), nullptr);
  EXPECT_EQ(*reader.metadataValue("format"), "pt");
  EXPECT_EQ(*reader.metadataValue("note"), "x");
  EXPECT_EQ(reader.dataStart() % 8, 0u);
  ASSERT_EQ(reader.tensors().size(), 4u);
  for (const SafetensorsTensor &tensor : tensors) {
    const SafetensorsEntry *entry = reader.find(tensor.name);
    ASSERT_NE(entry, nullptr) << tensor.name;
    EXPECT_EQ(entry->dtype, tensor.dtype);
    EXPECT_EQ(entry->shape, tensor.shape);
    ASSERT_EQ(entry->bytes(), tensor.bytes);
    std::string bytes(tensor.bytes, '\0');
    ASSERT_TRUE(reader.read(entry->begin, bytes.data(), bytes.size(), error)) << error;
    if (tensor.bytes)
      EXPECT_EQ(std::memcmp(bytes.data(), tensor.data, tensor.bytes), 0) << tensor.name;
    std::string sum;
    ASSERT_TRUE(reader.checksum(*entry, sum, error)) << error;
    EXPECT_EQ(sum, checksumHex(tensor.data, tensor.bytes));
  }
  // Nothing but the final file is left behind.
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"rt.safetensors"});
}

TEST_F(SafetensorsTest, EscapesAnyNameAndRoundTripsIt) {
  std::vector<std::string> names = {"quote\"d",         "back\\slash", "new\nline\ttab\r",
                                    "ctl\x01\x1f\x7f",  "caf\xc3\xa9 \xe2\x88\x80 \xf0\x9f\x98\x80",
                                    "slash/ok",         std::string(100000, 'n')};
  std::vector<SafetensorsTensor> tensors;
  float value = 1.0f;
  for (const std::string &name : names)
    tensors.push_back({name, "F32", {1}, &value, 4});
  SafetensorsMetadata metadata = {{"k\"ey\n", "v\\al\xc3\xa9"}};
  std::string error;
  ASSERT_TRUE(writeSafetensors(path("names"), tensors, metadata, error)) << error;
  SafetensorsReader reader;
  ASSERT_TRUE(reader.open(path("names"), error)) << error;
  for (const std::string &name : names)
    EXPECT_NE(reader.find(name), nullptr) << name.substr(0, 40);
  ASSERT_NE(reader.metadataValue("k\"ey\n"), nullptr);
  EXPECT_EQ(*reader.metadataValue("k\"ey\n"), "v\\al\xc3\xa9");

  // Escaping as serde_json does it: short escapes, \u00XX lowercase for other controls, raw UTF-8.
  std::string header;
  std::vector<size_t> order;
  ASSERT_TRUE(buildSafetensorsHeader({{"a\"b\\c\n\x01\xc3\xa9", "F32", {1}, &value, 4}},
                                     std::nullopt, header, order, error));
  EXPECT_NE(header.find("\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\""), std::string::npos) << header;
}

TEST_F(SafetensorsTest, WriterRejectsBadInput) {
  float value = 1.0f;
  std::string error;
  EXPECT_FALSE(writeSafetensors(path("x"), {{"bad\xff", "F32", {1}, &value, 4}}, std::nullopt,
                                error));
  EXPECT_NE(error.find("UTF-8"), std::string::npos) << error;
  EXPECT_FALSE(writeSafetensors(path("x"), {{"a", "F32", {2}, &value, 4}}, std::nullopt, error));
  EXPECT_NE(error.find("need 8"), std::string::npos) << error;
  EXPECT_FALSE(writeSafetensors(path("x"), {{"a", "Q7", {1}, &value, 4}}, std::nullopt, error));
  EXPECT_NE(error.find("unknown dtype"), std::string::npos) << error;
  EXPECT_FALSE(writeSafetensors(path("x"), {{"a", "F32", {1}, &value, 4},
                                            {"a", "F32", {1}, &value, 4}},
                                std::nullopt, error));
  EXPECT_NE(error.find("twice"), std::string::npos) << error;
  EXPECT_FALSE(writeSafetensors(dir + "/missing/x", {}, std::nullopt, error));
  EXPECT_NE(error.find("does not exist"), std::string::npos) << error;
  // procfs exists but refuses new files with ENOENT too.
  EXPECT_FALSE(writeSafetensors("/proc/initc-test.safetensors", {}, std::nullopt, error));
  EXPECT_NE(error.find("/proc takes no new files"), std::string::npos) << error;
  EXPECT_TRUE(listDir(dir).empty());
}

struct MalformedCase {
  const char *what;
  std::string bytes;
  const char *expected; // part of the error
};

TEST_F(SafetensorsTest, ReaderRejectsMalformedFiles) {
  std::string data24(24, '\0');
  std::string good = rawFile(
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", data24);
  std::string hugeN = good;
  hugeN[3] = char(0x10); // N = 0x10000040 > 100,000,000
  std::string pastEnd = good;
  pastEnd[0] = char(200);
  std::vector<MalformedCase> cases = {
      {"shorter than 8 bytes", std::string(5, '\0'), "shorter than the 8-byte"},
      {"header too large", hugeN, "exceeds the limit"},
      {"header past the end", pastEnd, "runs past the end"},
      {"truncated data", good.substr(0, good.size() - 1), "truncated"},
      {"trailing bytes", good + "x", "trailing bytes"},
      {"hole",
       rawFile("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}",
               std::string(20, '\0')),
       "hole or an overlap"},
      {"overlap",
       rawFile("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
               std::string(12, '\0')),
       "hole or an overlap"},
      {"not from zero",
       rawFile("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
               std::string(16, '\0')),
       "hole or an overlap"},
      {"two empty tensors",
       rawFile("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}",
               ""),
       nullptr},
      {"wrong size",
       rawFile("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}",
               std::string(20, '\0')),
       "need 24"},
      {"bad JSON", rawFile("{\"a\":{\"dtype\":\"F32\",", ""), "not valid UTF-8 JSON"},
      {"non-UTF-8",
       rawFile("{\"a\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
               std::string(4, '\0')),
       "not valid UTF-8 JSON"},
      {"duplicate name",
       rawFile("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
               std::string(8, '\0')),
       "twice"},
      {"unknown dtype",
       rawFile("{\"a\":{\"dtype\":\"F31\",\"shape\":[1],\"data_offsets\":[0,4]}}",
               std::string(4, '\0')),
       "unknown dtype"},
      {"metadata not strings", rawFile("{\"__metadata__\":{\"n\":1}}", ""), "not a string"},
      {"negative dim",
       rawFile("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", ""),
       "non-negative"},
      {"not an object", rawFile("[1,2]", ""), "not a JSON object"},
      {"nested a million deep",
       rawFile("{\"a\":" + std::string(1 << 20, '[') + std::string(1 << 20, ']') + "}", ""),
       "header is nested deeper than 64 levels"},
      {"misaligned F4",
       rawFile("{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,1]}}",
               std::string(1, '\0')),
       "whole number of bytes"},
  };
  // expected == nullptr: valid (two empty tensors at [0,0] both start where the data starts).
  for (const MalformedCase &c : cases) {
    std::string file = path("bad.safetensors");
    writeBytes(file, c.bytes);
    SafetensorsReader reader;
    std::string error;
    bool opened = reader.open(file, error);
    if (!c.expected) {
      EXPECT_TRUE(opened) << c.what << ": " << error;
      continue;
    }
    EXPECT_FALSE(opened) << c.what;
    EXPECT_NE(error.find(file), std::string::npos) << c.what << ": " << error;
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.what << ": " << error;
  }
  SafetensorsReader reader;
  std::string error;
  writeBytes(path("good"), good);
  EXPECT_TRUE(reader.open(path("good"), error)) << error;
  // Leading whitespace before the JSON is tolerated, as by the reference reader.
  writeBytes(path("lead"), rawFile("  {}", ""));
  EXPECT_TRUE(reader.open(path("lead"), error)) << error;
  EXPECT_FALSE(reader.open(path("nope"), error));
  EXPECT_NE(error.find("no such file"), std::string::npos) << error;
}

// A mixture-of-experts model has tens of thousands of tensors, every rank's shard all of them: the
// header is read in one pass, and a key given twice is still found at the end of it.
TEST_F(SafetensorsTest, HeadersOfManyTensorsAreRead) {
  const int count = 60000;
  std::vector<float> values(count);
  std::vector<SafetensorsTensor> tensors;
  for (int i = 0; i < count; ++i) {
    values[size_t(i)] = float(i);
    tensors.push_back({"expert." + std::to_string(i), "F32", {1}, &values[size_t(i)], 4});
  }
  std::string error;
  ASSERT_TRUE(writeSafetensors(path("many"), tensors, std::nullopt, error)) << error;
  SafetensorsReader reader;
  ASSERT_TRUE(reader.open(path("many"), error)) << error;
  ASSERT_EQ(reader.tensors().size(), size_t(count));
  float value = 0;
  ASSERT_TRUE(reader.read(reader.find("expert.59999")->begin, &value, 4, error)) << error;
  EXPECT_EQ(value, 59999.0f);

  std::string json = "{";
  for (int i = 0; i < count; ++i)
    json += "\"t" + std::to_string(i) + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" +
            std::to_string(4 * i) + "," + std::to_string(4 * i + 4) + "]},";
  json += "\"t0\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  writeBytes(path("twice"), rawFile(json, std::string(4 * count, '\0')));
  EXPECT_FALSE(reader.open(path("twice"), error));
  EXPECT_NE(error.find("header has the key \"t0\" twice"), std::string::npos) << error;
}

TEST_F(SafetensorsTest, ChecksumStreamsLikeOneShot) {
  std::string data(100003, '\0');
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = char(i * 131 + 7);
  StreamingChecksum sum;
  for (size_t done = 0; done < data.size(); done += 4099)
    sum.update(data.data() + done, std::min<size_t>(4099, data.size() - done));
  EXPECT_EQ(sum.hex(), checksumHex(data.data(), data.size()));
  EXPECT_EQ(checksumHex("", 0), "2d06800538d394c2"); // XXH3-64 of nothing
  EXPECT_EQ(checksumHex(data.data(), 0).size(), 16u);
}

// With `ulimit -f`, the kernel would kill the writer with SIGXFSZ; it must fail with EFBIG text.
TEST_F(SafetensorsTest, FileSizeLimitIsAnErrorNotASignal) {
  std::string file = path("big.safetensors");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    rlimit limit{64 * 1024, 64 * 1024};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0)
      _exit(3);
    std::vector<char> data(1 << 20, 'x');
    std::string error;
    bool ok = writeSafetensors(file, {{"t", "U8", {int64_t(data.size())}, data.data(),
                                       data.size()}},
                               std::nullopt, error);
    _exit(ok ? 1 : error.find("ulimit -f") == std::string::npos ? 2 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(listDir(dir).empty()); // the temporary was removed
}

// SIGINT, SIGTERM, SIGHUP or SIGABRT while a file is written: the temporary goes, and the process
// still ends by the signal (its exit status says so).
TEST_F(SafetensorsTest, ASignalRemovesTheTemporary) {
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGABRT}) {
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    std::string file = path("model.safetensors");
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(ready[0]);
      AtomicFile first, second; // two at once, as prog/init's index and a shard never are
      std::string error;
      if (!first.open(file, 1 << 20, error) || !second.open(path("other"), 1 << 20, error) ||
          !first.write("x", 1, error))
        _exit(3);
      char byte = 1;
      if (write(ready[1], &byte, 1) != 1)
        _exit(4);
      for (;;)
        pause();
    }
    close(ready[1]);
    char byte = 0;
    ASSERT_EQ(read(ready[0], &byte, 1), 1);
    close(ready[0]);
    EXPECT_EQ(listDir(dir).size(), 2u); // both temporaries
    ASSERT_EQ(kill(child, signal), 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
    EXPECT_EQ(WTERMSIG(status), signal);
    EXPECT_TRUE(listDir(dir).empty()) << listDir(dir)[0];
  }
}

} // namespace
