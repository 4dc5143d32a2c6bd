#include "initrt/base/safetensors.h"

#include "initrt/base/atomic_file.h"
#include "initrt/base/checksum.h"
#include "initrt/base/direct_io.h"
#include "initrt/base/files.h"
#include "initrt/base/json_text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

namespace initrt {

namespace {

struct DTypeInfo {
  const char *name;
  int bits;
};

// The reference enum, in its order (increasing alignment); the writer sorts by this rank.
const DTypeInfo kDTypes[] = {
    {"BOOL", 8},         {"F4", 4},           {"F6_E2M3", 6},     {"F6_E3M2", 6},
    {"U8", 8},           {"I8", 8},           {"F8_E5M2", 8},     {"F8_E4M3", 8},
    {"F8_E8M0", 8},      {"F8_E4M3FNUZ", 8},  {"F8_E5M2FNUZ", 8}, {"I16", 16},
    {"U16", 16},         {"F16", 16},         {"BF16", 16},       {"I32", 32},
    {"U32", 32},         {"F32", 32},         {"C64", 64},        {"F64", 64},
    {"I64", 64},         {"U64", 64},
};

// One read or write moves at most this much; Linux caps a single call a little below 2 GiB.
constexpr uint64_t kMaxWriteChunk = 1ull << 30;

std::string errnoText(int err) { return std::strerror(err); }


bool checkedMultiply(uint64_t a, uint64_t b, uint64_t &out) {
  return !__builtin_mul_overflow(a, b, &out);
}

bool tensorBytes(const std::string &dtype, const std::vector<int64_t> &shape, uint64_t &bytes,
                 std::string &why) {
  int bits = safetensorsDTypeBits(dtype);
  if (!bits) {
    why = "unknown dtype \"" + dtype + "\"";
    return false;
  }
  uint64_t elements = 1;
  for (int64_t dim : shape) {
    if (dim < 0) {
      why = "negative dimension " + std::to_string(dim);
      return false;
    }
    if (!checkedMultiply(elements, uint64_t(dim), elements)) {
      why = "shape too large";
      return false;
    }
  }
  uint64_t totalBits;
  if (!checkedMultiply(elements, uint64_t(bits), totalBits)) {
    why = "shape too large";
    return false;
  }
  if (totalBits % 8) {
    why = "its " + std::to_string(elements) + " elements of " + dtype +
          " do not fill a whole number of bytes";
    return false;
  }
  bytes = totalBits / 8;
  return true;
}

bool readFully(int fd, uint64_t offset, void *out, uint64_t bytes, int &err) {
  char *dst = static_cast<char *>(out);
  while (bytes) {
    size_t piece = size_t(std::min(bytes, kMaxWriteChunk));
    ssize_t got = ::pread(fd, dst, piece, off_t(offset));
    if (got < 0) {
      if (errno == EINTR)
        continue;
      err = errno;
      return false;
    }
    if (got == 0) {
      err = 0; // the file ended early
      return false;
    }
    dst += got;
    offset += uint64_t(got);
    bytes -= uint64_t(got);
  }
  return true;
}

} // namespace

int safetensorsDTypeBits(const std::string &dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (dtype == info.name)
      return info.bits;
  return 0;
}

int safetensorsDTypeRank(const std::string &dtype) {
  for (size_t i = 0; i < std::size(kDTypes); ++i)
    if (dtype == kDTypes[i].name)
      return int(i);
  return -1;
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

bool buildSafetensorsHeader(const std::vector<SafetensorsTensor> &tensors,
                            const std::optional<SafetensorsMetadata> &metadata,
                            std::string &header, std::vector<size_t> &dataOrder,
                            std::string &error) {
  using OrderedJson = nlohmann::ordered_json;
  dataOrder.resize(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    dataOrder[i] = i;
  for (const SafetensorsTensor &tensor : tensors) {
    uint64_t bytes;
    std::string why;
    if (!tensorBytes(tensor.dtype, tensor.shape, bytes, why)) {
      error = "tensor \"" + tensor.name + "\": " + why;
      return false;
    }
    if (bytes != tensor.bytes) {
      error = "tensor \"" + tensor.name + "\": " + std::to_string(tensor.bytes) +
              " bytes given, its shape and dtype need " + std::to_string(bytes);
      return false;
    }
    if (tensor.name == "__metadata__") {
      error = "a tensor cannot be named __metadata__";
      return false;
    }
  }
  // Descending alignment, then name ascending (byte order), as the reference writer does.
  std::vector<int> ranks(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    ranks[i] = safetensorsDTypeRank(tensors[i].dtype);
  std::stable_sort(dataOrder.begin(), dataOrder.end(), [&](size_t a, size_t b) {
    if (ranks[a] != ranks[b])
      return ranks[a] > ranks[b];
    return tensors[a].name < tensors[b].name;
  });
  for (size_t i = 1; i < dataOrder.size(); ++i) {
    if (tensors[dataOrder[i]].name == tensors[dataOrder[i - 1]].name) {
      error = "tensor \"" + tensors[dataOrder[i]].name + "\" is given twice";
      return false;
    }
  }

  OrderedJson json = OrderedJson::object();
  if (metadata) {
    OrderedJson meta = OrderedJson::object();
    for (const auto &[key, value] : *metadata) {
      if (meta.contains(key)) {
        error = "metadata key \"" + key + "\" is given twice";
        return false;
      }
      meta[key] = value;
    }
    json["__metadata__"] = std::move(meta);
  }
  uint64_t offset = 0;
  for (size_t index : dataOrder) {
    const SafetensorsTensor &tensor = tensors[index];
    OrderedJson entry = OrderedJson::object();
    entry["dtype"] = tensor.dtype;
    entry["shape"] = tensor.shape;
    entry["data_offsets"] = {offset, offset + tensor.bytes};
    offset += tensor.bytes;
    // Appended: the names are known distinct, and the map's own insert would compare each with
    // every earlier one (a model of 50,000 tensors took seconds).
    json.get_ref<OrderedJson::object_t &>().emplace_back(tensor.name, std::move(entry));
  }
  std::string text;
  try {
    text = json.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::strict);
  } catch (const nlohmann::json::exception &e) {
    error = "a tensor name or metadata string is not valid UTF-8 (" + std::string(e.what()) +
            "): rename it";
    return false;
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t length = text.size();
  header.assign(8, '\0');
  for (int i = 0; i < 8; ++i)
    header[i] = char((length >> (8 * i)) & 0xff);
  header += text;
  return true;
}

bool writeSafetensors(const std::string &path, const std::vector<SafetensorsTensor> &tensors,
                      const std::optional<SafetensorsMetadata> &metadata, std::string &error,
                      const ProgressFn &progress) {
  std::string header;
  std::vector<size_t> order;
  if (!buildSafetensorsHeader(tensors, metadata, header, order, error)) {
    error = "cannot write " + path + ": " + error;
    return false;
  }
  for (const SafetensorsTensor &tensor : tensors)
    if (tensor.bytes && !tensor.data) {
      error = "cannot write " + path + ": tensor \"" + tensor.name + "\": no data";
      return false;
    }
  uint64_t data = 0, written = 0;
  for (const SafetensorsTensor &tensor : tensors)
    data += tensor.bytes;
  AtomicFile file;
  if (!file.open(path, header.size() + data, error) ||
      !file.write(header.data(), header.size(), error))
    return false;
  for (size_t index : order) {
    if (!file.write(tensors[index].data, tensors[index].bytes, error))
      return false;
    if (progress)
      progress(written += tensors[index].bytes, data);
  }
  return file.commit(error);
}


//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

SafetensorsReader::~SafetensorsReader() {
  if (fd >= 0)
    ::close(fd);
}

SafetensorsReader::SafetensorsReader(SafetensorsReader &&other) noexcept { *this = std::move(other); }

SafetensorsReader &SafetensorsReader::operator=(SafetensorsReader &&other) noexcept {
  if (this != &other) {
    if (fd >= 0)
      ::close(fd);
    filePath = std::move(other.filePath);
    fileStamp = other.fileStamp;
    fd = other.fd;
    other.fd = -1;
    dataOffset = other.dataOffset;
    metadataPresent = other.metadataPresent;
    metadataEntries = std::move(other.metadataEntries);
    entries = std::move(other.entries);
    byName = std::move(other.byName);
  }
  return *this;
}

bool SafetensorsReader::open(const std::string &path, std::string &error) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
  filePath = path;
  metadataPresent = false;
  metadataEntries.clear();
  entries.clear();
  byName.clear();
  auto fail = [&](const std::string &why) {
    error = path + ": " + why;
    if (fd >= 0)
      ::close(fd);
    fd = -1;
    return false;
  };

  // Without blocking: a FIFO under a shard's name is refused, not waited on.
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return fail(errno == ENOENT ? "no such file" : errnoText(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0)
    return fail(errnoText(errno));
  if (!S_ISREG(info.st_mode))
    return fail(fileKindText(info.st_mode) + ", not a regular file");
  uint64_t fileSize = uint64_t(info.st_size);
  fileStamp = FileStamp::of(info);
  if (fileSize < 8)
    return fail("not a safetensors file: " + std::to_string(fileSize) +
                " bytes, shorter than the 8-byte header length (truncated?)");
  unsigned char prefix[8];
  int err = 0;
  if (!readFully(fd, 0, prefix, 8, err))
    return fail(err ? errnoText(err) : "truncated");
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = (headerSize << 8) | prefix[i];
  if (headerSize > kSafetensorsMaxHeaderSize)
    return fail("not a safetensors file: header length " + std::to_string(headerSize) +
                " exceeds the limit of " + std::to_string(kSafetensorsMaxHeaderSize));
  if (8 + headerSize > fileSize)
    return fail("header length " + std::to_string(headerSize) + " runs past the end of the " +
                std::to_string(fileSize) + "-byte file (truncated or not a safetensors file)");
  std::string text(headerSize, '\0');
  if (!readFully(fd, 8, text.data(), headerSize, err))
    return fail(err ? errnoText(err) : "truncated");

  CheckedJsonParse<nlohmann::json> parse(text.begin(), text.end());
  if (parse.tooDeep)
    return fail("header is " + parse.problem());
  if (!parse.syntaxError.empty())
    return fail("header is not valid UTF-8 JSON: " + parse.syntaxError);
  if (!parse.duplicate.empty())
    return fail("header has the key \"" + parse.duplicate + "\" twice");
  const nlohmann::json &json = parse.value;
  if (!json.is_object())
    return fail("header is not a JSON object");

  for (auto &[key, value] : json.items()) {
    if (key == "__metadata__") {
      if (!value.is_object())
        return fail("__metadata__ is not an object of strings");
      metadataPresent = true;
      for (auto &[metaKey, metaValue] : value.items()) {
        if (!metaValue.is_string())
          return fail("__metadata__[\"" + metaKey + "\"] is not a string");
        metadataEntries.emplace_back(metaKey, metaValue.get<std::string>());
      }
      continue;
    }
    std::string where = "tensor \"" + key + "\": ";
    if (!value.is_object())
      return fail(where + "not an object");
    SafetensorsEntry entry;
    entry.name = key;
    auto dtype = value.find("dtype");
    if (dtype == value.end() || !dtype->is_string())
      return fail(where + "missing dtype");
    entry.dtype = dtype->get<std::string>();
    auto shape = value.find("shape");
    if (shape == value.end() || !shape->is_array())
      return fail(where + "missing shape");
    for (auto &dim : *shape) {
      // nlohmann parses non-negative integers as unsigned, negative ones as signed.
      if (!dim.is_number_unsigned())
        return fail(where + "shape is not a list of non-negative integers");
      if (dim.get<uint64_t>() > uint64_t(INT64_MAX))
        return fail(where + "shape too large");
      entry.shape.push_back(dim.get<int64_t>());
    }
    auto offsets = value.find("data_offsets");
    if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2 ||
        !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
      return fail(where + "data_offsets is not a pair of non-negative integers");
    entry.begin = (*offsets)[0].get<uint64_t>();
    entry.end = (*offsets)[1].get<uint64_t>();
    entries.push_back(std::move(entry));
  }

  std::sort(entries.begin(), entries.end(), [](const auto &a, const auto &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expectedStart = 0;
  for (const SafetensorsEntry &entry : entries) {
    std::string where = "tensor \"" + entry.name + "\": ";
    if (entry.begin != expectedStart || entry.end < entry.begin)
      return fail(where + "data_offsets [" + std::to_string(entry.begin) + ", " +
                  std::to_string(entry.end) + "] do not start where the previous tensor ends (" +
                  std::to_string(expectedStart) + "): the data has a hole or an overlap");
    uint64_t bytes;
    std::string why;
    if (!tensorBytes(entry.dtype, entry.shape, bytes, why))
      return fail(where + why);
    if (bytes != entry.bytes())
      return fail(where + "holds " + std::to_string(entry.bytes()) +
                  " bytes, its shape and dtype need " + std::to_string(bytes));
    expectedStart = entry.end;
  }
  byName.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i)
    byName.emplace(entries[i].name, i);
  dataOffset = 8 + headerSize;
  if (dataOffset + expectedStart != fileSize)
    return fail("file is " + std::to_string(fileSize) + " bytes, its header describes " +
                std::to_string(dataOffset + expectedStart) +
                (fileSize < dataOffset + expectedStart ? " (truncated)" : " (trailing bytes)"));
  return true;
}

const SafetensorsEntry *SafetensorsReader::find(const std::string &name) const {
  auto found = byName.find(name);
  return found == byName.end() ? nullptr : &entries[found->second];
}

const std::string *SafetensorsReader::metadataValue(const std::string &key) const {
  for (const auto &[metaKey, value] : metadataEntries)
    if (metaKey == key)
      return &value;
  return nullptr;
}

bool SafetensorsReader::unchanged() const {
  struct stat info;
  return fd >= 0 && ::fstat(fd, &info) == 0 && FileStamp::of(info) == fileStamp;
}

bool SafetensorsReader::read(uint64_t offset, void *out, uint64_t bytes,
                             std::string &error) const {
  if (fd < 0) {
    error = filePath + ": not open";
    return false;
  }
  int err = 0;
  if (!readFully(fd, dataOffset + offset, out, bytes, err)) {
    error = filePath + ": " + (err ? errnoText(err) : "the file was truncated while reading");
    return false;
  }
  return true;
}

bool SafetensorsReader::readEach(uint64_t offset, uint64_t bytes,
                                 const std::function<void(const char *, uint64_t)> &take,
                                 std::string &error) const {
  if (fd < 0) {
    error = filePath + ": not open";
    return false;
  }
  int err = readFileRange(fd, dataOffset + offset, bytes,
                          directIoWanted(fd, fileStamp.bytes, bytes), take);
  if (err) {
    error = filePath + ": " + (err > 0 ? errnoText(err) : "the file was truncated while reading");
    return false;
  }
  return true;
}

bool SafetensorsReader::checksum(const SafetensorsEntry &entry, std::string &hex,
                                 std::string &error) const {
  StreamingChecksum sum;
  if (!readEach(
          entry.begin, entry.bytes(),
          [&](const char *data, uint64_t bytes) { sum.update(data, size_t(bytes)); }, error))
    return false;
  hex = sum.hex();
  return true;
}

} // namespace initrt
