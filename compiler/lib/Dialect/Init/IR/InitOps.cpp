//===- InitOps.cpp - operations of the init dialect -----------------------===//
//
// Verifiers cite the constraint labels of ir-spec/dialect.md.
//
//===----------------------------------------------------------------------===//
#include "initc/Dialect/Init/IR/InitOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"

#include <charconv>
#include <cmath>

using namespace mlir;
using namespace initc::init;

#include "initc/Dialect/Init/IR/InitEnums.cpp.inc"

#define GET_OP_CLASSES
#include "initc/Dialect/Init/IR/InitOps.cpp.inc"

namespace initc::init {

LogicalResult computeFans(ArrayRef<int64_t> shape, double &fanIn, double &fanOut) {
  if (shape.size() < 2)
    return failure();
  double receptive = 1;
  for (int64_t d : shape.drop_front(2))
    receptive *= (double)d;
  fanIn = (double)shape[1] * receptive;
  fanOut = (double)shape[0] * receptive;
  return success();
}

uint64_t getModelSeed(ModuleOp module) {
  for (auto seed : module.getOps<SeedOp>())
    return seed.getValue();
  return 0;
}

SmallVector<std::string> getMeshAxisNames(mesh::MeshOp mesh) {
  SmallVector<std::string> names;
  if (auto attr = mesh->getAttrOfType<ArrayAttr>(InitDialect::kAxisNamesAttr)) {
    for (Attribute a : attr)
      names.push_back(cast<StringAttr>(a).getValue().str());
    return names;
  }
  for (int64_t i = 0; i < mesh.getRank(); ++i)
    names.push_back("axis" + std::to_string(i));
  return names;
}

LogicalResult verifyModel(ModuleOp module) {
  // M2: parameters live at the top level; a nested module's would be skipped without a word.
  for (auto nested : module.getOps<ModuleOp>())
    return nested.emitError()
           << "nested modules are not read: put every 'init.param' at the top level of the file";
  // M3: a model initializes something.
  if (module.getOps<ParamOp>().empty())
    return module.emitError()
           << "the model has no 'init.param': there is nothing to initialize (ir-spec/dialect.md "
              "shows the form of a parameter)";
  // M1: a module holding parameters has exactly one seed.
  if (module.getOps<SeedOp>().empty())
    return module.emitError()
           << "the model has no 'init.seed': add one, e.g. 'init.seed 0' (initc import hf writes "
              "it from --seed)";
  // M4: a mesh has at most 2^31 - 1 devices: one MPI rank (an int) each.
  for (auto mesh : module.getOps<mesh::MeshOp>()) {
    int64_t devices = 1;
    for (int64_t size : mesh.getShape())
      if (size > 0 && (__builtin_mul_overflow(devices, size, &devices) || devices > INT32_MAX))
        return mesh.emitError() << "mesh '@" << mesh.getSymName()
                                << "' has more than 2^31 - 1 devices (one MPI rank each)";
  }
  // M5: the model's bytes are counted in signed 64 bits downstream (C12 bounds each parameter).
  uint64_t total = 0;
  for (ParamOp param : module.getOps<ParamOp>()) {
    if (param.getTiedTo())
      continue;
    RankedTensorType type = param.getTensorType();
    uint64_t bytes = (type.getElementTypeBitWidth() + 7) / 8;
    for (int64_t dim : type.getShape())
      bytes *= uint64_t(dim);
    if (__builtin_add_overflow(total, bytes, &total) || total > (uint64_t)INT64_MAX)
      return param.emitError() << "the parameters up to this one hold more than 2^63 - 1 bytes "
                                  "in all; check the shapes";
  }
  return success();
}

} // namespace initc::init

static bool isFiniteValue(double v) { return std::isfinite(v); }

/// `v` in the type an op of element type `element` computes in (f64 for f64, else f32): a
/// parameter of 1e300 is finite as a double but infinite as the f32 the samples are made in.
/// The shortest decimal that reads back as `v`: 1.00000001 stays distinct from 1.
static std::string shortestText(double v) {
  char text[32];
  return std::string(text, std::to_chars(text, text + sizeof(text), v).ptr);
}

