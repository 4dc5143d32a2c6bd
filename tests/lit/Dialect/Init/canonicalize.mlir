// RUN: initc-opt %s --canonicalize --split-input-file | FileCheck %s

// Every folder and canonicalization pattern of the init dialect. Each rewrite keeps the bits.

// CHECK-LABEL: init.param @add_negative_zero_folds
// CHECK-NEXT:    %[[X:.+]] = init.normal
// CHECK-NEXT:    init.yield %[[X]]
init.param @add_negative_zero_folds : tensor<4xf32> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  %z = init.fill -0.0 : tensor<4xf32>
  %0 = init.add %x, %z : tensor<4xf32>
  %1 = init.add %z, %0 : tensor<4xf32>
  init.yield %1 : tensor<4xf32>
}

// -----

// x + (+0) is +0 when x is -0: not an identity, so it stays.
// CHECK-LABEL: init.param @add_positive_zero_stays
// CHECK:         %[[X:.+]] = init.normal
// CHECK:         %[[Z:.+]] = init.fill 0.000000e+00
// CHECK:         %[[S:.+]] = init.add %[[X]], %[[Z]]
// CHECK:         init.yield %[[S]]
init.param @add_positive_zero_stays : tensor<4xf32> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  %z = init.fill 0.0 : tensor<4xf32>
  %0 = init.add %x, %z : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: init.param @sub_zero_folds
// CHECK-NEXT:    %[[X:.+]] = init.normal
// CHECK-NEXT:    init.yield %[[X]]
init.param @sub_zero_folds : tensor<4xf32> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  %z = init.fill 0.0 : tensor<4xf32>
  %0 = init.sub %x, %z : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// x - (-0) is x + (+0): not an identity.
// CHECK-LABEL: init.param @sub_negative_zero_stays
// CHECK:         init.sub
init.param @sub_negative_zero_stays : tensor<4xf32> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  %z = init.fill -0.0 : tensor<4xf32>
  %0 = init.sub %x, %z : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: init.param @mul_and_div_by_one_fold
// CHECK-NEXT:    %[[X:.+]] = init.normal
// CHECK-NEXT:    init.yield %[[X]]
init.param @mul_and_div_by_one_fold : tensor<4xbf16> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xbf16>
  %one = init.fill 1.0 : tensor<4xbf16>
  %0 = init.mul %x, %one : tensor<4xbf16>
  %1 = init.mul %one, %0 : tensor<4xbf16>
  %2 = init.div %1, %one : tensor<4xbf16>
  init.yield %2 : tensor<4xbf16>
}

// -----

// 1 / x is not x.
// CHECK-LABEL: init.param @one_over_x_stays
// CHECK:         init.div
init.param @one_over_x_stays : tensor<4xf32> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  %one = init.fill 1.0 : tensor<4xf32>
  %0 = init.div %one, %x : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// Two fills fold to one, evaluated as the kernel would: in f32, then rounded to the type.
