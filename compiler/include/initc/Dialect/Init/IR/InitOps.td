//===- InitOps.td - operations of the init dialect ---------*- tablegen -*-===//
//
// Each op's description links its section of ir-spec/dialect.md; constraints are numbered there
// (C1, C2, ...) and the verifiers cite the same labels.
//
//===----------------------------------------------------------------------===//

#ifndef INITC_DIALECT_INIT_IR_INITOPS_TD
#define INITC_DIALECT_INIT_IR_INITOPS_TD

include "initc/Dialect/Init/IR/InitDialect.td"
include "mlir/Dialect/Mesh/IR/MeshBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "initc/Dialect/Init/IR/InitEnums.td"

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Init_FloatElement : AnyTypeOf<[F16, BF16, F32, F64]>;
def Init_FloatTensor : StaticShapeTensorOf<[F16, BF16, F32, F64]>;
def Init_MaskTensor : StaticShapeTensorOf<[I1]>;
def Init_ValueTensor : StaticShapeTensorOf<[F16, BF16, F32, F64, I1, I64]>;

// A #mesh.shard attribute, stored as a plain Attribute: LLVM 19's MeshShardingAttr::operator==
// dereferences null attributes, which the generated accessors of an optional typed attribute do.
def Init_ShardingAttr : Attr<CPred<"::llvm::isa<::mlir::mesh::MeshShardingAttr>($_self)">,
                             "#mesh.shard sharding"> {
  let storageType = "::mlir::Attribute";
  let returnType = "::mlir::Attribute";
  let convertFromStorage = "$_self";
}

//===----------------------------------------------------------------------===//
// Module-level ops
//===----------------------------------------------------------------------===//

