#!/usr/bin/env python3
"""Writes tiny Llama, Mistral, Qwen2, Qwen3 and Gemma 3 checkpoints and what
plain PyTorch computes from them, for test_family_model.cpp.

Usage: family_oracle.py OUTDIR     (writes OUTDIR/<case>/ and OUTDIR/family_cases.json)

Each case is a folder as Hugging Face saves one: config.json and
model.safetensors (F32, or BF16 for one case) or two shards with
model.safetensors.index.json. The safetensors files are written by hand
(Debian has no safetensors package). The reference model below is written
here in our own words, following the book's from-scratch classes step for
step (ch05/07_gpt_to_llama's Llama 3, ch05/11_qwen3, ch05/12_gemma3): the
same RMSNorm, RoPE with rotate-half pairs (and Llama 3's frequency
stretch), grouped-query attention with the K/V heads repeated, the gated
MLP, Gemma's four norms, scaled embeddings and query_pre_attn_scalar. The
modules carry Hugging Face's names so that their state_dict is the file.

For each case and each T in (5, 40) it records every position's logits,
every layer's and head's attention weights, and layer 0's stages (the
projected queries, keys and values, after q/k norm, after RoPE). Floats
are the hex of their little-endian float32 bytes. Without PyTorch it
writes nothing and exits 0: the tests that need the files then skip.
"""
import json
import math
import os
import struct
import sys

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("family_oracle: PyTorch is not installed; the FamilyOracle tests skip", file=sys.stderr)
    sys.exit(0)


# ---------------------------------------------------------------------------
# The reference model

class RMSNorm(nn.Module):
    def __init__(self, dim, eps, gemma):
        super().__init__()
        self.eps, self.gemma = eps, gemma
        self.weight = nn.Parameter(torch.zeros(dim) if gemma else torch.ones(dim))

    def forward(self, x):
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * (1.0 + self.weight.float()) if self.gemma else x * self.weight