static double inComputeType(double v, Type element) {
  return element.isF64() ? v : (double)(float)v;
}
static double inComputeType(double v, Value result) {
  return inComputeType(v, cast<ShapedType>(result.getType()).getElementType());
}
/// Random samples are f32 whatever the element type (an f64 sample is the f32 one widened,
/// rng.md rule 8): their parameters must be usable there. 1e39 is finite as an f64 and infinite
/// as the f32 the samples are made in, which would make every element NaN.
static double inF32(double v) { return (double)(float)v; }

//===----------------------------------------------------------------------===//
// SeedOp
//===----------------------------------------------------------------------===//

LogicalResult SeedOp::verify() {
  // C1: at most one seed per module.
  auto module = (*this)->getParentOfType<ModuleOp>();
  for (auto other : module.getOps<SeedOp>())
    if (other != *this && other->isBeforeInBlock(*this))
      return emitOpError("the module already has a seed; keep exactly one 'init.seed'");
  return success();
}

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

Value ParamOp::getYieldedValue() {
  if (getBody().empty() || getBody().front().empty())
    return {};
  auto yield = dyn_cast<YieldOp>(getBody().front().back());
  return yield ? yield.getValue() : Value();
}

LogicalResult ParamOp::verify() {
  RankedTensorType type = getTensorType();
  // C1: the name is non-empty. (C2, unique names, is the symbol table's check.)
  if (getSymName().empty())
    return emitOpError("parameter names must be non-empty");
  // C1: names are UTF-8, as safetensors headers and index.json must be.
  if (!llvm::json::isUTF8(getSymName()))
    return emitOpError("parameter name is not valid UTF-8");
  // C1: a safetensors header keeps this key for its metadata.
  if (getSymName() == "__metadata__")
    return emitOpError("a parameter cannot be named __metadata__, the key safetensors keeps for "
                       "its metadata: rename it");

  // C3: exactly one source of the value.
  int sources = !getBody().empty() + (bool)getTiedTo() + (bool)getKernel();
  if (sources != 1)
    return emitOpError("needs exactly one of a body, 'tied_to' or 'kernel', but has ") << sources;

  // C4: a body is one block without arguments, yielding the parameter's type.
  if (!getBody().empty()) {
    if (!getBody().hasOneBlock() || getBody().front().getNumArguments() != 0)
      return emitOpError("body must be one block without arguments");
    // back(), not getTerminator(): this runs before the block's terminator is verified.
    Block &block = getBody().front();
    auto yield = block.empty() ? YieldOp() : dyn_cast<YieldOp>(block.back());
    if (!yield)
      return emitOpError("body must end with 'init.yield'");
    if (yield.getValue().getType() != type)
      return emitOpError("body yields ")
             << yield.getValue().getType() << " but the parameter is " << type;
  }

  // C5: one logical axis name per dim.
  if (auto axes = getAxes()) {
    if ((int64_t)axes->size() != type.getRank())
      return emitOpError("has ") << axes->size() << " axis names for a tensor of rank "
                                 << type.getRank();
  }

  // C8: only buffers can be non-persistent.
  if (getNonpersistent() && !getBuffer())
    return emitOpError("'nonpersistent' applies to buffers only; add 'buffer'");

  // C12: element indices and byte sizes are signed 64-bit everywhere downstream.
  uint64_t bytes = (type.getElementTypeBitWidth() + 7) / 8;
  for (int64_t dim : type.getShape())
    if (__builtin_mul_overflow(bytes, (uint64_t)dim, &bytes) || bytes > (uint64_t)INT64_MAX)
      return emitOpError("type ") << type << " has more bytes than fit in a signed 64-bit "
                                  << "integer; check the shape";
  return success();
}