def Init_SeedOp : Init_Op<"seed", [HasParent<"::mlir::ModuleOp">]> {
  let summary = "the seed of every random value in the module";
  let description = [{
    The 64-bit seed from which every parameter's Philox key is derived (with the parameter's
    name and the op's stream). A module that initializes anything holds exactly one.
    See [ir-spec: init.seed](../dialect.md#initseed).

    ```mlir
    init.seed 1234
    ```
  }];
  let arguments = (ins UI64Attr:$value);
  let assemblyFormat = "$value attr-dict";
  let hasVerifier = 1;
}

def Init_ParamOp : Init_Op<"param", [
    Symbol, IsolatedFromAbove, HasParent<"::mlir::ModuleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a named parameter or buffer of the model and its initialization";
  let description = [{
    Declares one tensor of the model's state dict under its full name, with its global type
    (shape and dtype), a logical axis name per dim, and an optional sharding over a mesh. Its
    value is either computed by its body, which yields the *global* tensor (passes partition it
    per rank), or shared with another parameter (`tied_to`), or, after `init-partition`,
    computed by the native kernel named by `kernel`.
    See [ir-spec: init.param](../dialect.md#initparam).

    ```mlir
    mesh.mesh @mesh(shape = 2x2) {init.axis_names = ["dp", "tp"]}
    init.param @"model.embed_tokens.weight" : tensor<32000x4096xbf16>
        axes ["vocab", "embed"] sharding #mesh.shard<@mesh, [[1], [0]]> {
      %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<32000x4096xbf16>
      init.yield %0 : tensor<32000x4096xbf16>
    }
    init.param @"lm_head.weight" : tensor<32000x4096xbf16> tied_to @"model.embed_tokens.weight"
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    TypeAttrOf<Init_ValueTensor>:$type,
    OptionalAttr<StrArrayAttr>:$axes,
    OptionalAttr<Init_ShardingAttr>:$sharding,
    OptionalAttr<FlatSymbolRefAttr>:$tied_to,
    OptionalAttr<FlatSymbolRefAttr>:$kernel,
    UnitAttr:$buffer,
    UnitAttr:$nonpersistent,
    // Per-parameter values the kernel reads at run time (its Philox keys), so that parameters
    // with the same recipe share one kernel. Set by init-partition.
    OptionalAttr<DenseI64ArrayAttr>:$kernel_args,
    // The pipeline stage that holds the parameter: its coordinate on the mesh's stage axis
    // (`init.stage_axis` on the mesh); ranks of other stages hold none of it.
    OptionalAttr<I64Attr>:$stage
  );
  let regions = (region AnyRegion:$body);
  let builders = [
    // Without kernel arguments (init-partition sets them).
    OpBuilder<(ins "::llvm::StringRef":$sym_name, "::mlir::RankedTensorType":$type,
                   "::mlir::ArrayAttr":$axes, "::mlir::Attribute":$sharding,
                   "::mlir::FlatSymbolRefAttr":$tied_to, "::mlir::FlatSymbolRefAttr":$kernel,
                   CArg<"bool", "false">:$buffer, CArg<"bool", "false">:$nonpersistent), [{
      build($_builder, $_state, sym_name, type, axes, sharding, tied_to, kernel, buffer,
            nonpersistent, ::mlir::DenseI64ArrayAttr(), ::mlir::IntegerAttr());
    }]>
  ];
  let assemblyFormat = [{
    $sym_name `:` $type (`axes` $axes^)? (`sharding` $sharding^)? (`stage` $stage^)?
    (`tied_to` $tied_to^)?
    (`kernel` $kernel^)? (`buffer` $buffer^)?
    (`nonpersistent` $nonpersistent^)?
    attr-dict-with-keyword ($body^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
    /// The sharding, or null when the parameter is replicated.
    ::mlir::mesh::MeshShardingAttr getMeshSharding() {
      ::mlir::Attribute attr = getShardingAttr();
      return attr ? ::llvm::cast<::mlir::mesh::MeshShardingAttr>(attr)
                  : ::mlir::mesh::MeshShardingAttr();
    }
    /// The value the body yields, or null for a tied or lowered parameter.
    ::mlir::Value getYieldedValue();
  }];
}

def Init_YieldOp : Init_Op<"yield", [Pure, Terminator,
    ParentOneOf<["ParamOp", "ElementwiseOp"]>]> {
  let summary = "the value of a parameter, or of one element of an elementwise region";
  let description = [{
    Terminates an `init.param` body with the parameter's global tensor, or an
    `init.elementwise` region with one element.
    See [ir-spec: init.yield](../dialect.md#inityield).
  }];
  let arguments = (ins AnyType:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Random sources
//===----------------------------------------------------------------------===//

class Init_RandomOp<string mnemonic, list<Trait> traits = []>
    : Init_Op<mnemonic, !listconcat([Pure], traits)> {
  let results = (outs Init_FloatTensor:$result);
  let hasVerifier = 1;
}

def Init_UniformOp : Init_RandomOp<"uniform"> {
  let summary = "uniform random values in [low, high], high reached only by rounding";
  let description = [{
    Each element is `lowf + widthf * U` (`lowf = (float)low`, `widthf = (float)(high - low)`),
    U in (0, 1) drawn from the element's Philox word by the RNG contract: values lie in
    `[lowf, lowf + widthf]`, whose upper end rounding can reach. See
    [ir-spec: init.uniform](../dialect.md#inituniform).

    ```mlir
    %w = init.uniform -0.125, 0.125 stream 0 : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins F64Attr:$low, F64Attr:$high, I64Attr:$stream);
  let assemblyFormat = "$low `,` $high `stream` $stream attr-dict `:` type($result)";
}

def Init_NormalOp : Init_RandomOp<"normal"> {
  let summary = "normal random values N(mean, std^2)";
  let description = [{
    Box-Muller normals from the element's Philox words, by the RNG contract.
    See [ir-spec: init.normal](../dialect.md#initnormal).

    ```mlir
    %w = init.normal mean 0.0 std 0.02 stream 0 : tensor<64x64xbf16>
    ```
  }];
  let arguments = (ins F64Attr:$mean, F64Attr:$std, I64Attr:$stream);
  let assemblyFormat = "`mean` $mean `std` $std `stream` $stream attr-dict `:` type($result)";
}

def Init_TruncNormalOp : Init_RandomOp<"trunc_normal"> {
  let summary = "normal values truncated to [a, b], by inverse CDF";
  let description = [{
    As `torch.nn.init.trunc_normal_`: a uniform value mapped through the inverse normal CDF
    onto [a, b] (absolute bounds), never by rejection, so every element is computed alone.
    See [ir-spec: init.trunc_normal](../dialect.md#inittrunc_normal).

    ```mlir
    %w = init.trunc_normal mean 0.0 std 0.02 bounds [-0.04, 0.04] stream 0 : tensor<64xf32>
    ```
  }];
  let arguments = (ins F64Attr:$mean, F64Attr:$std, F64Attr:$a, F64Attr:$b, I64Attr:$stream);
  let assemblyFormat = [{
    `mean` $mean `std` $std `bounds` `[` $a `,` $b `]` `stream` $stream attr-dict `:` type($result)
  }];
}

def Init_VarianceScalingOp : Init_RandomOp<"variance_scaling"> {
  let summary = "uniform or normal values with variance scale / fan, fan from the global shape";
  let description = [{
    The family behind xavier, kaiming, lecun and the PyTorch Linear/Conv defaults: variance
    `scale / fan`, where fan is fan_in, fan_out or their mean, computed from the op's (global)
    result shape exactly as `torch.nn.init._calculate_fan_in_and_fan_out` does. `uniform` draws
    from U(-sqrt(3 var), sqrt(3 var)); `normal` from N(0, var). Canonicalization rewrites it to
    `init.uniform` / `init.normal` with the same stream, which gives the same bits.
    See [ir-spec: init.variance_scaling](../dialect.md#initvariance_scaling).

    ```mlir
    // nn.Linear(4096, 1024).weight: kaiming_uniform_(a=sqrt(5)) = U(+-1/sqrt(fan_in))
    %w = init.variance_scaling scale 0.333333 fan_in uniform stream 0 : tensor<1024x4096xf32>
    ```
  }];
  let arguments = (ins F64Attr:$scale, Init_FanMode:$mode, Init_Distribution:$distribution,
                       I64Attr:$stream);
  let assemblyFormat = [{
    `scale` $scale $mode $distribution `stream` $stream attr-dict `:` type($result)
  }];
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    /// The fan the mode selects, from the global result shape.
    double getFan();
  }];
}

def Init_OrthogonalOp : Init_RandomOp<"orthogonal"> {
  let summary = "a (semi-)orthogonal matrix times gain, by QR of a normal matrix";
  let description = [{
    As `torch.nn.init.orthogonal_`: the tensor viewed as rows = dim 0, cols = the rest; a
    normal matrix of that shape (drawn by the RNG contract at global indices) is factored by
    Householder QR and `q * sign(diag(r))` is taken. Not elementwise: the declared partition
    strategy says how ranks obtain it. `redundant`: every rank that holds part of it computes
    the whole matrix and keeps its slice (memory: the full matrix, reported by `initc inspect`).
    See [ir-spec: init.orthogonal](../dialect.md#initorthogonal).

    ```mlir
    %q = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<64x128xf32>
    ```
  }];
  let arguments = (ins F64Attr:$gain, I64Attr:$stream, Init_PartitionStrategy:$strategy);
  let assemblyFormat = [{
    `gain` $gain `stream` $stream `strategy` $strategy attr-dict `:` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Fills and index-based values
//===----------------------------------------------------------------------===//

def Init_FillOp : Init_Op<"fill", [Pure]> {
  let summary = "every element equal to one value (zeros, ones, a constant, a scalar operand)";
  let description = [{
    The value is rounded to the element type. This is also how a scalar operand of the
    elementwise ops is written. See [ir-spec: init.fill](../dialect.md#initfill).

    ```mlir
    %ones = init.fill 1.0 : tensor<4096xf32>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs Init_ValueTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Init_IotaOp : Init_Op<"iota", [Pure]> {
  let summary = "start + step * (index along one dim), like torch.arange";
  let description = [{
    See [ir-spec: init.iota](../dialect.md#initiota).

    ```mlir
    %pos = init.iota dim 1 start 0.0 step 1.0 : tensor<1x2048xi64>
    ```
  }];
  let arguments = (ins I64Attr:$dim, F64Attr:$start, F64Attr:$step);
  let results = (outs Init_ValueTensor:$result);
  let assemblyFormat = "`dim` $dim `start` $start `step` $step attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Init_LinspaceOp : Init_Op<"linspace", [Pure]> {
  let summary = "evenly spaced values from start to end along one dim, as torch.linspace";
  let description = [{
    The size of `dim` is the number of values. The first half counts up from `start`, the
    second half down from `end`, with the roundings of PyTorch's CPU kernel (a fused
    multiply-add in f32). See [ir-spec: init.linspace](../dialect.md#initlinspace).

    ```mlir
    %rates = init.linspace dim 0 start 0.0 end 0.1 : tensor<12xf32>
    ```
  }];
  let arguments = (ins I64Attr:$dim, F64Attr:$start, F64Attr:$end);
  let results = (outs Init_FloatTensor:$result);
  let assemblyFormat = "`dim` $dim `start` $start `end` $end attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Init_EyeOp : Init_Op<"eye", [Pure]> {
  let summary = "the identity matrix, like torch.nn.init.eye_";
  let description = [{
    One where row == column, zero elsewhere; the matrix may be rectangular.
    See [ir-spec: init.eye](../dialect.md#initeye).

    ```mlir
    %i = init.eye : tensor<16x32xf32>
    ```
  }];
  let results = (outs Init_ValueTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

class Init_TriangleOp<string mnemonic, string which> : Init_Op<mnemonic, [Pure]> {
  let summary = "ones on and " # which # " the k-th diagonal of the last two dims, like torch."
                # mnemonic;
  let description = [{
    Element (..., i, j) is one when j - i is on the kept side of `diagonal`, zero elsewhere;
    the mask the attention layers of GPT-2 register as a buffer.
    See [ir-spec: init.tril / init.triu](../dialect.md#inittril-inittriu).

    ```mlir
    %m = init.}] # mnemonic # [{ diagonal 0 : tensor<1x1x1024x1024xi1>
    ```
  }];
  let arguments = (ins I64Attr:$diagonal);
  let results = (outs Init_ValueTensor:$result);
  let assemblyFormat = "`diagonal` $diagonal attr-dict `:` type($result)";
  let hasVerifier = 1;
}
def Init_TrilOp : Init_TriangleOp<"tril", "below">;
def Init_TriuOp : Init_TriangleOp<"triu", "above">;

def Init_IndexMaskOp : Init_Op<"index_mask", [Pure]> {
  let summary = "true where the index along one dim equals a value (an embedding's padding row)";
  let description = [{
    See [ir-spec: init.index_mask](../dialect.md#initindex_mask).

    ```mlir
    %pad = init.index_mask dim 0 index 0 : tensor<32000x4096xi1>
    ```
  }];
  let arguments = (ins I64Attr:$dim, I64Attr:$index);
  let results = (outs Init_MaskTensor:$result);
  let assemblyFormat = "`dim` $dim `index` $index attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Init_RopeInvFreqOp : Init_Op<"rope_inv_freq", [Pure]> {
  let summary = "the RoPE inverse frequencies 1 / theta^(2i / head_dim)";
  let description = [{
    Element i is `1 / theta^(2i / head_dim)`, computed in double precision and rounded to the
    element type. See [ir-spec: init.rope_inv_freq](../dialect.md#initrope_inv_freq).

    ```mlir
    %f = init.rope_inv_freq theta 10000.0 head_dim 128 : tensor<64xf32>
    ```
  }];
  let arguments = (ins F64Attr:$theta, I64Attr:$head_dim);
  let results = (outs Init_FloatTensor:$result);
  let assemblyFormat = "`theta` $theta `head_dim` $head_dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Init_LoadOp : Init_Op<"load", [Pure]> {
  let summary = "a tensor read from an existing safetensors file, each rank reading its slice";
  let description = [{
    The whole tensor `tensor` of the safetensors file `file`; its dtype and shape must equal
    the result type's. Each rank reads only its slice.
    See [ir-spec: init.load](../dialect.md#initload).

    ```mlir
    %w = init.load "base.safetensors" ["model.norm.weight"] : tensor<4096xbf16>
    ```
  }];
  let arguments = (ins StrAttr:$file, StrAttr:$tensor);
  let results = (outs Init_ValueTensor:$result);
  let assemblyFormat = "$file `[` $tensor `]` attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise math
//===----------------------------------------------------------------------===//

class Init_BinaryOp<string mnemonic, string what> : Init_Op<mnemonic,
    [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise " # what;
  let description = [{
    Computed in f32 for 16-bit floats (then rounded), in the element type otherwise. A scalar
    operand is an `init.fill`. See [ir-spec: elementwise ops](../dialect.md#elementwise-ops).

    ```mlir
    %y = init.}] # mnemonic # [{ %x, %c : tensor<64xf32>
    ```
  }];
  let arguments = (ins Init_FloatTensor:$lhs, Init_FloatTensor:$rhs);
  let results = (outs Init_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}
def Init_AddOp : Init_BinaryOp<"add", "addition">;
def Init_SubOp : Init_BinaryOp<"sub", "subtraction">;
def Init_MulOp : Init_BinaryOp<"mul", "multiplication">;
def Init_DivOp : Init_BinaryOp<"div", "division">;

def Init_PowOp : Init_Op<"pow", [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise power x^y";
  let description = [{
    `pow_f(x, y)` of the RNG contract, computed in f32 (the operands rounded to f32 first for
    f64) with f64 log2 and exp2 inside, then rounded to the element type: `torch.pow` and C's
    `powf` special values, within 0.5 ulp plus 2^-20 of the exact power. A scalar operand is an
    `init.fill`. See [ir-spec: elementwise ops](../dialect.md#elementwise-ops).

    ```mlir
    %f = init.pow %base, %t : tensor<64xf32>
    ```
  }];
  let arguments = (ins Init_FloatTensor:$lhs, Init_FloatTensor:$rhs);
  let results = (outs Init_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
  let hasCanonicalizer = 1;
}

class Init_UnaryOp<string mnemonic, string what> : Init_Op<mnemonic,
    [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise " # what;
  let description = [{
    Computed in f32 for 16-bit floats (then rounded), in the element type otherwise, with the
    polynomials of the RNG contract so every backend gives the same bits.
    See [ir-spec: elementwise ops](../dialect.md#elementwise-ops).

    ```mlir
    %y = init.}] # mnemonic # [{ %x : tensor<64xf32>
    ```
  }];
  let arguments = (ins Init_FloatTensor:$operand);
  let results = (outs Init_FloatTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}
def Init_ErfinvOp : Init_UnaryOp<"erfinv", "inverse error function">;
def Init_ExpOp : Init_UnaryOp<"exp", "exponential">;
def Init_LogOp : Init_UnaryOp<"log", "natural logarithm">;
def Init_Expm1Op : Init_UnaryOp<"expm1", "exp(x) - 1, accurate near 0">;
def Init_Log1pOp : Init_UnaryOp<"log1p", "log(1 + x), accurate near 0">;
def Init_SqrtOp : Init_UnaryOp<"sqrt", "square root (IEEE, correctly rounded)">;
def Init_SignOp : Init_UnaryOp<"sign", "sign: -1, 0 or 1 (NaN stays NaN)">;

def Init_ClampOp : Init_Op<"clamp", [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise clamp to [min, max]";
  let description = [{
    `min(max(x, min), max)`, as `torch.clamp_`.
    See [ir-spec: elementwise ops](../dialect.md#elementwise-ops).

    ```mlir
    %y = init.clamp %x min -2.0 max 2.0 : tensor<64xf32>
    ```
  }];
  let arguments = (ins Init_FloatTensor:$operand, F64Attr:$min, F64Attr:$max);
  let results = (outs Init_FloatTensor:$result);
  let assemblyFormat = "$operand `min` $min `max` $max attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Init_SelectOp : Init_Op<"select", [Pure,
    AllTypesMatch<["true_value", "false_value", "result"]>]> {
  let summary = "elementwise choice by a mask";
  let description = [{
    See [ir-spec: elementwise ops](../dialect.md#elementwise-ops).

    ```mlir
    %y = init.select %pad, %zeros, %w : tensor<32000x4096xi1>, tensor<32000x4096xf32>
    ```
  }];
  let arguments = (ins Init_MaskTensor:$condition, Init_ValueTensor:$true_value,
                       Init_ValueTensor:$false_value);
  let results = (outs Init_ValueTensor:$result);
  let assemblyFormat = [{
    $condition `,` $true_value `,` $false_value attr-dict `:` type($condition) `,` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Init_CastOp : Init_Op<"cast", [Pure]> {
  let summary = "elementwise conversion to another element type, round to nearest even";
  let description = [{
    See [ir-spec: elementwise ops](../dialect.md#elementwise-ops).

    ```mlir
    %y = init.cast %x : tensor<64xf32> to tensor<64xbf16>
    ```
  }];
  let arguments = (ins Init_ValueTensor:$operand);
  let results = (outs Init_ValueTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// The fused form
//===----------------------------------------------------------------------===//

def Init_ElementwiseOp : Init_Op<"elementwise", [Pure, IsolatedFromAbove]> {
  let summary = "a tensor whose every element is computed alone by a scalar region";
  let description = [{
    The output of `init-fuse-elementwise`: the region receives the element's global row-major
    linear index and its global index along each dim (all `i64`), then one `i64` per entry of
    `args` (the parameter's Philox keys: values that differ between parameters with the same
    recipe, passed to the kernel at run time), and yields the element. No intermediate tensor
    exists; `init-partition` turns it into one loop over a rank's slice.
    See [ir-spec: init.elementwise](../dialect.md#initelementwise).

    ```mlir
    %w = init.elementwise {args = array<i64: 1234>} : tensor<4x8xf32> {
    ^bb0(%linear: i64, %i: i64, %j: i64, %key: i64):
      %c = arith.constant 1.0 : f32
      init.yield %c : f32
    }
    ```
  }];
  let arguments = (ins OptionalAttr<DenseI64ArrayAttr>:$args);
  let results = (outs Init_ValueTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  // `args` stays in the attribute dictionary: LLVM 19's bare `[..]` form of a dense i64 array
  // cannot parse values below -2^62, which keys often are.
  let assemblyFormat = "attr-dict `:` type($result) $body";
  let builders = [
    // Without kernel arguments; fuse-elementwise sets `args` once it knows the keys.
    OpBuilder<(ins "::mlir::Type":$type), [{
      build($_builder, $_state, type, ::mlir::DenseI64ArrayAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def Init_ElementwiseLikeOp : Init_Op<"elementwise_like", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a tensor computed by another parameter's elementwise region, with its own args";
  let description = [{
    The tensor that the `init.elementwise` yielded by parameter `like` would be with this op's
    `args` in place of its own: what `init-fuse-elementwise` writes for a parameter whose recipe
    (ops and types; name aside) is that of an earlier one, so that thousands of parameters of one
    recipe, a mixture of experts' expert weights, keep one region. `init-partition` gives it the
    kernel of `like`.
    See [ir-spec: init.elementwise_like](../dialect.md#initelementwise_like).

    ```mlir
    %w = init.elementwise_like @experts.0.w {args = array<i64: 5678>} : tensor<64x16xbf16>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$like, OptionalAttr<DenseI64ArrayAttr>:$args);
  let results = (outs Init_ValueTensor:$result);
  let assemblyFormat = "$like attr-dict `:` type($result)";
}

#endif // INITC_DIALECT_INIT_IR_INITOPS_TD