def rope_tables(head_dim, theta, context, scaling=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    if scaling is not None:  # llama3.py's freq_config
        original = scaling["original_max_position_embeddings"]
        low_wavelen = original / scaling["low_freq_factor"]
        high_wavelen = original / scaling["high_freq_factor"]
        wavelen = 2 * torch.pi / inv_freq
        stretched = torch.where(wavelen > low_wavelen, inv_freq / scaling["factor"], inv_freq)
        smooth = (original / wavelen - scaling["low_freq_factor"]) / (
            scaling["high_freq_factor"] - scaling["low_freq_factor"])
        smoothed = (1 - smooth) * (inv_freq / scaling["factor"]) + smooth * inv_freq
        medium = (wavelen <= low_wavelen) & (wavelen >= high_wavelen)
        inv_freq = torch.where(medium, smoothed, stretched)
    positions = torch.arange(context, dtype=torch.float32)
    angles = positions[:, None] * inv_freq[None, :]
    angles = torch.cat([angles, angles], dim=1)
    return torch.cos(angles), torch.sin(angles)


def rotate(x, cos, sin):
    seq, hd = x.shape[2], x.shape[3]
    first, second = x[..., : hd // 2], x[..., hd // 2:]
    turned = torch.cat((-second, first), dim=-1)
    return x * cos[:seq][None, None] + turned * sin[:seq][None, None]


def heads_side_by_side(t):  # (1, heads, T, hd) -> (T, heads * hd)
    return t[0].transpose(0, 1).reshape(t.shape[2], -1)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        H, K, hd, d = c["heads"], c["kv_heads"], c["head_dim"], c["hidden"]
        self.q_proj = nn.Linear(d, H * hd, bias=c["q_bias"])
        self.k_proj = nn.Linear(d, K * hd, bias=c["q_bias"])
        self.v_proj = nn.Linear(d, K * hd, bias=c["q_bias"])
        self.o_proj = nn.Linear(H * hd, d, bias=c["o_bias"])
        if c["qk_norm"]:
            self.q_norm = RMSNorm(hd, c["eps"], c["gemma"])
            self.k_norm = RMSNorm(hd, c["eps"], c["gemma"])

    def forward(self, x, mask, cos, sin, rec):
        c = self.c
        T = x.shape[1]
        H, K, hd = c["heads"], c["kv_heads"], c["head_dim"]
        q = self.q_proj(x).view(1, T, H, hd).transpose(1, 2)
        k = self.k_proj(x).view(1, T, K, hd).transpose(1, 2)
        v = self.v_proj(x).view(1, T, K, hd).transpose(1, 2)
        rec["queries"], rec["keys"], rec["values"] = (heads_side_by_side(t) for t in (q, k, v))
        if c["qk_norm"]:
            q, k = self.q_norm(q), self.k_norm(k)
            rec["queries_normed"], rec["keys_normed"] = heads_side_by_side(q), heads_side_by_side(k)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        rec["queries_rotated"], rec["keys_rotated"] = heads_side_by_side(q), heads_side_by_side(k)
        k = k.repeat_interleave(H // K, dim=1)
        v = v.repeat_interleave(H // K, dim=1)
        if c["gemma"]:
            scores = (q * c["query_pre_attn_scalar"] ** -0.5) @ k.transpose(2, 3)
            scores = scores.masked_fill(mask, -torch.inf)
            weights = torch.softmax(scores, dim=-1)
        else:
            scores = (q @ k.transpose(2, 3)).masked_fill(mask, -torch.inf)
            weights = torch.softmax(scores / hd ** 0.5, dim=-1)
        rec["weights"] = weights[0]
        context = (weights @ v).transpose(1, 2).reshape(1, T, H * hd)
        return self.o_proj(context)


class Mlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, inner, bias = c["hidden"], c["inner"], c["mlp_bias"]
        self.gate_proj = nn.Linear(d, inner, bias=bias)
        self.up_proj = nn.Linear(d, inner, bias=bias)
        self.down_proj = nn.Linear(inner, d, bias=bias)
        self.gemma = c["gemma"]

    def forward(self, x):
        gate = self.gate_proj(x)
        act = F.gelu(gate, approximate="tanh") if self.gemma else F.silu(gate)
        return self.down_proj(act * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, eps, g = c["hidden"], c["eps"], c["gemma"]
        self.gemma = g
        self.self_attn = Attention(c)
        self.mlp = Mlp(c)
        self.input_layernorm = RMSNorm(d, eps, g)
        self.post_attention_layernorm = RMSNorm(d, eps, g)
        if g:
            self.pre_feedforward_layernorm = RMSNorm(d, eps, g)
            self.post_feedforward_layernorm = RMSNorm(d, eps, g)

    def forward(self, x, mask, cos, sin, rec):
        attended = self.self_attn(self.input_layernorm(x), mask, cos, sin, rec)
        if self.gemma:
            x = x + self.post_attention_layernorm(attended)
            return x + self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(x)))
        x = x + attended
        return x + self.mlp(self.post_attention_layernorm(x))


class Inner(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab"], c["hidden"])
        self.layers = nn.ModuleList(Block(c) for _ in range(c["layers"]))
        self.norm = RMSNorm(c["hidden"], c["eps"], c["gemma"])


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = Inner(c)
        if not c["tied"]:
            self.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False)

    def forward(self, ids):
        c = self.c
        T = ids.shape[0]
        x = self.model.embed_tokens(ids[None])
        if c["gemma"]:
            x = x * (c["hidden"] ** 0.5)
        records = []
        i = torch.arange(T)[:, None]
        j = torch.arange(T)[None, :]
        for layer, block in enumerate(self.model.layers):
            slides = c["sliding"][layer]
            mask = j > i
            if slides:
                mask = mask | (j <= i - c["window"])
            theta = c["local_theta"] if (c["gemma"] and slides) else c["theta"]
            scaling = None if (c["gemma"] and slides) else c["rope_scaling"]
            cos, sin = rope_tables(c["head_dim"], theta, T, scaling)
            rec = {}
            x = block(x, mask, cos, sin, rec)
            records.append(rec)
        x = self.model.norm(x)
        head = self.model.embed_tokens.weight if c["tied"] else self.lm_head.weight
        logits = x[0] @ head.T
        if c["softcap"]:
            logits = torch.tanh(logits / c["softcap"]) * c["softcap"]
        return logits, records


# ---------------------------------------------------------------------------
# The cases: config.json and the reference model's settings

BASE = dict(vocab=300, hidden=64, inner=96, layers=2, heads=4, kv_heads=2, head_dim=16,
            eps=1e-5, theta=10000.0, local_theta=10000.0, rope_scaling=None, tied=False,
            q_bias=False, o_bias=False, mlp_bias=False, qk_norm=False, gemma=False,
            sliding=[False, False], window=0, softcap=None, query_pre_attn_scalar=16)

LLAMA3_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                  "high_freq_factor": 4.0, "original_max_position_embeddings": 64}


def hf_common(c, model_type):
    return {
        "model_type": model_type, "vocab_size": c["vocab"], "hidden_size": c["hidden"],
        "intermediate_size": c["inner"], "num_hidden_layers": c["layers"],
        "num_attention_heads": c["heads"], "num_key_value_heads": c["kv_heads"],
        "rms_norm_eps": c["eps"], "rope_theta": c["theta"], "tie_word_embeddings": c["tied"],
        "max_position_embeddings": 128, "torch_dtype": "float32",
    }


def cases():
    out = []
    # Llama 3.2-like: llama3 rope scaling, untied, explicit head_dim.
    c = dict(BASE, theta=500000.0, rope_scaling=LLAMA3_SCALING)
    cfg = hf_common(c, "llama")
    cfg.update(hidden_act="silu", head_dim=16, rope_scaling=LLAMA3_SCALING,
               attention_bias=False, mlp_bias=False)
    out.append(("llama3", c, cfg, "F32", 1))
    # SmolLM2-like Llama: no scaling, tied, every bias on, two shards.
    c = dict(BASE, tied=True, q_bias=True, o_bias=True, mlp_bias=True, eps=1e-6)
    cfg = hf_common(c, "llama")
    cfg.update(hidden_act="silu", rope_scaling=None, attention_bias=True, mlp_bias=True)
    out.append(("llama_bias_sharded", c, cfg, "F32", 2))
    # Mistral: a sliding window of 3 on every layer, weights in BF16.
    c = dict(BASE, sliding=[True, True], window=3, theta=1e6)
    cfg = hf_common(c, "mistral")
    cfg.update(hidden_act="silu", sliding_window=3, head_dim=16)
    out.append(("mistral_bf16", c, cfg, "BF16", 1))
    # Qwen2: q/k/v bias only; the sliding window is ignored while unused.
    c = dict(BASE, q_bias=True, tied=True, eps=1e-6, theta=1e6)
    cfg = hf_common(c, "qwen2")
    cfg.update(hidden_act="silu", use_sliding_window=False, sliding_window=3,
               max_window_layers=1)
    out.append(("qwen2", c, cfg, "F32", 1))
    # Qwen3: q/k norm, head_dim 32 with hidden 64 (q_proj 64 -> 128).
    c = dict(BASE, head_dim=32, qk_norm=True, tied=True, eps=1e-6, theta=1e6)
    cfg = hf_common(c, "qwen3")
    cfg.update(hidden_act="silu", head_dim=32, attention_bias=False, use_sliding_window=False,
               sliding_window=None)
    out.append(("qwen3", c, cfg, "F32", 1))
    # Gemma 3: layer_types, window 3 on layer 0, two RoPE bases, softcapping.
    c = dict(BASE, gemma=True, qk_norm=True, tied=True, eps=1e-6, theta=1e6,
             local_theta=10000.0, sliding=[True, False], window=3, softcap=30.0,
             query_pre_attn_scalar=24)
    cfg = hf_common(c, "gemma3_text")
    cfg.update(hidden_activation="gelu_pytorch_tanh", head_dim=16, query_pre_attn_scalar=24,
               sliding_window=3, rope_local_base_freq=10000.0, final_logit_softcapping=30.0,
               layer_types=["sliding_attention", "full_attention"], attn_logit_softcapping=None,
               rope_scaling=None)
    out.append(("gemma3", c, cfg, "F32", 1))
    # Gemma 3 with sliding_window_pattern 2 (layer 0 slides) and no softcap, sharded.
    c = dict(BASE, gemma=True, qk_norm=True, tied=True, eps=1e-6, theta=1e6,
             local_theta=10000.0, sliding=[True, False], window=3, query_pre_attn_scalar=32)
    cfg = hf_common(c, "gemma3_text")
    cfg.update(hidden_activation="gelu_pytorch_tanh", head_dim=16, query_pre_attn_scalar=32,
               sliding_window=3, sliding_window_pattern=2, rope_local_base_freq=10000.0,
               final_logit_softcapping=None)
    out.append(("gemma3_pattern_sharded", c, cfg, "F32", 2))
    return out


# ---------------------------------------------------------------------------
# Weights and files

def randomize(model, c, seed, dtype):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or "layernorm" in name:
                base = 0.0 if c["gemma"] else 1.0
                p.copy_(base + 0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                std = 1.0 / math.sqrt(p.shape[1])
                if "q_proj" in name or "k_proj" in name:
                    std *= 2.5  # peaked attention, not a near-uniform one
                p.copy_(std * torch.randn(p.shape, generator=g))
            if dtype == "BF16":  # the file holds bfloat16; both sides run its widened values
                p.copy_(p.to(torch.bfloat16).float())


def tensor_bytes(t, dtype):
    t = t.detach().contiguous()
    if dtype == "BF16":
        bits = t.to(torch.bfloat16).view(torch.int16)
        return struct.pack("<%dh" % bits.numel(), *bits.flatten().tolist())
    return struct.pack("<%df" % t.numel(), *t.flatten().tolist())


def write_safetensors(path, tensors, dtype):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        raw = tensor_bytes(t, dtype)
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def write_checkpoint(folder, model, cfg, dtype, shards):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    state = {k: v for k, v in model.state_dict().items()}
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), state, dtype)
        return
    names = sorted(state)
    weight_map = {}
    for s in range(shards):
        file = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
        part = {n: state[n] for n in names[s::shards]}
        write_safetensors(os.path.join(folder, file), part, dtype)
        weight_map.update({n: file for n in part})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2)