LogicalResult ParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  RankedTensorType type = getTensorType();
  // C6: the sharding names an existing mesh, splits existing dims over existing axes, each mesh
  // axis at most once, and is not partial.
  // (Tested through the raw attribute: MeshShardingAttr's operator== dereferences its operands.)
  if (Attribute raw = (*this)->getAttr(getShardingAttrName())) {
    auto sharding = cast<mesh::MeshShardingAttr>(raw);
    auto mesh = symbolTable.lookupNearestSymbolFrom<mesh::MeshOp>(*this, sharding.getMesh());
    if (!mesh)
      return emitOpError("sharding refers to an unknown mesh '@")
             << sharding.getMesh().getValue() << "'";
    // `[[]]` is how a replicated scalar is written: `[]` does not parse in LLVM 19.
    auto split = sharding.getSplitAxes();
    bool replicatedScalar = type.getRank() == 0 && split.size() == 1 && split[0].empty();
    if ((int64_t)split.size() > type.getRank() && !replicatedScalar)
      return emitOpError("sharding splits ")
             << sharding.getSplitAxes().size() << " dims of a tensor of rank " << type.getRank();
    if (!sharding.getPartialAxes().empty())
      return emitOpError("parameters cannot be partial (sharding has partial axes)");
    llvm::SmallDenseSet<int64_t> used;
    for (auto dimAxes : sharding.getSplitAxes()) {
      for (int16_t axis : dimAxes.asArrayRef()) {
        if (axis < 0 || axis >= mesh.getRank())
          return emitOpError("sharding uses mesh axis ")
                 << axis << " but mesh '@" << mesh.getSymName() << "' has " << mesh.getRank()
                 << " axes";
        if (!used.insert(axis).second)
          return emitOpError("sharding uses mesh axis ") << axis << " more than once";
      }
    }
  }
  // C6b: a stage places the parameter on one coordinate of its mesh's stage axis, which
  // does not also split it; a scalar is held by every rank.
  if (auto stage = getStageAttr()) {
    auto sharding = getMeshSharding();
    auto mesh = sharding ? symbolTable.lookupNearestSymbolFrom<mesh::MeshOp>(*this,
                                                                            sharding.getMesh())
                         : mesh::MeshOp();
    auto axisName =
        mesh ? mesh->getAttrOfType<StringAttr>(InitDialect::kStageAxisAttr) : StringAttr();
    if (!axisName)
      return emitOpError("has a stage but no sharding over a mesh with '")
             << InitDialect::kStageAxisAttr << "'";
    auto names = getMeshAxisNames(mesh);
    int64_t axis = llvm::find(names, axisName.getValue().str()) - names.begin();
    if (axis >= (int64_t)names.size())
      return emitOpError("stage axis '") << axisName.getValue() << "' is not a mesh axis";
    if (stage.getInt() < 0 || stage.getInt() >= mesh.getShape()[axis])
      return emitOpError("is on stage ") << stage.getInt() << " but mesh axis '"
                                          << axisName.getValue() << "' has "
                                          << mesh.getShape()[axis] << " stages";
    for (auto dimAxes : sharding.getSplitAxes())
      if (llvm::is_contained(dimAxes.asArrayRef(), (int16_t)axis))
        return emitOpError("is split over its stage axis '") << axisName.getValue() << "'";
    if (type.getRank() == 0)
      return emitOpError("is a scalar on a stage: scalars are held by every rank");
    if (getTiedTo())
      return emitOpError("is tied, and so on the stage of the parameter it is tied to");
  }
  // C7: a tied parameter refers to a parameter with a value of the same type.
  if (auto tied = getTiedToAttr()) {
    auto target = symbolTable.lookupNearestSymbolFrom<ParamOp>(*this, tied);
    if (!target)
      return emitOpError("is tied to '@") << tied.getValue() << "', which is not a parameter";
    if (target == *this)
      return emitOpError("is tied to itself; tie it to the parameter whose value it shares, or "
                         "give it a body");
    if (target.getTiedTo())
      return emitOpError("is tied to '@")
             << tied.getValue() << "', which is itself tied; tie to '@"
             << target.getTiedToAttr().getValue() << "' instead";
    if (target.getType() != getType())
      return emitOpError("is tied to '@") << tied.getValue() << "' of type " << target.getType()
                                          << " but has type " << getType();
    // The tensor is stored once, under the target's name, with the target's sharding.
    if (getShardingAttr())
      return emitOpError("is tied to '@")
             << tied.getValue() << "' and so has its sharding: remove this one's, or set it on '@"
             << tied.getValue() << "'";
    if (!getNonpersistent() && target.getNonpersistent())
      return emitOpError("is saved but tied to '@")
             << tied.getValue()
             << "', a non-persistent buffer the checkpoint does not store, so it would be stored "
                "nowhere: make '@"
             << tied.getValue() << "' persistent, or tie it the other way";
  }
  // C9: a kernel names a kernel: a func.func marked `initc.kernel` with the kernel signature
  // (ir-spec/lowering.md), as init-partition creates them.
  if (auto kernel = getKernelAttr()) {
    Operation *symbol = symbolTable.lookupNearestSymbolFrom(*this, kernel);
    if (!symbol)
      return emitOpError("names an unknown kernel '@") << kernel.getValue() << "'";
    auto type = symbol->getAttrOfType<TypeAttr>("function_type");
    auto signature = type ? dyn_cast<FunctionType>(type.getValue()) : FunctionType();
    auto isPointer = [](Type t) { return t.getDialect().getNamespace() == "llvm"; };
    bool isKernel = symbol->getName().getStringRef() == "func.func" &&
                    symbol->hasAttr("initc.kernel") && signature &&
                    symbol->getNumRegions() == 1 && !symbol->getRegion(0).empty() &&
                    signature.getNumInputs() == 7 && signature.getNumResults() == 0;
    for (unsigned i = 0; isKernel && i < 7; ++i)
      isKernel = (i == 4 || i == 5) ? signature.getInput(i).isInteger(64)
                                    : isPointer(signature.getInput(i));
    if (!isKernel)
      return emitOpError("names '@")
             << kernel.getValue()
             << "', which is not a kernel: a func.func defined with the 'initc.kernel' attribute "
                "and the signature (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, "
                "!llvm.ptr) -> () (ir-spec/lowering.md)";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// YieldOp
//===----------------------------------------------------------------------===//

LogicalResult YieldOp::verify() {
  // C1: inside init.elementwise, the yielded scalar is the result's element type.
  if (auto elementwise = dyn_cast<ElementwiseOp>((*this)->getParentOp())) {
    Type element = elementwise.getType().getElementType();
    if (getValue().getType() != element)
      return emitOpError("yields ") << getValue().getType() << " but the element type is "
                                    << element;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Random sources
//===----------------------------------------------------------------------===//

static LogicalResult verifyStream(Operation *op, int64_t stream) {
  if (stream < 0)
    return op->emitOpError("stream must be non-negative, but is ") << stream;
  return success();
}

LogicalResult UniformOp::verify() {
  double low = getLow().convertToDouble(), high = getHigh().convertToDouble();
  // C1: finite bounds, and a finite width, in f32, where samples are made. C2: low < high in
  // the compute type. C3: the stream is non-negative.
  if (!isFiniteValue(inF32(low)) || !isFiniteValue(inF32(high)) ||
      !isFiniteValue(inF32(high - low)))
    return emitOpError("bounds and their difference must be finite in f32, where samples are "
                       "made (also for f64 tensors), but they are ")
           << low << " and " << high;
  if (!(inComputeType(low, getResult()) < inComputeType(high, getResult())))
    return emitOpError("low (") << shortestText(low) << ") must be less than high ("
                                << shortestText(high)
                                << ") in the compute type (f32, or f64 for f64 tensors)";
  return verifyStream(*this, getStream());
}

LogicalResult NormalOp::verify() {
  double mean = getMean().convertToDouble(), std = getStd().convertToDouble();
  // C1: finite mean and std in f32, where samples are made. C2: std > 0 in the compute type.
  // C3: the stream is non-negative.
  if (!isFiniteValue(inF32(mean)) || !isFiniteValue(inF32(std)))
    return emitOpError("mean and std must be finite in f32, where samples are made (also "
                       "for f64 tensors), but they are ")
           << mean << " and " << std;
  if (!(inComputeType(std, getResult()) > 0))
    return emitOpError("std must be positive in the compute type (f32, or f64 for f64 "
                       "tensors), but is ")
           << std;
  return verifyStream(*this, getStream());
}

LogicalResult TruncNormalOp::verify() {
  double mean = getMean().convertToDouble(), std = getStd().convertToDouble();
  double a = getA().convertToDouble(), b = getB().convertToDouble();
  // C1: finite mean, std and bounds in f32, where samples are made. C2: std > 0 in the
  // compute type. C3: a < b. C4: the stream is non-negative.
  auto finite = [&](double v) { return isFiniteValue(inF32(v)); };
  if (!finite(mean) || !finite(std) || !finite(a) || !finite(b))
    return emitOpError("mean, std and bounds must be finite in f32, where samples are made "
                       "(also for f64 tensors)");
  if (!(inComputeType(std, getResult()) > 0))
    return emitOpError("std must be positive in the compute type (f32, or f64 for f64 "
                       "tensors), but is ")
           << std;
  if (!(a < b))
    return emitOpError("truncation bound a (") << a << ") must be less than b (" << b << ")";
  return verifyStream(*this, getStream());
}

double VarianceScalingOp::getFan() {
  double fanIn = 0, fanOut = 0;
  (void)computeFans(getType().getShape(), fanIn, fanOut);
  if (getMode() == FanMode::fan_in)
    return fanIn;
  if (getMode() == FanMode::fan_out)
    return fanOut;
  return (fanIn + fanOut) / 2;
}

LogicalResult VarianceScalingOp::verify() {
  double scale = getScale().convertToDouble();
  // C1: scale finite in f32, where the samples are made, and > 0 in the compute type.
  if (!isFiniteValue(inF32(scale)) || !(inComputeType(scale, getResult()) > 0))
    return emitOpError("scale must be finite in f32, where samples are made (also for f64 "
                       "tensors), and positive in the compute type, but is ")
           << scale;
  // C2: the fan is defined for the global shape (rank >= 2). C3: it is non-zero.
  // C4: the stream is non-negative.
  double fanIn, fanOut;
  if (failed(computeFans(getType().getShape(), fanIn, fanOut)))
    return emitOpError("fan in and fan out are undefined for a tensor of rank ")
           << getType().getRank() << "; give explicit bounds with init.uniform or init.normal";
  if (getFan() <= 0)
    return emitOpError("fan is zero for shape with a zero dim");
  return verifyStream(*this, getStream());
}

LogicalResult OrthogonalOp::verify() {
  // C1: rank >= 2. C2: finite gain. C3: the stream is non-negative.
  if (getType().getRank() < 2)
    return emitOpError("needs a tensor of rank 2 or more, but the rank is ")
           << getType().getRank();
  if (!isFiniteValue(inComputeType(getGain().convertToDouble(), getResult())))
    return emitOpError("gain must be finite in the compute type (f32, or f64 for f64 tensors)");
  return verifyStream(*this, getStream());
}

//===----------------------------------------------------------------------===//
// Fills and index-based values
//===----------------------------------------------------------------------===//

LogicalResult FillOp::verify() {
  double value = getValue().convertToDouble();
  Type element = getType().getElementType();
  // C1: i1 fills are 0 or 1. C2: i64 fills are whole numbers that fit in an i64.
  if (element.isInteger(1) && value != 0 && value != 1)
    return emitOpError("a mask fill must be 0 or 1, but is ") << value;
  if (element.isInteger(64) && value != std::trunc(value))
    return emitOpError("an integer fill must be a whole number, but is ") << value;
  // Converting an out-of-range double to int64_t is undefined; -2^63 itself is representable.
  if (element.isInteger(64) && !(value >= -0x1p63 && value < 0x1p63))
    return emitOpError("an integer fill must fit in 64 bits, but is ") << value;
  return success();
}

static LogicalResult verifyDim(Operation *op, RankedTensorType type, int64_t dim) {
  if (dim < 0 || dim >= type.getRank())
    return op->emitOpError("dim ") << dim << " is out of range for a tensor of rank "
                                   << type.getRank();
  return success();
}

LogicalResult IotaOp::verify() {
  // C1: dim in range. C2: i1 results are not allowed.
  if (getType().getElementType().isInteger(1))
    return emitOpError("cannot produce a mask; use init.index_mask or init.tril");
  return verifyDim(*this, getType(), getDim());
}

LogicalResult LinspaceOp::verify() {
  // C1: dim in range. C2: not f64. C3: start and end finite in the element type.
  if (failed(verifyDim(*this, getType(), getDim())))
    return failure();
  Type element = getType().getElementType();
  if (element.isF64())
    return emitOpError("cannot produce f64: its fused multiply-add has no exact f64 form in "
                       "the kernels; compute it in f32 and cast, or load the values");
  const llvm::fltSemantics &semantics = cast<FloatType>(element).getFloatSemantics();
  for (auto [what, attr] : {std::pair{"start", getStartAttr()}, std::pair{"end", getEndAttr()}}) {
    // Rounded through f32, as the kernels and PyTorch round it.
    llvm::APFloat v((float)attr.getValueAsDouble());
    bool lost = false;
    v.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &lost);
    if (!v.isFinite())
      return emitOpError() << what << " (" << attr.getValueAsDouble() << ") is not finite in "
                           << element;
  }
  return success();
}

LogicalResult EyeOp::verify() {
  // C1: a matrix.
  if (getType().getRank() != 2)
    return emitOpError("needs a tensor of rank 2, but the rank is ") << getType().getRank();
  return success();
}

template <typename Op>
static LogicalResult verifyTriangle(Op op) {
  // C1: rank >= 2 (the last two dims form the matrix).
  if (op.getType().getRank() < 2)
    return op.emitOpError("needs a tensor of rank 2 or more, but the rank is ")
           << op.getType().getRank();
  return success();
}
LogicalResult TrilOp::verify() { return verifyTriangle(*this); }
LogicalResult TriuOp::verify() { return verifyTriangle(*this); }

LogicalResult IndexMaskOp::verify() {
  // C1: dim in range. C2: index in [0, size of dim).
  if (failed(verifyDim(*this, getType(), getDim())))
    return failure();
  int64_t size = getType().getDimSize(getDim());
  if (getIndex() < 0 || getIndex() >= size)
    return emitOpError("index ") << getIndex() << " is out of range for dim " << getDim()
                                 << " of size " << size;
  return success();
}

LogicalResult RopeInvFreqOp::verify() {
  // C1: theta > 0. C2: head_dim even and positive. C3: shape [head_dim / 2].
  if (!(getTheta().convertToDouble() > 0) || !isFiniteValue(getTheta().convertToDouble()))
    return emitOpError("theta must be positive and finite");
  if (getHeadDim() <= 0 || getHeadDim() % 2 != 0)
    return emitOpError("head_dim must be positive and even, but is ") << getHeadDim();
  if (getType().getRank() != 1 || getType().getDimSize(0) != getHeadDim() / 2)
    return emitOpError("result must be a 1-d tensor of head_dim / 2 = ")
           << getHeadDim() / 2 << " elements";
  return success();
}

LogicalResult LoadOp::verify() {
  // C1: a file and a tensor name.
  if (getFile().empty() || getTensor().empty())
    return emitOpError("needs a file and a tensor name");
  // C2: a path ends at its first NUL for the system: another file would be read than the one
  // named.
  if (getFile().contains('\0'))
    return emitOpError("file name contains a NUL character");
  // C3: program.json is JSON, which holds UTF-8 only: any other file name would reach the
  // runtime as another one. Tensor names are safetensors header keys, UTF-8 too.
  if (!llvm::json::isUTF8(getFile()))
    return emitOpError("file name is not valid UTF-8: rename the file");
  if (!llvm::json::isUTF8(getTensor()))
    return emitOpError("tensor name is not valid UTF-8");
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise math
//===----------------------------------------------------------------------===//

LogicalResult ClampOp::verify() {
  // C1: min <= max.
  if (!(getMin().convertToDouble() <= getMax().convertToDouble()))
    return emitOpError("min (") << getMin().convertToDouble() << ") must not exceed max ("
                                << getMax().convertToDouble() << ")";
  return success();
}

LogicalResult SelectOp::verify() {
  // C1: the mask has the shape of the values.
  if (getCondition().getType().getShape() != getType().getShape())
    return emitOpError("mask shape must equal the value shape");
  return success();
}

LogicalResult CastOp::verify() {
  // C1: same shape.
  if (getOperand().getType().getShape() != getType().getShape())
    return emitOpError("cannot change the shape, only the element type");
  return success();
}

LogicalResult ElementwiseLikeOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  // C1: `like` is a parameter whose body yields an init.elementwise (one step: not another
  // init.elementwise_like), of this op's type and with as many args.
  auto target = symbolTable.lookupNearestSymbolFrom<ParamOp>(*this, getLikeAttr());
  if (!target)
    return emitOpError("'like' names '@") << getLike() << "', which is not a parameter";
  if (target->isAncestor(*this))
    return emitOpError("'like' names its own parameter '@")
           << getLike() << "': name the parameter whose body holds the init.elementwise";
  if (auto tied = target.getTiedToAttr())
    return emitOpError("'like' names '@")
           << getLike() << "', which is tied to '@" << tied.getValue()
           << "' and has no body: name the parameter that holds the init.elementwise";
  Value yielded = target.getYieldedValue();
  if (auto chained = yielded ? yielded.getDefiningOp<ElementwiseLikeOp>() : ElementwiseLikeOp())
    return emitOpError("'like' names '@")
           << getLike() << "', which is itself an 'init.elementwise_like' of '@"
           << chained.getLike() << "': name '@" << chained.getLike()
           << "' (chains are not allowed)";
  auto source = yielded ? yielded.getDefiningOp<ElementwiseOp>() : ElementwiseOp();
  if (!source)
    return emitOpError("'like' names '@")
           << getLike() << "', whose body does not yield an 'init.elementwise'";
  // C2: the same type, and one value per trailing argument of the region.
  if (source.getType() != getType())
    return emitOpError("has type ")
           << getType() << " but '@" << getLike() << "' computes " << source.getType();
  size_t expected = source.getArgs() ? source.getArgs()->size() : 0;
  size_t given = getArgs() ? getArgs()->size() : 0;
  if (given != expected)
    return emitOpError("has ") << given << " args but the region of '@" << getLike() << "' takes "
                               << expected;
  return success();
}

LogicalResult ElementwiseOp::verify() {
  // C1: the region takes the linear index, one index per dim and one value per `args`
  // entry, all i64. C2: it ends with init.yield (whose own C1 checks the element type: C3).
  Block &block = getBody().front();
  int64_t numArgs = getArgs() ? (int64_t)getArgs()->size() : 0;
  int64_t expected = getType().getRank() + 1 + numArgs;
  if ((int64_t)block.getNumArguments() != expected ||
      llvm::any_of(block.getArgumentTypes(), [](Type t) { return !t.isInteger(64); }))
    return emitOpError("region must take ")
           << expected << " i64 arguments (linear index, then one index per dim)"
           << (numArgs ? ", then one per 'args' entry" : "");
  // back(), not getTerminator(): this runs before the block's terminator is verified.
  if (block.empty() || !isa<YieldOp>(block.back()))
    return emitOpError("region must end with 'init.yield'");
  // C4: scalar arith, math and vector ops only. Memory would give an element a value that is
  // no function of its index (an uninitialized alloc), and calls or loops have no kernel form.
  for (Operation &op : block) {
    if (isa<YieldOp>(op))
      continue;
    Dialect *dialect = op.getDialect();
    llvm::StringRef ns = dialect ? dialect->getNamespace() : "";
    if ((ns != "arith" && ns != "math" && ns != "vector") || op.getNumRegions() != 0 ||
        llvm::any_of(op.getResultTypes(), llvm::IsaPred<MemRefType, TensorType>))
      return op.emitOpError("is not allowed in an 'init.elementwise' region: an element is "
                            "computed by scalar arith, math and vector ops only");
  }
  return success();
}