// CHECK-LABEL: init.param @fill_arithmetic_f32
// CHECK-NEXT:    %[[F:.+]] = init.fill 1.00390625 : tensor<4xf32>
// CHECK-NEXT:    init.yield %[[F]]
init.param @fill_arithmetic_f32 : tensor<4xf32> {
  %a = init.fill 1.0 : tensor<4xf32>
  %b = init.fill 0.00390625 : tensor<4xf32>
  %0 = init.add %a, %b : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// 1 + 2^-8 is a tie between two bf16 values: nearest even gives 1.
// CHECK-LABEL: init.param @fill_arithmetic_bf16_rounds
// CHECK-NEXT:    %[[F:.+]] = init.fill 1.000000e+00 : tensor<4xbf16>
// CHECK-NEXT:    init.yield %[[F]]
init.param @fill_arithmetic_bf16_rounds : tensor<4xbf16> {
  %a = init.fill 1.0 : tensor<4xbf16>
  %b = init.fill 0.00390625 : tensor<4xbf16>
  %0 = init.add %a, %b : tensor<4xbf16>
  init.yield %0 : tensor<4xbf16>
}

// -----

// CHECK-LABEL: init.param @fill_sub_mul
// CHECK-NEXT:    %[[F:.+]] = init.fill -1.200000e+01 : tensor<4xf64>
// CHECK-NEXT:    init.yield %[[F]]
init.param @fill_sub_mul : tensor<4xf64> {
  %a = init.fill 1.0 : tensor<4xf64>
  %b = init.fill 4.0 : tensor<4xf64>
  %c = init.fill 4.0 : tensor<4xf64>
  %0 = init.sub %a, %b : tensor<4xf64>
  %1 = init.mul %0, %c : tensor<4xf64>
  init.yield %1 : tensor<4xf64>
}

// -----

// 1/3 in f32, not in f64.
// CHECK-LABEL: init.param @fill_div_in_f32
// CHECK-NEXT:    %[[F:.+]] = init.fill 0.3333333432674408 : tensor<4xf32>
// CHECK-NEXT:    init.yield %[[F]]
init.param @fill_div_in_f32 : tensor<4xf32> {
  %a = init.fill 1.0 : tensor<4xf32>
  %b = init.fill 3.0 : tensor<4xf32>
  %0 = init.div %a, %b : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: init.param @clamp_of_fill
// CHECK-NEXT:    %[[F:.+]] = init.fill 2.000000e+00 : tensor<4xf32>
// CHECK-NEXT:    init.yield %[[F]]
init.param @clamp_of_fill : tensor<4xf32> {
  %a = init.fill 5.0 : tensor<4xf32>
  %0 = init.clamp %a min -2.0 max 2.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// A NaN fill stays NaN through clamp; the fold leaves it to the kernel.
// CHECK-LABEL: init.param @clamp_of_nan_fill_stays
// CHECK:         init.clamp
init.param @clamp_of_nan_fill_stays : tensor<4xf32> {
  %a = init.fill 0x7FF8000000000000 : tensor<4xf32>
  %0 = init.clamp %a min -2.0 max 2.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: init.param @clamp_of_random_stays
// CHECK:         init.clamp
init.param @clamp_of_random_stays : tensor<4xf32> {
  %x = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  %0 = init.clamp %x min -2.0 max 2.0 : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: init.param @select_true_mask
// CHECK-NEXT:    %[[Z:.+]] = init.fill 0.000000e+00
// CHECK-NEXT:    init.yield %[[Z]]
init.param @select_true_mask : tensor<4x8xf32> {
  %m = init.fill 1.0 : tensor<4x8xi1>
  %z = init.fill 0.0 : tensor<4x8xf32>
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<4x8xf32>
  %0 = init.select %m, %z, %w : tensor<4x8xi1>, tensor<4x8xf32>
  init.yield %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: init.param @select_false_mask
// CHECK-NEXT:    %[[W:.+]] = init.normal
// CHECK-NEXT:    init.yield %[[W]]
init.param @select_false_mask : tensor<4x8xf32> {
  %m = init.fill 0.0 : tensor<4x8xi1>
  %z = init.fill 0.0 : tensor<4x8xf32>
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<4x8xf32>
  %0 = init.select %m, %z, %w : tensor<4x8xi1>, tensor<4x8xf32>
  init.yield %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: init.param @select_same_values
// CHECK-NEXT:    %[[W:.+]] = init.normal
// CHECK-NEXT:    init.yield %[[W]]
init.param @select_same_values : tensor<4x8xf32> {
  %m = init.index_mask dim 0 index 0 : tensor<4x8xi1>
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<4x8xf32>
  %0 = init.select %m, %w, %w : tensor<4x8xi1>, tensor<4x8xf32>
  init.yield %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: init.param @select_by_index_mask_stays
// CHECK:         init.select
init.param @select_by_index_mask_stays : tensor<4x8xf32> {
  %m = init.index_mask dim 0 index 0 : tensor<4x8xi1>
  %z = init.fill 0.0 : tensor<4x8xf32>
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<4x8xf32>
  %0 = init.select %m, %z, %w : tensor<4x8xi1>, tensor<4x8xf32>
  init.yield %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: init.param @cast_to_same_type
// CHECK-NEXT:    %[[W:.+]] = init.normal
// CHECK-NEXT:    init.yield %[[W]]
init.param @cast_to_same_type : tensor<4xbf16> {
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xbf16>
  %0 = init.cast %w : tensor<4xbf16> to tensor<4xbf16>
  init.yield %0 : tensor<4xbf16>
}

// -----

// CHECK-LABEL: init.param @cast_to_other_type_stays
// CHECK:         init.cast
init.param @cast_to_other_type_stays : tensor<4xbf16> {
  %w = init.normal mean 0.0 std 1.0 stream 0 : tensor<4xf32>
  %0 = init.cast %w : tensor<4xf32> to tensor<4xbf16>
  init.yield %0 : tensor<4xbf16>
}

// -----

// variance_scaling becomes the uniform or normal op the contract defines it as, same stream.
// Shape 16x8: fan_in 8, fan_out 16, fan_avg 12; uniform bounds are sqrt(3 scale / fan).
// CHECK-LABEL: init.param @variance_scaling_fan_in_uniform
// CHECK-NEXT:    %[[U:.+]] = init.uniform -1.0606601717798212, 1.0606601717798212 stream 3 : tensor<16x8xf32>
// CHECK-NEXT:    init.yield %[[U]]
init.param @variance_scaling_fan_in_uniform : tensor<16x8xf32> {
  %0 = init.variance_scaling scale 3.0 fan_in uniform stream 3 : tensor<16x8xf32>
  init.yield %0 : tensor<16x8xf32>
}

// -----

// CHECK-LABEL: init.param @variance_scaling_fan_out_normal
// CHECK-NEXT:    %[[N:.+]] = init.normal mean 0.000000e+00 std 2.500000e-01 stream 0 : tensor<16x8xbf16>
// CHECK-NEXT:    init.yield %[[N]]
init.param @variance_scaling_fan_out_normal : tensor<16x8xbf16> {
  %0 = init.variance_scaling scale 1.0 fan_out normal stream 0 : tensor<16x8xbf16>
  init.yield %0 : tensor<16x8xbf16>
}

// -----

// CHECK-LABEL: init.param @variance_scaling_fan_avg_uniform
// CHECK-NEXT:    %[[U:.+]] = init.uniform -1.500000e+00, 1.500000e+00 stream 1 : tensor<16x8xf32>
init.param @variance_scaling_fan_avg_uniform : tensor<16x8xf32> {
  %0 = init.variance_scaling scale 9.0 fan_avg uniform stream 1 : tensor<16x8xf32>
  init.yield %0 : tensor<16x8xf32>
}

// -----

// A conv kernel: the receptive field (3x3) multiplies both fans: fan_in = 2 * 9 = 18.
// CHECK-LABEL: init.param @variance_scaling_conv_receptive_field
// CHECK-NEXT:    %[[N:.+]] = init.normal mean 0.000000e+00 std 5.000000e-01 stream 0 : tensor<4x2x3x3xf32>
init.param @variance_scaling_conv_receptive_field : tensor<4x2x3x3xf32> {
  %0 = init.variance_scaling scale 4.5 fan_in normal stream 0 : tensor<4x2x3x3xf32>
  init.yield %0 : tensor<4x2x3x3xf32>
}

// -----

// pow of two fills folds to pow_f's value, rounded to the element type: 10000^0.5 is 100
// exactly, (-8)^(1/3) is NaN (a negative base to a non-integer), 2^-3 in bf16 is 0.125.
// CHECK-LABEL: init.param @pow_of_fills_folds
// CHECK-NEXT:    %[[F:.+]] = init.fill 1.000000e+02 : tensor<4xf32>
// CHECK-NEXT:    init.yield %[[F]]
init.param @pow_of_fills_folds : tensor<4xf32> {
  %b = init.fill 10000.0 : tensor<4xf32>
  %e = init.fill 0.5 : tensor<4xf32>
  %0 = init.pow %b, %e : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: init.param @pow_of_fills_nan
// CHECK-NEXT:    %[[F:.+]] = init.fill 0x7FF8000000000000 : tensor<4xf32>
init.param @pow_of_fills_nan : tensor<4xf32> {
  %b = init.fill -8.0 : tensor<4xf32>
  %e = init.fill 0.33333333 : tensor<4xf32>
  %0 = init.pow %b, %e : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: init.param @pow_of_fills_bf16
// CHECK-NEXT:    %[[F:.+]] = init.fill 1.250000e-01 : tensor<4xbf16>
init.param @pow_of_fills_bf16 : tensor<4xbf16> {
  %b = init.fill 2.0 : tensor<4xbf16>
  %e = init.fill -3.0 : tensor<4xbf16>
  %0 = init.pow %b, %e : tensor<4xbf16>
  init.yield %0 : tensor<4xbf16>
}

// -----

// A random operand stays.
// CHECK-LABEL: init.param @pow_of_random_stays
// CHECK:         init.pow
init.param @pow_of_random_stays : tensor<4xf32> {
  %b = init.fill 10000.0 : tensor<4xf32>
  %e = init.uniform 0.0, 1.0 stream 0 : tensor<4xf32>
  %0 = init.pow %b, %e : tensor<4xf32>
  init.yield %0 : tensor<4xf32>
}
