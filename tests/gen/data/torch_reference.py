#!/usr/bin/env python3
"""Records the PyTorch 1.13 (Debian bookworm's python3-torch) eager training step of small
models, one line per aten op the dispatcher runs: phase, op name, output sizes in bytes.
These are the golden files tests/gen/torch_golden_test.cpp compares roam's generators with.

Run from this directory with Debian's python3 (ROAM_WITH_TORCH=1 scripts/install-deps.sh):
    /usr/bin/python3 torch_reference.py
It rewrites every <case>.ops next to <case>.yaml. The GPT-2 model is nanoGPT's (attention
without the flash path, which 1.13 lacks); BERT is the BertModel-shaped module below; the
vision models are torchvision 0.14's; FCN-8s, SegNet and U-Net are roam_torch/segmentation.py's
(the modules the exporter traces). Profiler bookkeeping ops (zeros, _record_function_enter)
that torch.optim's step wrapper emits are left out.
"""
import math
import os
import sys
import torch, torch.nn as nn, torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "../../../tools/torch_export"))
from roam_torch.segmentation import FCN8s, SegNet, UNet  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.lines = []
        self.phase = "forward"

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if name not in ("zeros", "_record_function_enter"):
            sizes = [str(t.numel() * t.element_size()) for t in tree_flatten(out)[0]
                     if isinstance(t, torch.Tensor)]
            self.lines.append(f"{self.phase} {name} {','.join(sizes)}".rstrip())
        return out


def record(model, inputs, loss_fn, optimizer):
    model.train()
    params = list(model.parameters())
    opt = {"adam": lambda: torch.optim.Adam(params, foreach=False),
           "adamw": lambda: torch.optim.AdamW(params, foreach=False, weight_decay=0.01),
           "sgd": lambda: torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-4,
                                          foreach=False)}[optimizer]()
    # One step first so the optimizer state exists: roam models the steady state.
    loss_fn(model(*inputs)).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    rec = Recorder()
    with rec:
        loss = loss_fn(model(*inputs))
        rec.phase = "backward"
        loss.backward()
        rec.phase = "optimizer"
        opt.step()
    return rec.lines


# ---- nanoGPT (model.py, non-flash attention) ----
class CausalSelfAttention(nn.Module):
    def __init__(self, d, h, T, p):
        super().__init__()
        self.c_attn = nn.Linear(d, 3 * d); self.c_proj = nn.Linear(d, d)
        self.attn_dropout = nn.Dropout(p); self.resid_dropout = nn.Dropout(p)
        self.n_head = h; self.n_embd = d
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))
    def forward(self, x):
        B, T, C = x.size()
        q, k, v  = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:,:,:T,:T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))
class MLP(nn.Module):
    def __init__(self, d, p):
        super().__init__()
        self.c_fc = nn.Linear(d, 4 * d); self.gelu = nn.GELU(); self.c_proj = nn.Linear(4 * d, d); self.dropout = nn.Dropout(p)
    def forward(self, x): return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))
class Block(nn.Module):
    def __init__(self, d, h, T, p):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d); self.attn = CausalSelfAttention(d, h, T, p); self.ln_2 = nn.LayerNorm(d); self.mlp = MLP(d, p)
    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x
class GPT(nn.Module):
    def __init__(self, L, d, h, T, V, p):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(wte = nn.Embedding(V, d), wpe = nn.Embedding(T, d), drop = nn.Dropout(p),
            h = nn.ModuleList([Block(d,h,T,p) for _ in range(L)]), ln_f = nn.LayerNorm(d)))
        self.lm_head = nn.Linear(d, V, bias=False)
        self.transformer.wte.weight = self.lm_head.weight

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        tok_emb = self.transformer.wte(idx); pos_emb = self.transformer.wpe(pos)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h: x = block(x)
        x = self.transformer.ln_f(x)
        return self.lm_head(x)

# ---- BERT-shaped reference ----
class Layer(nn.Module):
    def __init__(s, d, h, inner, p):
        super().__init__()
        s.h=h; s.hs=d//h
        s.query=nn.Linear(d,d); s.key=nn.Linear(d,d); s.value=nn.Linear(d,d)
        s.attn_out=nn.Linear(d,d); s.attn_ln=nn.LayerNorm(d, eps=1e-12)
        s.intermediate=nn.Linear(d,inner); s.output=nn.Linear(inner,d); s.out_ln=nn.LayerNorm(d, eps=1e-12)
        s.dropout=nn.Dropout(p)
    def heads(s, x):
        B,T,_=x.size(); return x.view(B,T,s.h,s.hs).permute(0,2,1,3)
    def forward(s, x):
        B,T,C=x.size()
        q=s.query(x); k=s.heads(s.key(x)); v=s.heads(s.value(x)); q=s.heads(q)
        scores=torch.matmul(q, k.transpose(-1,-2)) / math.sqrt(s.hs)
        probs=s.dropout(F.softmax(scores, dim=-1))
        ctx=torch.matmul(probs, v).permute(0,2,1,3).contiguous().view(B,T,C)
        x=s.attn_ln(s.dropout(s.attn_out(ctx)) + x)
        h=s.dropout(s.output(F.gelu(s.intermediate(x))))
        return s.out_ln(h + x)
