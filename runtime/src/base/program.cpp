// DType helpers, Mesh/Param methods, and program.json reading, validation and writing.
#include "initrt/base/program.h"
#include "initrt/base/atomic_file.h"
#include "initrt/base/checksum.h"
#include "initrt/base/files.h"
#include "initrt/base/json_text.h"
#include "initrt/base/program_io.h"
#include "initrt/base/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>
#include <unistd.h>

namespace initrt {

using nlohmann::json;

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::BF16:
    return "BF16";
  case DType::F16:
    return "F16";
  case DType::F64:
    return "F64";
  case DType::BOOL:
    return "BOOL";
  case DType::I64:
    return "I64";
  }
  return "?";
}

bool parseDType(const std::string &name, DType &out) {
  static const DType all[] = {DType::F32, DType::BF16, DType::F16,
                              DType::F64, DType::BOOL, DType::I64};
  for (DType dtype : all) {
    if (name == dtypeName(dtype)) {
      out = dtype;
      return true;
    }
  }
  return false;
}

int64_t dtypeBytes(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return 4;
  case DType::BF16:
  case DType::F16:
    return 2;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::BOOL:
    return 1;
  }
  return 0;
}

int64_t Mesh::size() const {
  int64_t total = 1;
  for (int64_t extent : shape)
    total *= extent;
  return total;
}

int64_t Param::numElements() const {
  int64_t total = 1;
  for (int64_t extent : shape)
    total *= extent;
  return total;
}

