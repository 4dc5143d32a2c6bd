"""Models for the capture tests (tests/e2e/capture/capture_models.sh): each factory returns an nn.Module
whose constructor exercises one family of init logic. Small, so that 1- and 4-rank runs are fast,
but with random parameters of at least 1000 elements for the statistical checks."""

import math

import torch
import torch.nn as nn


def mlp(dim=64, hidden=256, out=32):
    """Linear default init (kaiming_uniform_ a=sqrt(5), bias from fan_in), LayerNorm."""
    return nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, out),
                         nn.LayerNorm(out))


class CNN(nn.Module):
    """Convolutions with groups, transposed convolutions, norms with buffers."""

    def __init__(self):
        super().__init__()
        self.conv1d = nn.Conv1d(8, 32, 5, groups=2)
        self.conv2d = nn.Conv2d(16, 32, 3, groups=4)
        self.conv3d = nn.Conv3d(4, 16, (3, 3, 3))
        self.up = nn.ConvTranspose2d(32, 16, 4, stride=2, groups=2)
        self.up1d = nn.ConvTranspose1d(16, 24, 3, groups=1)
        self.bn = nn.BatchNorm2d(32)
        self.gn = nn.GroupNorm(4, 16)


class Transformer(nn.Module):
    """nn.MultiheadAttention packed and with separate k/v projections, Embedding with
    padding_idx, EmbeddingBag, Bilinear, LayerNorm."""

    def __init__(self, vocab=500, dim=64, heads=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=3)
        self.bag = nn.EmbeddingBag(200, 16, padding_idx=0)
        self.attn = nn.MultiheadAttention(dim, heads)
        self.cross = nn.MultiheadAttention(dim, heads, kdim=48, vdim=40, add_bias_kv=True)
        self.norm = nn.LayerNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, 4 * dim), nn.ReLU(), nn.Linear(4 * dim, dim))
        self.pair = nn.Bilinear(20, 30, 8)


class GPT2Block(nn.Module):
    def __init__(self, dim, ctx):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.ln_2 = nn.LayerNorm(dim)
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.mlp_c_proj = nn.Linear(4 * dim, dim)
        # The causal mask, as GPT-2 registers it.
        self.register_buffer("bias", torch.tril(torch.ones(ctx, ctx)).view(1, 1, ctx, ctx))


class GPT2(nn.Module):
    """HF-style _init_weights loop, GPT-2's scaled residual init, tied lm_head, arange buffer."""

    def __init__(self, vocab=300, dim=64, layers=2, ctx=32):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(ctx, dim)
        self.h = nn.ModuleList([GPT2Block(dim, ctx) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        self.register_buffer("position_ids", torch.arange(ctx).expand((1, -1)))
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                p.data.normal_(mean=0.0, std=0.02 / math.sqrt(2 * layers))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=0.02)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=0.02)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)


def lstm():
    """RNN/LSTM/GRU defaults: U(-1/sqrt(hidden), 1/sqrt(hidden)) on every weight and bias."""
    return nn.ModuleDict({
        "lstm": nn.LSTM(32, 64, num_layers=2, bidirectional=True),
        "gru": nn.GRU(16, 48),
        "rnn": nn.RNN(24, 40, nonlinearity="relu"),
    })


class DoubleInit(nn.Module):
    """Constructor init, then model.apply(init_fn) redraws both weights."""

    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(torch.empty(128, 64))
        self.w2 = nn.Parameter(torch.empty(64, 96))
        nn.init.uniform_(self.w1, -1.0, 1.0)
        nn.init.normal_(self.w2, 0.0, 1.0)


def reinit(module):
    if isinstance(module, DoubleInit):
        nn.init.kaiming_uniform_(module.w1, nonlinearity="relu")
        nn.init.kaiming_normal_(module.w2, mode="fan_out", nonlinearity="leaky_relu", a=0.1)


def double_init():
    model = DoubleInit()
    model.apply(reinit)
    return model