def hexed(t):
    t = t.detach().float().contiguous()
    if t.dim() == 1:
        t = t[None]
    return {"shape": list(t.shape), "hex": struct.pack("<%df" % t.numel(), *t.flatten().tolist()).hex()}


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    results = []
    for index, (name, c, cfg, dtype, shards) in enumerate(cases()):
        torch.manual_seed(index)
        model = Model(c).eval()
        randomize(model, c, 1000 + index, dtype)
        folder = os.path.join(outdir, name)
        write_checkpoint(folder, model, cfg, dtype, shards)
        g = torch.Generator().manual_seed(77 + index)
        for T in (5, 40):
            ids = torch.randint(0, c["vocab"], (T,), generator=g)
            with torch.no_grad():
                logits, records = model(ids)
            stage_names = ["queries", "keys", "values", "queries_rotated", "keys_rotated"]
            if c["qk_norm"]:
                stage_names += ["queries_normed", "keys_normed"]
            results.append({
                "name": name, "folder": folder, "T": T, "ids": ids.tolist(),
                "logits": hexed(logits),
                "weights": [[hexed(r["weights"][h]) for h in range(c["heads"])] for r in records],
                "stages": {s: hexed(records[0][s]) for s in stage_names},
                "sliding": c["sliding"], "window": c["window"],
            })
    with open(os.path.join(outdir, "family_cases.json"), "w") as f:
        json.dump(results, f)
    print("family_oracle: %d runs of %d checkpoints" % (len(results), len(cases())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
