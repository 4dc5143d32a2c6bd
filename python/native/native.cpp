// initc._native: the runtime's C API (runtime/include/initrt/initrt.h) for Python, and nothing
// else. Every status other than INITRT_OK becomes initc.Error with the runtime's message; the
// GIL is released while the runtime opens a program or runs kernels.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <initrt/initrt.h>

#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

namespace nb = nanobind;

namespace {

constexpr size_t kMessageBytes = 2048;

[[noreturn]] void raiseStatus(initrt_status status, const char *message) {
  nb::object type = nb::module_::import_("initc._errors").attr("Error");
  nb::object error = type(nb::str(message), nb::str(initrt_status_name(status)));
  PyErr_SetObject(type.ptr(), error.ptr());
  throw nb::python_error();
}

nb::tuple dims(const int64_t *values, int32_t ndim) {
  nb::list out;
  for (int32_t d = 0; d < ndim; ++d)
    out.append(values[d]);
  return nb::tuple(out);
}

// A writable, C-contiguous buffer held for the length of a call (PEP 3118).
class WritableBuffer {
public:
  explicit WritableBuffer(nb::handle object) {
    if (PyObject_GetBuffer(object.ptr(), &view_, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0)
      throw nb::python_error();
  }
  ~WritableBuffer() { PyBuffer_Release(&view_); }
  WritableBuffer(const WritableBuffer &) = delete;
  WritableBuffer &operator=(const WritableBuffer &) = delete;
  void *data() const { return view_.buf; }
  size_t bytes() const { return static_cast<size_t>(view_.len); }

private:
  Py_buffer view_{};
};

class Program {
public:
  explicit Program(const std::string &dir) {
    char err[kMessageBytes] = "";
    initrt_status status;
    {
      nb::gil_scoped_release unlocked;
      status = initrt_program_open(dir.c_str(), &program_, err, sizeof err);
    }
    if (status != INITRT_OK)
      raiseStatus(status, err);
  }
  ~Program() { initrt_program_close(program_); }
  Program(const Program &) = delete;
  Program &operator=(const Program &) = delete;

  void close() {
    initrt_program_close(program_);
    program_ = nullptr;
  }

  int64_t worldSize() const { return initrt_world_size(open()); }
  int64_t paramCount() const { return initrt_param_count(open()); }
  int64_t paramIndex(const std::string &name) const {
    return initrt_param_index(open(), name.c_str());
  }

  // (name, dtype, is_buffer, persistent, global shape, slice offset, slice shape, elements, bytes)
  nb::tuple paramInfo(int64_t rank, int64_t index) const {
    struct initrt_param_info info;
    initrt_status status = initrt_param_info(open(), rank, index, &info);
    if (status != INITRT_OK) {
      char err[kMessageBytes];
      std::snprintf(err, sizeof err,
                    "no parameter %lld for rank %lld: the program has %lld parameters and %lld "
                    "ranks",
                    static_cast<long long>(index), static_cast<long long>(rank),
                    static_cast<long long>(initrt_param_count(program_)),
                    static_cast<long long>(initrt_world_size(program_)));
      raiseStatus(status, err);
    }
    return nb::make_tuple(std::string(info.name), std::string(info.dtype), info.is_buffer != 0,
                          info.persistent != 0, dims(info.global_shape, info.ndim),
                          dims(info.slice_offset, info.ndim), dims(info.slice_shape, info.ndim),
                          info.elements, info.bytes);
  }

  void fill(int64_t rank, const std::string &name, nb::handle buffer, int threads) const {
    const initrt_program *program = open();
    WritableBuffer out(buffer);
    char err[kMessageBytes] = "";
    initrt_status status;
    {
      nb::gil_scoped_release unlocked;
      status = initrt_fill(program, rank, name.c_str(), out.data(), out.bytes(), threads, err,
                           sizeof err);
    }
    if (status != INITRT_OK)
      raiseStatus(status, err);
  }

  // Fills the box [offset, offset + shape) of `name` into `array` (anything DLPack or the
  // buffer protocol exports: a numpy array, a torch tensor, ...), whose shape is the box's and
  // whose strides may be any the C API takes. Its dtype is the parameter's, or an unsigned
  // integer of the same width (a raw view, as numpy has no bfloat16 of its own).
  void fillBox(const std::string &name, const std::vector<int64_t> &offset,
               nb::ndarray<nb::device::cpu> array, int threads) const {
    const initrt_program *program = open();
    Box box = checkedBox(program, name, offset, array);
    initrt_box c = box.c();
    char err[kMessageBytes] = "";
    initrt_status status;
    {
      nb::gil_scoped_release unlocked;
      status = initrt_fill_box(program, c.name, c.ndim, c.offset, c.shape, c.strides, c.buf,
                               c.buf_bytes, threads, err, sizeof err);
    }
    if (status != INITRT_OK)
      raiseStatus(status, err);
  }