class Bert(nn.Module):

    def __init__(s, L, d, h, inner, V, P, types, p):
        super().__init__()
        s.word=nn.Embedding(V,d); s.position=nn.Embedding(P,d); s.token_type=nn.Embedding(types,d); s.emb_ln=nn.LayerNorm(d, eps=1e-12)
        s.layers=nn.ModuleList([Layer(d,h,inner,p) for _ in range(L)]); s.pooler=nn.Linear(d,d); s.dropout=nn.Dropout(p)
        s.register_buffer('position_ids', torch.arange(P).expand((1,-1)))
        s.register_buffer('token_type_ids', torch.zeros((1,P), dtype=torch.long))
    def forward(s, input_ids, labels):
        B,T=input_ids.size()
        position_ids=s.position_ids[:, :T]
        types=s.token_type_ids[:, :T].expand(B,T)
        x=s.word(input_ids) + s.token_type(types)
        x+=s.position(position_ids)
        x=s.dropout(s.emb_ln(x))
        for l in s.layers: x=l(x)
        pooled=torch.tanh(s.pooler(x[:,0]))
        logits=F.linear(x, s.word.weight)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))



def cases():
    torch.manual_seed(0)
    B = 2
    ids = torch.randint(0, 100, (B, 16)); tgt = torch.randint(0, 100, (B, 16))
    gpt_loss = lambda o: F.cross_entropy(o.view(-1, o.size(-1)), tgt.view(-1), ignore_index=-1)
    yield "gpt2-tiny", GPT(2, 64, 4, 16, 100, 0.1), (ids,), gpt_loss, "adam"
    yield "gpt2-tiny-sgd", GPT(1, 64, 4, 16, 100, 0.1), (ids,), gpt_loss, "sgd"
    yield "gpt2-tiny-adamw", GPT(1, 64, 4, 16, 100, 0.1), (ids,), gpt_loss, "adamw"
    yield "bert-tiny", Bert(1, 64, 4, 256, 100, 32, 2, 0.1), (ids, tgt), lambda o: o, "adam"
    img = lambda s: torch.randn(B, 3, s, s)
    y = torch.randint(0, 10, (B,)); y1000 = torch.randint(0, 1000, (B,))
    from torchvision.models.vision_transformer import VisionTransformer
    vit = VisionTransformer(image_size=32, patch_size=16, num_layers=1, num_heads=4,
                            hidden_dim=64, mlp_dim=128, num_classes=10)
    yield "vit-tiny", vit, (img(32),), lambda o: F.cross_entropy(o, y), "adam"
    ce = lambda o: F.cross_entropy(o, y1000)
    yield "resnet18-tiny", torchvision.models.resnet18(), (img(64),), ce, "adam"
    yield "resnet50-tiny", torchvision.models.resnet50(), (img(32),), ce, "adam"
    yield "vgg11-tiny", torchvision.models.vgg11(), (img(32),), ce, "adam"
    yield "alexnet-tiny", torchvision.models.alexnet(), (img(64),), ce, "adam"
    yield "mobilenet_v2-tiny", torchvision.models.mobilenet_v2(), (img(32),), ce, "adam"
    # Segmentation: a per-pixel loss over 4 classes; the odd sizes crop (fcn8) and unpool to
    # a size the pool floored (segnet).
    for s in (32, 45):
        pixels = torch.randint(0, 4, (B, s, s))
        per_pixel = lambda o, pixels=pixels: F.cross_entropy(o, pixels)
        yield f"fcn8-tiny{'' if s == 32 else '-odd'}", FCN8s(4), (img(s),), per_pixel, "adam"
        yield f"segnet-tiny{'' if s == 32 else '-odd'}", SegNet(4), (img(s),), per_pixel, "adam"
    unet_pixels = torch.randint(0, 4, (B, 32, 32))
    yield "unet-tiny", UNet(4), (img(32),), lambda o: F.cross_entropy(o, unet_pixels), "adam"


if __name__ == "__main__":
    for name, model, inputs, loss_fn, optimizer in cases():
        lines = record(model, inputs, loss_fn, optimizer)
        with open(f"{name}.ops", "w") as f:
            f.write("\n".join(lines) + "\n")
        print(name, len(lines), "ops")
