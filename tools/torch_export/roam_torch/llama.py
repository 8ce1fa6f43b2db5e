"""A LLaMA-style decoder in plain PyTorch (Meta's llama/model.py, without its KV cache and
model parallelism), the model the C++ generator's `llama` family mirrors.

RMSNorm computed in float32 (`x.float()` ... `.type_as(x)`), rotary position embeddings by
rotate-half on [B, T, H, hd] with cos/sin tables as buffers, grouped-query attention
(`repeat_kv` = unsqueeze, expand, reshape), a SwiGLU MLP (w2(silu(w1 x) * w3 x)), no biases,
untied token embedding and output head. Attention is Meta's math path (scores, causal mask,
softmax in float32 cast back, @ v); `attention="sdpa"` calls
F.scaled_dot_product_attention, which PyTorch 1.13 does not have (the trace then fails with
that reason). With LLaMA-2's dimensions the parameter count is the published one
(6,738,415,616 for 7B).
"""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class LlamaConfig:
    n_layer: int = 32
    n_embd: int = 4096
    n_head: int = 32
    n_kv_head: int = 0  # 0 = n_head (multi-head attention)
    n_inner: int = 0  # SwiGLU hidden width; 0 = Meta's rule (see ffn_width)
    seq_len: int = 4096
    vocab: int = 32000
    n_positions: int = 4096  # rows of the rotary tables and side of the causal mask
    tie_embeddings: bool = False
    attention: str = "sdpa"  # or "math"

    @property
    def kv_heads(self):
        return self.n_kv_head or self.n_head


def ffn_width(config):
    """Meta's FeedForward width: 2/3 of 4 * n_embd rounded up to a multiple of 256."""
    if config.n_inner:
        return config.n_inner
    hidden = int(2 * (4 * config.n_embd) / 3)
    return 256 * ((hidden + 255) // 256)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        return y.type_as(x) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary(x, cos, sin):
    return x * cos + rotate_half(x) * sin


def repeat_kv(x, n_rep):
    """[B, T, KV, hd] -> [B, T, KV * n_rep, hd], a copy, as Meta's reference makes it."""
    if n_rep == 1:
        return x
    b, t, kv, hd = x.shape
    return x.unsqueeze(3).expand(b, t, kv, n_rep, hd).reshape(b, t, kv * n_rep, hd)


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head, self.n_kv_head = config.n_head, config.kv_heads
        self.head_dim = config.n_embd // config.n_head
        self.attention = config.attention
        d, hd = config.n_embd, self.head_dim
        self.wq = nn.Linear(d, self.n_head * hd, bias=False)
        self.wk = nn.Linear(d, self.n_kv_head * hd, bias=False)
        self.wv = nn.Linear(d, self.n_kv_head * hd, bias=False)
        self.wo = nn.Linear(self.n_head * hd, d, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_head, self.head_dim)
        k = self.wk(x).view(B, T, self.n_kv_head, self.head_dim)
        v = self.wv(x).view(B, T, self.n_kv_head, self.head_dim)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        n_rep = self.n_head // self.n_kv_head
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if self.attention == "sdpa":
            if not hasattr(F, "scaled_dot_product_attention"):
                raise NotImplementedError(
                    f"model.attention sdpa needs F.scaled_dot_product_attention (PyTorch >= "
                    f"2.0; this is {torch.__version__}): trace with attention: math")
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = torch.matmul(q, k.transpose(2, 3)) * (1.0 / math.sqrt(self.head_dim))
            scores = scores.masked_fill(mask, float("-inf"))
            y = torch.matmul(F.softmax(scores.float(), dim=-1).type_as(q), v)
        y = y.transpose(1, 2).contiguous().view(B, T, -1)
        return self.wo(y)


class FeedForward(nn.Module):
    def __init__(self, config):
        super().__init__()
        hidden = ffn_width(config)
        self.w1 = nn.Linear(config.n_embd, hidden, bias=False)
        self.w2 = nn.Linear(hidden, config.n_embd, bias=False)
        self.w3 = nn.Linear(config.n_embd, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention_norm = RMSNorm(config.n_embd)
        self.attention = Attention(config)
        self.ffn_norm = RMSNorm(config.n_embd)
        self.feed_forward = FeedForward(config)

    def forward(self, x, cos, sin, mask):
        h = x + self.attention(self.attention_norm(x), cos, sin, mask)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        hd = config.n_embd // config.n_head
        self.tok_embeddings = nn.Embedding(config.vocab, config.n_embd)
        self.layers = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.norm = RMSNorm(config.n_embd)
        self.output = nn.Linear(config.n_embd, config.vocab, bias=False)
        if config.tie_embeddings:
            self.tok_embeddings.weight = self.output.weight
        # Rotary tables [n_positions, 1, hd] (float32, broadcast over the heads of
        # [B, T, H, hd]) and the causal mask (True above the diagonal), as buffers: model
        # state, not trained.
        n = config.n_positions
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, hd, 2).float() / hd))
        angles = torch.outer(torch.arange(n).float(), inv_freq)
        angles = torch.cat((angles, angles), dim=-1).view(n, 1, hd)
        self.register_buffer("rope_cos", angles.cos())
        self.register_buffer("rope_sin", angles.sin())
        self.register_buffer("causal_mask", torch.ones(n, n, dtype=torch.bool).triu(1))

    def forward(self, idx):
        _, T = idx.shape
        h = self.tok_embeddings(idx)
        # Cast once to the dtype q and k have (bfloat16 under autocast), so the rotation's
        # products stay in it rather than promoting to float32.
        if torch.is_autocast_enabled():  # CUDA autocast
            act = torch.get_autocast_gpu_dtype()
        elif torch.is_autocast_cpu_enabled():
            act = torch.get_autocast_cpu_dtype()
        else:
            act = h.dtype
        cos, sin = self.rope_cos[:T].to(act), self.rope_sin[:T].to(act)
        # The fused kernel masks by itself (is_causal): only the math path slices the mask.
        mask = self.causal_mask[:T, :T] if self.config.attention == "math" else None
        for layer in self.layers:
            h = layer(h, cos, sin, mask)
        return self.output(self.norm(h))
