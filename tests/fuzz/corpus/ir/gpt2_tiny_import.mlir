module attributes {init.model = "gpt2"} {
  init.seed 0
  init.param @transformer.wte.weight : tensor<1000x64xf32> axes ["vocab", "embed"] {
    %0 = init.normal mean 0.000000e+00 std 2.000000e-02 stream 0 : tensor<1000x64xf32>
    init.yield %0 : tensor<1000x64xf32>
  }
  init.param @transformer.wpe.weight : tensor<64x64xf32> axes ["positions", "embed"] {
    %0 = init.normal mean 0.000000e+00 std 2.000000e-02 stream 0 : tensor<64x64xf32>
    init.yield %0 : tensor<64x64xf32>
  }
  init.param @transformer.h.0.ln_1.weight : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 1.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.0.ln_1.bias : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 0.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.0.attn.bias : tensor<1x1x64x64xi1> axes ["mask_batch", "mask_heads", "mask_query", "mask_key"] buffer {
    %0 = init.tril diagonal 0 : tensor<1x1x64x64xi1>
    init.yield %0 : tensor<1x1x64x64xi1>
  }
  init.param @transformer.h.0.attn.masked_bias : tensor<f32> axes [] buffer {
    %0 = init.fill -1.000000e+04 : tensor<f32>
    init.yield %0 : tensor<f32>
  }
  init.param @transformer.h.0.attn.c_attn.weight : tensor<64x192xf32> axes ["embed", "qkv"] {
    %0 = init.normal mean 0.000000e+00 std 2.000000e-02 stream 0 : tensor<64x192xf32>
    init.yield %0 : tensor<64x192xf32>
  }
  init.param @transformer.h.0.attn.c_attn.bias : tensor<192xf32> axes ["qkv"] {
    %0 = init.fill 0.000000e+00 : tensor<192xf32>
    init.yield %0 : tensor<192xf32>
  }
  init.param @transformer.h.0.attn.c_proj.weight : tensor<64x64xf32> axes ["heads", "embed"] {
    %0 = init.normal mean 0.000000e+00 std 0.0081649658092772612 stream 0 : tensor<64x64xf32>
    init.yield %0 : tensor<64x64xf32>
  }
  init.param @transformer.h.0.attn.c_proj.bias : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 0.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.0.ln_2.weight : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 1.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.0.ln_2.bias : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 0.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.0.mlp.c_fc.weight : tensor<64x256xf32> axes ["embed", "mlp"] {
    %0 = init.normal mean 0.000000e+00 std 2.000000e-02 stream 0 : tensor<64x256xf32>
    init.yield %0 : tensor<64x256xf32>
  }
  init.param @transformer.h.0.mlp.c_fc.bias : tensor<256xf32> axes ["mlp"] {
    %0 = init.fill 0.000000e+00 : tensor<256xf32>
    init.yield %0 : tensor<256xf32>
  }
  init.param @transformer.h.0.mlp.c_proj.weight : tensor<256x64xf32> axes ["mlp", "embed"] {
    %0 = init.normal mean 0.000000e+00 std 0.0081649658092772612 stream 0 : tensor<256x64xf32>
    init.yield %0 : tensor<256x64xf32>
  }
  init.param @transformer.h.0.mlp.c_proj.bias : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 0.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.1.ln_1.weight : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 1.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.1.ln_1.bias : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 0.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.1.attn.bias : tensor<1x1x64x64xi1> axes ["mask_batch", "mask_heads", "mask_query", "mask_key"] buffer {
    %0 = init.tril diagonal 0 : tensor<1x1x64x64xi1>
    init.yield %0 : tensor<1x1x64x64xi1>
  }
  init.param @transformer.h.1.attn.masked_bias : tensor<f32> axes [] buffer {
    %0 = init.fill -1.000000e+04 : tensor<f32>
    init.yield %0 : tensor<f32>
  }
  init.param @transformer.h.1.attn.c_attn.weight : tensor<64x192xf32> axes ["embed", "qkv"] {
    %0 = init.normal mean 0.000000e+00 std 2.000000e-02 stream 0 : tensor<64x192xf32>
    init.yield %0 : tensor<64x192xf32>
  }
  init.param @transformer.h.1.attn.c_attn.bias : tensor<192xf32> axes ["qkv"] {
    %0 = init.fill 0.000000e+00 : tensor<192xf32>
    init.yield %0 : tensor<192xf32>
  }
  init.param @transformer.h.1.attn.c_proj.weight : tensor<64x64xf32> axes ["heads", "embed"] {
    %0 = init.normal mean 0.000000e+00 std 0.0081649658092772612 stream 0 : tensor<64x64xf32>
    init.yield %0 : tensor<64x64xf32>
  }
  init.param @transformer.h.1.attn.c_proj.bias : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 0.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.1.ln_2.weight : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 1.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.1.ln_2.bias : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 0.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.1.mlp.c_fc.weight : tensor<64x256xf32> axes ["embed", "mlp"] {
    %0 = init.normal mean 0.000000e+00 std 2.000000e-02 stream 0 : tensor<64x256xf32>
    init.yield %0 : tensor<64x256xf32>
  }
  init.param @transformer.h.1.mlp.c_fc.bias : tensor<256xf32> axes ["mlp"] {
    %0 = init.fill 0.000000e+00 : tensor<256xf32>
    init.yield %0 : tensor<256xf32>
  }
  init.param @transformer.h.1.mlp.c_proj.weight : tensor<256x64xf32> axes ["mlp", "embed"] {
    %0 = init.normal mean 0.000000e+00 std 0.0081649658092772612 stream 0 : tensor<256x64xf32>
    init.yield %0 : tensor<256x64xf32>
  }
  init.param @transformer.h.1.mlp.c_proj.bias : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 0.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.2.ln_1.weight : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 1.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.2.ln_1.bias : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 0.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.2.attn.bias : tensor<1x1x64x64xi1> axes ["mask_batch", "mask_heads", "mask_query", "mask_key"] buffer {
    %0 = init.tril diagonal 0 : tensor<1x1x64x64xi1>
    init.yield %0 : tensor<1x1x64x64xi1>
  }
  init.param @transformer.h.2.attn.masked_bias : tensor<f32> axes [] buffer {
    %0 = init.fill -1.000000e+04 : tensor<f32>
    init.yield %0 : tensor<f32>
  }
  init.param @transformer.h.2.attn.c_attn.weight : tensor<64x192xf32> axes ["embed", "qkv"] {
    %0 = init.normal mean 0.000000e+00 std 2.000000e-02 stream 0 : tensor<64x192xf32>
    init.yield %0 : tensor<64x192xf32>
  }
  init.param @transformer.h.2.attn.c_attn.bias : tensor<192xf32> axes ["qkv"] {
    %0 = init.fill 0.000000e+00 : tensor<192xf32>
    init.yield %0 : tensor<192xf32>
  }
  init.param @transformer.h.2.attn.c_proj.weight : tensor<64x64xf32> axes ["heads", "embed"] {
    %0 = init.normal mean 0.000000e+00 std 0.0081649658092772612 stream 0 : tensor<64x64xf32>
    init.yield %0 : tensor<64x64xf32>
  }
  init.param @transformer.h.2.attn.c_proj.bias : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 0.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.2.ln_2.weight : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 1.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.2.ln_2.bias : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 0.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.h.2.mlp.c_fc.weight : tensor<64x256xf32> axes ["embed", "mlp"] {
    %0 = init.normal mean 0.000000e+00 std 2.000000e-02 stream 0 : tensor<64x256xf32>
    init.yield %0 : tensor<64x256xf32>
  }
  init.param @transformer.h.2.mlp.c_fc.bias : tensor<256xf32> axes ["mlp"] {
    %0 = init.fill 0.000000e+00 : tensor<256xf32>
    init.yield %0 : tensor<256xf32>
  }
  init.param @transformer.h.2.mlp.c_proj.weight : tensor<256x64xf32> axes ["mlp", "embed"] {
    %0 = init.normal mean 0.000000e+00 std 0.0081649658092772612 stream 0 : tensor<256x64xf32>
    init.yield %0 : tensor<256x64xf32>
  }
  init.param @transformer.h.2.mlp.c_proj.bias : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 0.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.ln_f.weight : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 1.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @transformer.ln_f.bias : tensor<64xf32> axes ["embed"] {
    %0 = init.fill 0.000000e+00 : tensor<64xf32>
    init.yield %0 : tensor<64xf32>
  }
  init.param @lm_head.weight : tensor<1000x64xf32> axes ["vocab", "embed"] tied_to @transformer.wte.weight
}
