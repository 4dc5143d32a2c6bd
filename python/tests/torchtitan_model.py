"""A small llama3 of torchtitan 0.3.0's own model class, built from torchtitan's own config
pieces (the per-layer inits of torchtitan.models.llama3: trunc_normal std 0.02 on wq, wk, wv and
w1, depth-scaled std on wo, w2 and w3, normal std 1 on the embedding, trunc_normal of dim**-0.5
on lm_head, ones on the norms), and the capture factory that initializes it as torchtitan's
trainer does (init_weights after to_empty). wq, wk and wv are separate (fuse_qkv=False): the
fused wqkv is one parameter in the trainer's memory and three only in checkpoints."""

from torchtitan.models.common import ComplexRoPE, Embedding, Linear, RMSNorm, compute_ffn_hidden_dim
from torchtitan.models.llama3 import (_EMBEDDING_INIT, _NORM_INIT, Llama3Model,
                                      _build_llama3_layers, _output_linear_init)

SEQ_LEN = 32


def config(dim=65, n_layers=4, n_heads=6, n_kv_heads=2, vocab=1024):
    return Llama3Model.Config(
        dim=dim, vocab_size=vocab,
        tok_embeddings=Embedding.Config(num_embeddings=vocab, embedding_dim=dim,
                                        param_init=_EMBEDDING_INIT),
        norm=RMSNorm.Config(normalized_shape=dim, param_init=_NORM_INIT),
        lm_head=Linear.Config(in_features=dim, out_features=vocab,
                              param_init=_output_linear_init(dim)),
        layers=_build_llama3_layers(
            n_layers=n_layers, dim=dim, n_heads=n_heads, n_kv_heads=n_kv_heads, fuse_qkv=False,
            hidden_dim=compute_ffn_hidden_dim(dim, multiple_of=16),
            rope=ComplexRoPE.Config(dim=dim // n_heads, max_seq_len=SEQ_LEN, theta=500000,
                                    scaling="llama"),
            attn_backend="flex"))


def build():
    model = config().build()
    model.init_weights(buffer_device=None)
    return model