namespace {

// Seeds above 2^53 do not survive a round trip through a double, so they travel as strings.
constexpr uint64_t kMaxExactJsonInteger = uint64_t(1) << 53;

// program.json nests the config one level below its top: the config may use one level fewer than
// every document the runtime reads.
constexpr int kMaxHfConfigNesting = kMaxJsonNesting - 1;

// Containers open at the deepest point of `value`; parsed documents are at most kMaxJsonNesting
// deep, so the recursion is bounded.
template <class JsonT> int nestingOf(const JsonT &value) {
  int deepest = 0;
  if (value.is_structured())
    for (const auto &child : value)
      deepest = std::max(deepest, nestingOf(child));
  return value.is_structured() ? deepest + 1 : deepest;
}

// A config object as program.json's reader returns it: keys sorted (nlohmann::json's map), two
// spaces of indent, a final newline -- the layout transformers' save_pretrained gives a config.
std::string hfConfigText(const json &config) {
  return config.dump(2, ' ', /*ensure_ascii=*/false) + "\n";
}

bool isHex16(const std::string &text) {
  if (text.size() != 16)
    return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

std::string paramWhere(size_t index, const std::string &name) {
  std::string where = "params[" + std::to_string(index) + "]";
  if (!name.empty())
    where += " (" + name + ")";
  return where;
}

// Walks the parsed JSON with explicit type checks; every failure names the field.
class ProgramReader {
public:
  ProgramReader(const std::string &source, std::string &error) : source(source), error(error) {}

  bool read(const json &root, Program &out) {
    if (!root.is_object())
      return fail("", "the top level must be a JSON object");
    if (!checkKeys(root, "",
                   {"format", "version", "model", "seed", "mesh", "kernels", "program_id",
                    "hf_config", "params", "checksum"}))
      return false;
    std::string format;
    if (!getString(root, "format", "", format))
      return false;
    if (format != "initc-program")
      return fail("format", "is \"" + format + "\", expected \"initc-program\"");
    int64_t version;
    if (!getInt(root, "version", "", version))
      return false;
    if (version != kProgramFormatVersion)
      return fail("version", "is " + std::to_string(version) + " but this runtime reads version " +
                                 std::to_string(kProgramFormatVersion) +
                                 ": recompile with a matching initc");
    out.formatVersion = int(version);
    if (!getString(root, "model", "", out.modelName) || !getSeed(root, out.seed) ||
        !getString(root, "program_id", "", out.programId))
      return false;
    if (!readMesh(root, out.mesh) || !readKernels(root, out))
      return false;
    // Absent for a program whose IR did not come from `initc import hf`.
    if (auto config = root.find("hf_config"); config != root.end()) {
      if (!config->is_object())
        return fail("hf_config", "must be a JSON object (the model's config.json)");
      out.hfConfig = hfConfigText(*config);
    }
    const json *params;
    if (!getMember(root, "params", "", params))
      return false;
    if (!params->is_array())
      return fail("params", "must be an array");
    // Each parameter was read as the parse met it; the first one wrong is said after every
    // error of the fields before "params".
    if (!paramError.empty()) {
      error = paramError;
      return false;
    }
    out.params = std::move(taken);
    return true;
  }

  /// Reads the next element of "params", which the parse then drops: a program's parameters
  /// never stand whole in memory as JSON. After the first one that is wrong, the rest are not
  /// read.
  void takeParam(const json &element) {
    if (!paramError.empty())
      return;
    const size_t index = taken.size();
    Param param;
    bool ok;
    try {
      ok = readParam(element, index, param);
    } catch (const json::exception &e) {
      ok = fail("", e.what());
    }
    if (ok)
      taken.push_back(std::move(param));
    else
      paramError = error;
  }

private:
  const std::string &source;
  std::string &error;
  std::vector<Param> taken; // "params", as read so far
  std::string paramError;   // the first wrong parameter's error

  bool fail(const std::string &field, const std::string &what) {
    error = source + ": " + (field.empty() ? "" : "field \"" + field + "\" ") + what;
    return false;
  }

  static std::string join(const std::string &where, const char *key) {
    return where.empty() ? std::string(key) : where + "." + key;
  }

  bool checkKeys(const json &object, const std::string &where,
                 std::initializer_list<std::string_view> known) {
    for (auto it = object.begin(); it != object.end(); ++it) {
      const std::string_view name = it.key();
      if (std::find(known.begin(), known.end(), name) == known.end())
        return fail(join(where, it.key().c_str()),
                    "is not part of program format version " +
                        std::to_string(kProgramFormatVersion));
    }
    return true;
  }

  bool getMember(const json &object, const char *key, const std::string &where,
                 const json *&out) {
    auto it = object.find(key);
    if (it == object.end())
      return fail(join(where, key), "is missing");
    out = &*it;
    return true;
  }

  bool getString(const json &object, const char *key, const std::string &where,
                 std::string &out) {
    const json *value;
    if (!getMember(object, key, where, value))
      return false;
    if (!value->is_string())
      return fail(join(where, key), "must be a string");
    out = value->get<std::string>();
    return true;
  }

  bool toInt(const json &value, int64_t &out) {
    if (value.is_number_integer() && !value.is_number_unsigned()) {
      out = value.get<int64_t>();
      return true;
    }
    if (value.is_number_unsigned()) {
      uint64_t raw = value.get<uint64_t>();
      if (raw > uint64_t(INT64_MAX))
        return false;
      out = int64_t(raw);
      return true;
    }
    return false;
  }

  bool getInt(const json &object, const char *key, const std::string &where, int64_t &out) {
    const json *value;
    if (!getMember(object, key, where, value))
      return false;
    if (!toInt(*value, out))
      return fail(join(where, key), "must be an integer");
    return true;
  }

  bool getBool(const json &object, const char *key, const std::string &where, bool &out) {
    const json *value;
    if (!getMember(object, key, where, value))
      return false;
    if (!value->is_boolean())
      return fail(join(where, key), "must be true or false");
    out = value->get<bool>();
    return true;
  }

  bool getSeed(const json &root, uint64_t &out) {
    const json *value;
    if (!getMember(root, "seed", "", value))
      return false;
    if (value->is_number_unsigned()) {
      out = value->get<uint64_t>();
      return true;
    }
    if (value->is_number_integer())
      return fail("seed", "must not be negative");
    if (value->is_string()) {
      const std::string text = value->get<std::string>();
      uint64_t seed = 0;
      bool ok = !text.empty() && text.size() <= 20;
      for (char c : text) {
        if (!ok || c < '0' || c > '9') {
          ok = false;
          break;
        }
        ok = !__builtin_mul_overflow(seed, uint64_t(10), &seed) &&
             !__builtin_add_overflow(seed, uint64_t(c - '0'), &seed);
      }
      if (!ok)
        return fail("seed", "\"" + text + "\" is not a decimal integer in [0, 2^64)");
      out = seed;
      return true;
    }
    return fail("seed", "must be an unsigned integer (or a decimal string above 2^53)");
  }

  // An unsigned 64-bit integer written as a JSON number (<= 2^53) or a decimal string.
  bool toU64(const json &value, const std::string &field, uint64_t &out) {
    if (value.is_number_unsigned()) {
      out = value.get<uint64_t>();
      return true;
    }
    if (value.is_string()) {
      const std::string text = value.get<std::string>();
      uint64_t n = 0;
      bool ok = !text.empty() && text.size() <= 20;
      for (char c : text) {
        if (!ok || c < '0' || c > '9') {
          ok = false;
          break;
        }
        ok = !__builtin_mul_overflow(n, uint64_t(10), &n) &&
             !__builtin_add_overflow(n, uint64_t(c - '0'), &n);
      }
      if (ok) {
        out = n;
        return true;
      }
    }
    return fail(field, "must be an unsigned 64-bit integer (a decimal string above 2^53)");
  }

  bool readMesh(const json &root, Mesh &mesh) {
    const json *value;
    if (!getMember(root, "mesh", "", value))
      return false;
    if (!value->is_object())
      return fail("mesh", "must be an object with \"axes\" and \"shape\"");
    if (!checkKeys(*value, "mesh", {"axes", "shape"}))
      return false;
    const json *axes, *shape;
    if (!getMember(*value, "axes", "mesh", axes) || !getMember(*value, "shape", "mesh", shape))
      return false;
    if (!axes->is_array())
      return fail("mesh.axes", "must be an array of axis names");
    if (!shape->is_array())
      return fail("mesh.shape", "must be an array of integers");
    mesh.axisNames.clear();
    mesh.shape.clear();
    for (size_t i = 0; i < axes->size(); ++i) {
      if (!(*axes)[i].is_string())
        return fail("mesh.axes[" + std::to_string(i) + "]", "must be a string");
      mesh.axisNames.push_back((*axes)[i].get<std::string>());
    }
    for (size_t i = 0; i < shape->size(); ++i) {
      int64_t extent;
      if (!toInt((*shape)[i], extent))
        return fail("mesh.shape[" + std::to_string(i) + "]", "must be an integer");
      mesh.shape.push_back(extent);
    }
    return true;
  }

  bool readKernels(const json &root, Program &out) {
    const json *value;
    if (!getMember(root, "kernels", "", value))
      return false;
    if (!value->is_object())
      return fail("kernels", "must be an object with \"file\", \"checksum\", \"variants\"");
    if (!checkKeys(*value, "kernels", {"file", "checksum", "variants"}))
      return false;
    if (!getString(*value, "file", "kernels", out.kernelsFile) ||
        !getString(*value, "checksum", "kernels", out.kernelsChecksum))
      return false;
    const json *variants;
    if (!getMember(*value, "variants", "kernels", variants))
      return false;
    if (!variants->is_array() || variants->empty())
      return fail("kernels.variants", "must be a non-empty array");
    out.kernelVariants.clear();
    for (size_t i = 0; i < variants->size(); ++i) {
      std::string where = "kernels.variants[" + std::to_string(i) + "]";
      const json &entry = (*variants)[i];
      KernelVariant variant;
      if (!entry.is_object())
        return fail(where, "must be an object with \"target_cpu\", \"suffix\", \"extensions\"");
      const json *extensions;
      if (!checkKeys(entry, where, {"target_cpu", "suffix", "extensions"}) ||
          !getString(entry, "target_cpu", where, variant.targetCpu) ||
          !getString(entry, "suffix", where, variant.suffix) ||
          !getMember(entry, "extensions", where, extensions))
        return false;
      if (!extensions->is_array())
        return fail(where + ".extensions", "must be an array of strings");
      for (size_t e = 0; e < extensions->size(); ++e) {
        const json &name = (*extensions)[e];
        if (!name.is_string() || name.get<std::string>().empty())
          return fail(where + ".extensions[" + std::to_string(e) + "]",
                      "must be a non-empty string");
        variant.extensions.push_back(name.get<std::string>());
      }
      out.kernelVariants.push_back(std::move(variant));
    }
    return true;
  }

  bool readParam(const json &value, size_t index, Param &param) {
    std::string where = paramWhere(index, "");
    if (!value.is_object())
      return fail(where, "must be an object");
    // The name first, so that every later error can name the parameter.
    if (!getString(value, "name", where, param.name))
      return false;
    where = paramWhere(index, param.name);
    if (!checkKeys(value, where,
                   {"name", "aliases", "dtype", "shape", "split_axes", "stage", "kernel", "kernel_args",
                    "buffer", "persistent", "transform", "gain", "load"}))
      return false;
    const json *aliases, *shape, *splitAxes;
    if (!getMember(value, "aliases", where, aliases))
      return false;
    if (!aliases->is_array())
      return fail(where + ".aliases", "must be an array of strings");
    for (size_t i = 0; i < aliases->size(); ++i) {
      if (!(*aliases)[i].is_string())
        return fail(where + ".aliases[" + std::to_string(i) + "]", "must be a string");
      param.aliases.push_back((*aliases)[i].get<std::string>());
    }
    std::string dtype;
    if (!getString(value, "dtype", where, dtype))
      return false;
    if (!parseDType(dtype, param.dtype))
      return fail(where + ".dtype",
                  "is \"" + dtype + "\", expected one of F32, BF16, F16, F64, BOOL, I64");
    if (!getMember(value, "shape", where, shape))
      return false;
    if (!shape->is_array())
      return fail(where + ".shape", "must be an array of integers");
    for (size_t i = 0; i < shape->size(); ++i) {
      int64_t extent;
      if (!toInt((*shape)[i], extent))
        return fail(where + ".shape[" + std::to_string(i) + "]", "must be an integer");
      param.shape.push_back(extent);
    }
    if (!getMember(value, "split_axes", where, splitAxes))
      return false;
    if (!splitAxes->is_array())
      return fail(where + ".split_axes", "must be an array (one array of mesh axes per dim)");
    for (size_t d = 0; d < splitAxes->size(); ++d) {
      const json &axes = (*splitAxes)[d];
      std::string field = where + ".split_axes[" + std::to_string(d) + "]";
      if (!axes.is_array())
        return fail(field, "must be an array of mesh axis indices");
      std::vector<int> dimAxes;
      for (size_t k = 0; k < axes.size(); ++k) {
        int64_t axis;
        if (!toInt(axes[k], axis) || axis < INT32_MIN || axis > INT32_MAX)
          return fail(field + "[" + std::to_string(k) + "]", "must be a mesh axis index");
        dimAxes.push_back(int(axis));
      }
      param.splitAxes.push_back(std::move(dimAxes));
    }
    // Optional: only parameters placed on one pipeline stage carry it, as [axis, stage].
    if (value.contains("stage")) {
      const json &stage = value["stage"];
      int64_t axis = -1, index = -1;
      if (!stage.is_array() || stage.size() != 2 || !toInt(stage[0], axis) ||
          !toInt(stage[1], index) || axis < 0 || axis > INT32_MAX)
        return fail(where + ".stage", "must be [mesh axis index, stage index]");
      param.stageAxis = int(axis);
      param.stage = index;
    }
    // Optional: only parameters with a whole-tensor transform carry these two keys.
    if (value.contains("transform")) {
      if (!getString(value, "transform", where, param.transform))
        return false;
      const json *gain;
      if (!getMember(value, "gain", where, gain))
        return false;
      if (!gain->is_number())
        return fail(where + ".gain", "must be a number");
      param.gain = gain->get<double>();
    } else if (value.contains("gain")) {
      return fail(where + ".gain", "is only allowed together with \"transform\"");
    }
    // Optional: only init.load parameters carry it.
    if (value.contains("load")) {
      const json &load = value["load"];
      Param::Load source;
      if (!load.is_object())
        return fail(where + ".load", "must be an object with \"file\" and \"tensor\"");
      if (!checkKeys(load, where + ".load", {"file", "tensor"}) ||
          !getString(load, "file", where + ".load", source.file) ||
          !getString(load, "tensor", where + ".load", source.tensor))
        return false;
      param.load = std::move(source);
    }
    // Optional: absent when the kernel takes no arguments.
    if (value.contains("kernel_args")) {
      const json &args = value["kernel_args"];
      if (!args.is_array())
        return fail(where + ".kernel_args", "must be an array of unsigned 64-bit integers");
      for (size_t i = 0; i < args.size(); ++i) {
        uint64_t arg;
        if (!toU64(args[i], where + ".kernel_args[" + std::to_string(i) + "]", arg))
          return false;
        param.kernelArgs.push_back(arg);
      }
    }
    return getString(value, "kernel", where, param.kernel) &&
           getBool(value, "buffer", where, param.buffer) &&
           getBool(value, "persistent", where, param.persistent);
  }
};

} // namespace

bool validateProgram(const Program &program, std::string &error) {
  auto fail = [&](const std::string &field, const std::string &what) {
    error = "field \"" + field + "\" " + what;
    return false;
  };
  if (program.formatVersion != kProgramFormatVersion)
    return fail("version", "must be " + std::to_string(kProgramFormatVersion));
  const Mesh &mesh = program.mesh;
  if (mesh.axisNames.size() != mesh.shape.size())
    return fail("mesh", "has " + std::to_string(mesh.axisNames.size()) + " axis names but " +
                            std::to_string(mesh.shape.size()) + " sizes");
  std::set<std::string> axisNames;
  int64_t meshSize = 1;
  for (size_t i = 0; i < mesh.shape.size(); ++i) {
    std::string field = "mesh.axes[" + std::to_string(i) + "]";
    if (mesh.axisNames[i].empty())
      return fail(field, "must not be empty");
    if (!axisNames.insert(mesh.axisNames[i]).second)
      return fail(field, "repeats the axis name \"" + mesh.axisNames[i] + "\"");
    if (mesh.shape[i] < 1)
      return fail("mesh.shape[" + std::to_string(i) + "]",
                  "is " + std::to_string(mesh.shape[i]) + ", mesh sizes must be >= 1");
    if (__builtin_mul_overflow(meshSize, mesh.shape[i], &meshSize) || meshSize > INT32_MAX)
      return fail("mesh.shape", "has more than 2^31 - 1 devices");
  }
  if (program.kernelsFile.empty() || program.kernelsFile.find('/') != std::string::npos)
    return fail("kernels.file", "must be a file name inside the program directory");
  if (!isHex16(program.kernelsChecksum))
    return fail("kernels.checksum", "must be 16 lowercase hex digits (XXH3-64)");
  if (program.programId.empty())
    return fail("program_id", "must not be empty");
  if (!program.hfConfig.empty()) {
    std::string canonical, why;
    if (!canonicalHfConfig(program.hfConfig, canonical, why))
      return fail("hf_config", why);
  }

  std::set<std::string> tensorNames;
  for (size_t p = 0; p < program.params.size(); ++p) {
    const Param &param = program.params[p];
    const std::string where = paramWhere(p, param.name);
    if (param.name.empty())
      return fail(where + ".name", "must not be empty");
    if (!tensorNames.insert(param.name).second)
      return fail(where + ".name", "repeats the name of an earlier parameter or alias");
    for (size_t i = 0; i < param.aliases.size(); ++i) {
      std::string field = where + ".aliases[" + std::to_string(i) + "]";
      if (param.aliases[i].empty())
        return fail(field, "must not be empty");
      if (!tensorNames.insert(param.aliases[i]).second)
        return fail(field, "\"" + param.aliases[i] +
                               "\" repeats the name of an earlier parameter or alias");
    }
    int64_t elements = 1;
    for (size_t d = 0; d < param.shape.size(); ++d) {
      if (param.shape[d] < 0)
        return fail(where + ".shape[" + std::to_string(d) + "]",
                    "is " + std::to_string(param.shape[d]) + ", dims must be >= 0");
      if (__builtin_mul_overflow(elements, param.shape[d], &elements))
        return fail(where + ".shape", "has more elements than fit in a signed 64-bit integer");
    }
    int64_t bytes;
    if (__builtin_mul_overflow(elements, dtypeBytes(param.dtype), &bytes))
      return fail(where + ".shape", "has more bytes than fit in a signed 64-bit integer");
    if (param.splitAxes.size() > param.shape.size())
      return fail(where + ".split_axes",
                  "has " + std::to_string(param.splitAxes.size()) + " entries but the tensor has " +
                      std::to_string(param.shape.size()) + " dims");
    std::vector<bool> used(mesh.shape.size(), false);
    for (size_t d = 0; d < param.splitAxes.size(); ++d) {
      for (size_t k = 0; k < param.splitAxes[d].size(); ++k) {
        int axis = param.splitAxes[d][k];
        std::string field =
            where + ".split_axes[" + std::to_string(d) + "][" + std::to_string(k) + "]";
        if (axis < 0 || size_t(axis) >= mesh.shape.size())
          return fail(field, "is " + std::to_string(axis) + " but the mesh has " +
                                 std::to_string(mesh.shape.size()) + " axes");
        if (used[axis])
          return fail(field, "splits over mesh axis \"" + mesh.axisNames[axis] +
                                 "\" a second time; each axis may split a parameter once");
        used[axis] = true;
      }
    }
    if (param.stageAxis >= 0) {
      if (size_t(param.stageAxis) >= mesh.shape.size())
        return fail(where + ".stage", "names mesh axis " + std::to_string(param.stageAxis) +
                                          " but the mesh has " +
                                          std::to_string(mesh.shape.size()) + " axes");
      if (used[size_t(param.stageAxis)])
        return fail(where + ".stage", "places the parameter on a stage of mesh axis \"" +
                                          mesh.axisNames[size_t(param.stageAxis)] +
                                          "\", which also splits it");
      if (param.stage < 0 || param.stage >= mesh.shape[size_t(param.stageAxis)])
        return fail(where + ".stage", "is stage " + std::to_string(param.stage) + " of mesh axis \"" +
                                          mesh.axisNames[size_t(param.stageAxis)] + "\" of size " +
                                          std::to_string(mesh.shape[size_t(param.stageAxis)]));
      if (param.shape.empty())
        return fail(where + ".stage", "places a scalar on a stage: scalars are held by every rank");
    }
    if (param.load) {
      if (param.load->file.empty() || param.load->tensor.empty())
        return fail(where + ".load", "must name a file and a tensor");
      if (param.load->file.find('\0') != std::string::npos)
        return fail(where + ".load.file", "must not contain a NUL character");
      if (!param.kernel.empty() || !param.kernelArgs.empty() || !param.transform.empty())
        return fail(where + ".load", "is only allowed without a kernel, kernel_args or transform");
    } else if (param.kernel.empty()) {
      return fail(where + ".kernel", "must name a kernel symbol");
    }
    if (!param.transform.empty()) {
      if (param.transform != "orthogonal")
        return fail(where + ".transform",
                    "is \"" + param.transform + "\", expected \"orthogonal\" (or no transform)");
      if (!std::isfinite(param.gain))
        return fail(where + ".gain", "must be finite");
      if (param.shape.size() < 2)
        return fail(where + ".transform", "\"orthogonal\" needs a tensor of rank 2 or more");
      if (param.dtype != DType::F32 && param.dtype != DType::BF16 &&
          param.dtype != DType::F16 && param.dtype != DType::F64)
        return fail(where + ".transform", "\"orthogonal\" needs a floating-point dtype");
    }
  }
  return true;
}

namespace {
// parseProgramJson, leaving the parsed document in `root`.
bool parseProgramDocument(const std::string &text, const std::string &source, json &root,
                          Program &out, std::string &error) {
  ProgramReader reader(source, error);
  CheckedJsonParse<json> parse(text.begin(), text.end(), "params",
                               [&](json &element) { reader.takeParam(element); });
  if (std::string why = parse.problem(); !why.empty()) {
    error = source + ": not valid JSON (" + why + "): recompile the program";
    return false;
  }
  root = std::move(parse.value);
  Program program;
  try {
    if (!reader.read(root, program))
      return false;
  } catch (const json::exception &e) {
    error = source + ": " + e.what();
    return false;
  }
  std::string what;
  if (!validateProgram(program, what)) {
    error = source + ": " + what;
    return false;
  }
  out = std::move(program);
  return true;
}

// Whether `recorded` is the checksum of `program` as programToJson writes it. A file as
// writeProgramJson left it is that very text with the checksum as its last member: hashing the
// file's text less that member spares serializing a program of many parameters again.
bool checksumMatches(const std::string &text, const std::string &recorded, const Program &program) {
  const std::string member = ",\n \"checksum\": \"" + recorded + "\"\n}\n";
  if (text.size() > member.size() &&
      text.compare(text.size() - member.size(), member.size(), member) == 0) {
    StreamingChecksum written;
    written.update(text.data(), text.size() - member.size());
    written.update("\n}\n", 3);
    if (written.hex() == recorded)
      return true;
  }
  return programChecksum(program) == recorded; // laid out otherwise, or edited
}
} // namespace

bool parseProgramJson(const std::string &text, const std::string &source, Program &out,
                      std::string &error) {
  json root;
  return parseProgramDocument(text, source, root, out, error);
}

bool readProgram(const std::string &progDir, Program &out, std::string &error) {
  const std::string path = progDir + "/program.json";
  std::string text, why;
  switch (readRegularFile(path, kMaxJsonFileBytes, text, why)) {
  case ReadFileStatus::Ok:
    break;
  case ReadFileStatus::OpenFailed:
    error = "cannot open " + path + ": " + (why == "no such file" ? std::strerror(ENOENT) : why) +
            " (is " + progDir + " a directory written by `initc compile`?)";
    return false;
  case ReadFileStatus::NotRegular:
    error = path + " is " + why + ", not a regular file: " + progDir +
            " is not a program directory written by `initc compile`; recompile";
    return false;
  case ReadFileStatus::TooLarge:
    error = path + " is " + why + " (a program for 16,384 ranks is a few MB): it is not a "
            "program.json written by `initc compile`; recompile";
    return false;
  case ReadFileStatus::ReadFailed:
    error = "cannot read " + path + ": " + why;
    return false;
  }
  Program program;
  json root;
  if (!parseProgramDocument(text, path, root, program, error))
    return false;
  // The checksum covers the document as programToJson writes it without the checksum, so an
  // edited or damaged file is refused rather than producing another model's values.
  auto recorded = root.find("checksum");
  if (recorded == root.end() || !recorded->is_string() ||
      !checksumMatches(text, recorded->get<std::string>(), program)) {
    error = path + ": " +
            (recorded != root.end() ? "the contents do not match \"checksum\""
                                    : std::string("no \"checksum\"")) +
            ": the file was edited or is damaged; recompile with `initc compile`";
    return false;
  }
  out = std::move(program);
  return true;
}

bool canonicalHfConfig(const std::string &text, std::string &out, std::string &why) {
  const std::string tooDeep = "nests deeper than " + std::to_string(kMaxHfConfigNesting) +
                              " levels, more than program.json can hold: a config.json nests 2 "
                              "or 3";
  CheckedJsonParse<json> parse(text.begin(), text.end());
  if (parse.tooDeep) {
    why = tooDeep;
    return false;
  }
  if (!parse.syntaxError.empty()) {
    why = "is not valid JSON (" + parse.syntaxError + "): pass the model's config.json";
    return false;
  }
  // Python's json keeps the last of two equal keys, other readers the first: the model would
  // depend on who reads the config.
  if (!parse.duplicate.empty()) {
    why = "has the key \"" + parse.duplicate +
          "\" twice in one object, which JSON readers resolve differently: keep one";
    return false;
  }
  const json &config = parse.value;
  if (!config.is_object()) {
    why = "must be a JSON object ({...}), as a config.json is";
    return false;
  }
  if (nestingOf(config) > kMaxHfConfigNesting) {
    why = tooDeep;
    return false;
  }
  out = hfConfigText(config);
  return true;
}

std::string programChecksum(const Program &program) {
  std::string text = programToJson(program);
  return checksumHex(text.data(), text.size());
}

std::string programToJson(const Program &program) {
  // Keys in the order ir-spec/program-format.md lists them.
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  root["format"] = "initc-program";
  root["version"] = program.formatVersion;
  root["model"] = program.modelName;
  if (program.seed > kMaxExactJsonInteger)
    root["seed"] = std::to_string(program.seed);
  else
    root["seed"] = program.seed;
  root["mesh"]["axes"] = program.mesh.axisNames;
  root["mesh"]["shape"] = program.mesh.shape;
  root["kernels"]["file"] = program.kernelsFile;
  root["kernels"]["checksum"] = program.kernelsChecksum;
  root["kernels"]["variants"] = nlohmann::ordered_json::array();
  for (const KernelVariant &variant : program.kernelVariants)
    root["kernels"]["variants"].push_back(
        {{"target_cpu", variant.targetCpu},
         {"suffix", variant.suffix},
         {"extensions", variant.extensions}});
  root["program_id"] = program.programId;
  if (!program.hfConfig.empty()) {
    // Parsed as the reader parses it (keys sorted), so a program read back prints the same; the
    // checked parse, because printing a document nested without bound would overflow the stack.
    CheckedJsonParse<json> config(program.hfConfig.begin(), program.hfConfig.end());
    if (!config.problem().empty())
      root["hf_config"] = program.hfConfig; // invalid: validateProgram refuses it before a write
    else
      root["hf_config"] = nlohmann::ordered_json::parse(config.value.dump());
  }
  nlohmann::ordered_json params = nlohmann::ordered_json::array();
  for (const Param &param : program.params) {
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["name"] = param.name;
    entry["aliases"] = param.aliases;
    entry["dtype"] = dtypeName(param.dtype);
    entry["shape"] = param.shape;
    nlohmann::ordered_json splitAxes = nlohmann::ordered_json::array();
    for (const std::vector<int> &axes : param.splitAxes)
      splitAxes.push_back(axes);
    entry["split_axes"] = std::move(splitAxes);
    if (param.stageAxis >= 0)
      entry["stage"] = {param.stageAxis, param.stage};
    entry["kernel"] = param.kernel;
    if (!param.kernelArgs.empty()) {
      nlohmann::ordered_json args = nlohmann::ordered_json::array();
      for (uint64_t arg : param.kernelArgs)
        if (arg > kMaxExactJsonInteger)
          args.push_back(std::to_string(arg));
        else
          args.push_back(arg);
      entry["kernel_args"] = std::move(args);
    }
    entry["buffer"] = param.buffer;
    entry["persistent"] = param.persistent;
    if (!param.transform.empty()) {
      entry["transform"] = param.transform;
      entry["gain"] = param.gain;
    }
    if (param.load)
      entry["load"] = {{"file", param.load->file}, {"tensor", param.load->tensor}};
    params.push_back(std::move(entry));
  }
  root["params"] = std::move(params);
  // Invalid UTF-8 in a name is replaced rather than thrown: validation happens on read.
  return root.dump(1, ' ', /*ensure_ascii=*/false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

bool writeProgramJson(const std::string &path, const Program &program, std::string &error) {
  std::string what;
  if (!validateProgram(program, what)) {
    error = "refusing to write an invalid " + path + ": " + what;
    return false;
  }
  // The checksum goes in as the last member, as checksumMatches expects to find it: the text
  // is programToJson's with `,\n "checksum": "..."` before its closing brace.
  std::string text = programToJson(program);
  const std::string checksum = checksumHex(text.data(), text.size());
  const std::string end = "\n}\n";
  if (text.size() < end.size() || text.compare(text.size() - end.size(), end.size(), end) != 0) {
    error = "cannot write " + path + ": the program's JSON does not end as an object";
    return false;
  }
  text.resize(text.size() - end.size());
  text += ",\n \"checksum\": \"" + checksum + "\"" + end;
  return writeFileAtomically(path, text, error);
}

} // namespace initrt