class Masks(nn.Module):
    """Deterministic buffers: bool and float tril masks, arange-based positions, a masked
    additive attention bias, and in-place math on them."""

    def __init__(self, ctx=48):
        super().__init__()
        self.register_buffer("causal", torch.tril(torch.ones(ctx, ctx, dtype=torch.bool)))
        self.register_buffer("upper", torch.triu(torch.ones(ctx, ctx), diagonal=1))
        bias = torch.zeros(ctx, ctx)
        bias.masked_fill_(torch.triu(torch.ones(ctx, ctx, dtype=torch.bool), diagonal=1), -1e4)
        self.register_buffer("attn_bias", bias.view(1, ctx, ctx))
        self.register_buffer("positions", torch.arange(0, 2 * ctx, 2))
        self.register_buffer("scaled", torch.arange(ctx, dtype=torch.float32) * 0.5 + 1.0)
        self.register_buffer("scratch", torch.ones(ctx), persistent=False)
        self.proj = nn.Linear(ctx, ctx)
        with torch.no_grad():
            self.proj.weight.mul_(0.5).add_(0.01).clamp_(-0.05, 0.05)
            self.proj.bias.copy_(torch.arange(ctx, dtype=torch.float32) * 0.25 - 2.0)


class CustomInit(nn.Module):
    """orthogonal_ with gain (tall, wide, 4-d), trunc_normal_, xavier, kaiming fan_out, eye_,
    dirac_, constant_, and the erfinv_-based truncated normal written out by hand."""

    def __init__(self):
        super().__init__()
        self.tall = nn.Linear(40, 96, bias=False)
        self.wide = nn.Linear(128, 32, bias=False)
        self.conv = nn.Conv2d(8, 24, 3)
        self.square = nn.Linear(64, 64)
        self.proj = nn.Linear(64, 80)
        self.xav = nn.Parameter(torch.empty(60, 70))
        self.ident = nn.Parameter(torch.empty(16, 24))
        self.dirac = nn.Conv2d(6, 6, 3, bias=False)
        self.hand = nn.Parameter(torch.empty(50, 40))
        nn.init.orthogonal_(self.tall.weight, gain=2.0)
        nn.init.orthogonal_(self.wide.weight)
        nn.init.orthogonal_(self.conv.weight, gain=nn.init.calculate_gain("relu"))
        nn.init.constant_(self.conv.bias, 0.1)
        nn.init.trunc_normal_(self.square.weight, std=0.02, a=-0.04, b=0.04)
        nn.init.zeros_(self.square.bias)
        nn.init.kaiming_normal_(self.proj.weight, mode="fan_out", nonlinearity="relu")
        nn.init.ones_(self.proj.bias)
        nn.init.xavier_normal_(self.xav, gain=0.5)
        nn.init.eye_(self.ident)
        nn.init.dirac_(self.dirac.weight)
        with torch.no_grad():
            # timm's old trunc_normal_: uniform on [2l-1, 2u-1], erfinv, scale, shift, clamp.
            lo, hi = (1 + math.erf(-2 / math.sqrt(2))) / 2, (1 + math.erf(2 / math.sqrt(2))) / 2
            self.hand.uniform_(2 * lo - 1, 2 * hi - 1)
            self.hand.erfinv_()
            self.hand.mul_(0.1 * math.sqrt(2.0))
            self.hand.add_(0.0)
            self.hand.clamp_(min=-0.2, max=0.2)


class TiedEmbeddings(nn.Module):
    """One tensor shared by the input embedding and the output projection."""

    def __init__(self, vocab=400, dim=48):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.body = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight


def cnn():
    return CNN()


def transformer():
    return Transformer()


def gpt2():
    return GPT2()


def masks():
    return Masks()


def custom_init():
    return CustomInit()


def tied_embeddings():
    return TiedEmbeddings()


ALL = ["mlp", "cnn", "transformer", "gpt2", "lstm", "double_init", "masks", "custom_init",
       "tied_embeddings"]