  // Fills every (name, offset, array) of `boxes` as fillBox would, in one run of the runtime's
  // threads (initrt_fill_boxes): every box is checked before any is written.
  void fillBoxes(const std::vector<std::tuple<std::string, std::vector<int64_t>,
                                              nb::ndarray<nb::device::cpu>>> &boxes,
                 int threads) const {
    const initrt_program *program = open();
    std::vector<Box> checked;
    checked.reserve(boxes.size());
    for (const auto &[name, offset, array] : boxes)
      checked.push_back(checkedBox(program, name, offset, array));
    std::vector<initrt_box> c;
    c.reserve(checked.size());
    for (const Box &box : checked)
      c.push_back(box.c());
    run(program, c.size(), c.data(), threads);
  }

private:
  // One destination checked against its parameter, as initrt_box wants it.
  struct Box {
    std::string name;
    std::vector<int64_t> offset, shape, strides;
    void *data = nullptr;
    size_t bytes = 0;
    initrt_box c() const {
      return {name.c_str(), int32_t(shape.size()), offset.data(), shape.data(),
              strides.data(), data, bytes};
    }
  };

  static Box checkedBox(const initrt_program *program, const std::string &name,
                        const std::vector<int64_t> &offset,
                        const nb::ndarray<nb::device::cpu> &array) {
    const std::string expected = dtypeOf(program, name);
    if (array.ndim() != offset.size())
      raiseStatus(INITRT_INVALID_ARGUMENT,
                  (name + ": the array has " + std::to_string(array.ndim()) +
                   " dims but the box offset " + std::to_string(offset.size()))
                      .c_str());
    nb::dlpack::dtype got = array.dtype();
    if (got.lanes != 1 || !(dtypeName(got) == expected ||
                            (got.code == uint8_t(nb::dlpack::dtype_code::UInt) &&
                             got.bits == elementBits(expected))))
      raiseStatus(INITRT_INVALID_ARGUMENT,
                  (name + " is " + expected + " but the array's elements are " +
                   dtypeName(got))
                      .c_str());
    Box box;
    box.name = name;
    box.offset = offset;
    box.shape.resize(array.ndim());
    box.strides.resize(array.ndim());
    uint64_t extent = array.ndim() == 0 || array.size() > 0 ? 1 : 0;
    for (size_t d = 0; d < array.ndim(); ++d) {
      box.shape[d] = int64_t(array.shape(d));
      box.strides[d] = array.stride(d);
      if (array.size() > 0 && box.strides[d] > 0)
        extent += uint64_t(box.shape[d] - 1) * uint64_t(box.strides[d]);
    }
    box.bytes = size_t(extent) * (got.bits / 8);
    box.data = array.data();
    return box;
  }

  static void run(const initrt_program *program, size_t count, const initrt_box *boxes,
                  int threads) {
    char err[kMessageBytes] = "";
    initrt_status status;
    {
      nb::gil_scoped_release unlocked;
      status = initrt_fill_boxes(program, count, boxes, threads, err, sizeof err);
    }
    if (status != INITRT_OK)
      raiseStatus(status, err);
  }

  const initrt_program *open() const {
    if (program_ == nullptr)
      throw nb::value_error("the program is closed");
    return program_;
  }

  initrt_program *program_ = nullptr;

  // The dtype name of parameter (or alias) `name`; initc.Error naming it when there is none.
  static std::string dtypeOf(const initrt_program *program, const std::string &name) {
    struct initrt_param_info info;
    int64_t index = initrt_param_index(program, name.c_str());
    if (index < 0 || initrt_param_info(program, 0, index, &info) != INITRT_OK)
      raiseStatus(INITRT_NOT_FOUND, ("the program has no parameter named " + name).c_str());
    return info.dtype;
  }

  static std::string dtypeName(nb::dlpack::dtype dtype) {
    using code = nb::dlpack::dtype_code;
    std::string bits = std::to_string(dtype.bits);
    switch (code(dtype.code)) {
    case code::Float:
      return "F" + bits;
    case code::Bfloat:
      return "BF" + bits;
    case code::Int:
      return "I" + bits;
    case code::UInt:
      return "U" + bits;
    case code::Bool:
      return "BOOL";
    default:
      return "an unsupported type (DLPack code " + std::to_string(dtype.code) + ", " + bits +
             " bits)";
    }
  }

  static uint8_t elementBits(const std::string &dtype) {
    if (dtype == "F64" || dtype == "I64")
      return 64;
    if (dtype == "F32")
      return 32;
    if (dtype == "BOOL")
      return 8;
    return 16;
  }
};

} // namespace

NB_MODULE(_native, m) {
  m.doc() = "The initc runtime's C API (initrt.h); use initc.load rather than this module.";
  nb::class_<Program>(m, "Program")
      .def(nb::init<const std::string &>(), nb::arg("prog_dir"))
      .def("close", &Program::close)
      .def("world_size", &Program::worldSize)
      .def("param_count", &Program::paramCount)
      .def("param_index",
           [](const Program &self, const std::string &name) { return self.paramIndex(name); },
           nb::arg("name"))
      .def("param_info", &Program::paramInfo, nb::arg("rank"), nb::arg("index"))
      .def("fill", &Program::fill, nb::arg("rank"), nb::arg("name"), nb::arg("buffer"),
           nb::arg("threads") = 0)
      .def("fill_box", &Program::fillBox, nb::arg("name"), nb::arg("offset"), nb::arg("array"),
           nb::arg("threads") = 0)
      .def("fill_boxes", &Program::fillBoxes, nb::arg("boxes"), nb::arg("threads") = 0);
}
