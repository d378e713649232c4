#!/usr/bin/env python3
"""model_fixtures.py: tiny GPT-2 checkpoints and two PyTorch references.

    /usr/bin/python3 model_fixtures.py OUT_DIR [--variants f32,book_pth,...]
    /usr/bin/python3 model_fixtures.py OUT_DIR --list
    /usr/bin/python3 model_fixtures.py OUT_DIR --gpt2-124m

Imported by app/tests/model_oracle_test.py and bench/compare_torch.py; run
as a script it writes the fixtures into OUT_DIR/<name>/ and prints, per
fixture, the arguments `attnscope-cli model trace` takes for it.

Sections:
  1. Configs: Hugging Face GPT-2 keys (tiny: n_embd 32, n_head 4, n_layer 2,
     n_positions 64, the full 50,257-token vocabulary so that GPT-2's
     tokenizer ids are valid) and the book's GPT_CONFIG keys.
  2. Random weights in the Hugging Face layout (Conv1D: x @ W + b, W is
     (in, out)), from a fixed seed.
  3. safetensors written and read by hand (struct + json; Debian has no
     safetensors package), in F32, F16 or BF16.
  4. Reference (b): the Hugging Face layout's forward written directly,
     honouring every config knob, recording every stage attnscope names.
  5. Reference (a): the book's GPTModel (chapter 4) and chapter 5's
     load_weights_into_gpt (split c_attn in three, transpose); its
     MultiHeadAttention keeps its last attention weights.
  6. Fixtures: every checkpoint variant the engine must load, each with the
     float32 weights (upcast for F16/BF16) both references run on.

No arithmetic here depends on the engine: both references are plain
PyTorch, and the checks compare the engine with them.
"""

import argparse
import collections
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from book_classes import MultiHeadAttention as BookMultiHeadAttention  # noqa: E402

# ---------------------------------------------------------------------------
# 1. Configs

# Hugging Face GPT2Config keys that change the math, at tiny width.
TINY = {
    "n_layer": 2,
    "n_head": 4,
    "n_embd": 32,
    "n_positions": 64,
    "vocab_size": 50257,
    "layer_norm_epsilon": 1e-5,
    "activation_function": "gelu_new",
    "n_inner": None,  # null: 4 * n_embd
    "scale_attn_weights": True,
    "scale_attn_by_inverse_layer_idx": False,
    "tie_word_embeddings": True,
}

# GPT-2 small (124M): the benchmark's shape.
GPT2_124M = dict(TINY, n_layer=12, n_head=12, n_embd=768, n_positions=1024)


def hf_config(**overrides):
    """A complete config (TINY + overrides) with every knob set."""
    cfg = dict(TINY)
    cfg.update(overrides)
    return cfg


def n_inner(cfg):
    return cfg["n_inner"] if cfg.get("n_inner") is not None else 4 * cfg["n_embd"]


def config_json(cfg):
    """config.json as Hugging Face writes it (model_type, architectures)."""
    doc = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}
    doc.update(cfg)
    return doc


def book_config(qkv_bias=False, **overrides):
    """The book's GPT_CONFIG_124M keys, at TINY's shape."""
    cfg = {"vocab_size": TINY["vocab_size"], "context_length": TINY["n_positions"],
           "emb_dim": TINY["n_embd"], "n_heads": TINY["n_head"], "n_layers": TINY["n_layer"],
           "drop_rate": 0.1, "qkv_bias": qkv_bias}
    cfg.update(overrides)
    return cfg


def hf_config_of_book(book_cfg):
    """The Hugging Face config whose math is the book's GPTModel: GELU's tanh
    form, LayerNorm eps 1e-5, 4x MLP, scores / sqrt(head_dim), untied head."""
    return hf_config(n_layer=book_cfg["n_layers"], n_head=book_cfg["n_heads"],
                     n_embd=book_cfg["emb_dim"], n_positions=book_cfg["context_length"],
                     vocab_size=book_cfg["vocab_size"], tie_word_embeddings=False)


def book_math_applies(cfg):
    """True when the book's GPTModel computes what `cfg` says."""
    return (cfg["activation_function"] in ("gelu_new", "gelu_pytorch_tanh")
            and n_inner(cfg) == 4 * cfg["n_embd"] and cfg["layer_norm_epsilon"] == 1e-5
            and cfg["scale_attn_weights"] and not cfg["scale_attn_by_inverse_layer_idx"])


# ---------------------------------------------------------------------------
# 2. Random weights, Hugging Face layout (no prefix, no buffers)


def random_hf_weights(cfg, seed, std=None):
    """name -> float32 tensor. Conv1D weights are (in, out). The spreads
    are chosen so that attention is far from uniform at tiny width (scores
    of order 1) and LayerNorm's gain and bias matter; `std` (e.g. 0.02, as
    GPT-2's init) replaces every spread for the benchmark's model."""
    g = torch.Generator().manual_seed(seed)
    E, V, P, I = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"], n_inner(cfg)

    def normal(shape, s):
        return torch.randn(*shape, generator=g) * (std if std is not None else s)

    def gain(n):
        return 1.0 + normal((n,), 0.1)

    w = collections.OrderedDict()
    w["wte.weight"] = normal((V, E), 0.1)   # (vocab, d)
    w["wpe.weight"] = normal((P, E), 0.1)   # (positions, d)
    for l in range(cfg["n_layer"]):
        p = f"h.{l}."
        w[p + "ln_1.weight"] = gain(E)
        w[p + "ln_1.bias"] = normal((E,), 0.1)
        w[p + "attn.c_attn.weight"] = normal((E, 3 * E), 0.2)  # (d, 3d): Q | K | V
        w[p + "attn.c_attn.bias"] = normal((3 * E,), 0.05)
        w[p + "attn.c_proj.weight"] = normal((E, E), 0.1)
        w[p + "attn.c_proj.bias"] = normal((E,), 0.02)
        w[p + "ln_2.weight"] = gain(E)
        w[p + "ln_2.bias"] = normal((E,), 0.1)
        w[p + "mlp.c_fc.weight"] = normal((E, I), 0.15)       # (d, n_inner)
        w[p + "mlp.c_fc.bias"] = normal((I,), 0.05)
        w[p + "mlp.c_proj.weight"] = normal((I, E), 0.1)      # (n_inner, d)
        w[p + "mlp.c_proj.bias"] = normal((E,), 0.02)
    w["ln_f.weight"] = gain(E)
    w["ln_f.bias"] = normal((E,), 0.1)
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = normal((V, E), 0.1)  # nn.Linear: (vocab, d)
    return w


def mask_buffers(cfg, dtype):
    """h.N.attn.bias (1 x 1 x P x P, lower triangle of ones) and
    h.N.attn.masked_bias (a scalar, -1e4), as older transformers save them."""
    P = cfg["n_positions"]
    out = collections.OrderedDict()
    for l in range(cfg["n_layer"]):
        out[f"h.{l}.attn.bias"] = torch.tril(torch.ones(P, P)).view(1, 1, P, P).to(dtype)
        out[f"h.{l}.attn.masked_bias"] = torch.tensor(-1e4).to(dtype)
    return out


# ---------------------------------------------------------------------------
# 3. safetensors by hand

TORCH_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def upcast(t, dtype):
    """What a float32 tensor becomes after a round trip through `dtype`'s file
    (round to nearest even, then exact widening)."""
    return t.to(TORCH_DTYPES[dtype]).float()


def _raw(t, dtype):
    t = t.to(TORCH_DTYPES[dtype]).contiguous()
    if dtype == "BF16":  # numpy has no bfloat16: write its bits
        t = t.view(torch.int16)
    return t.numpy()


def write_safetensors(path, tensors, dtype="F32"):
    """Writes name -> float tensor in `dtype` (F32, F16, BF16), header padded
    to 8 bytes as the reference writer does. Streams tensor by tensor, so a
    500 MB file costs one tensor's copy at a time."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, t in tensors.items():
        size = t.numel() * (4 if dtype == "F32" else 2)
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for t in tensors.values():
            f.write(_raw(t, dtype).data)


def read_safetensors(path):
    """name -> float32 tensor (F16/BF16 widened exactly) from a .safetensors file."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + n])
    base, out = 8 + n, collections.OrderedDict()
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = blob[base + begin:base + end]
        if info["dtype"] == "F32":
            arr = np.frombuffer(raw, dtype="<f4")
        elif info["dtype"] == "F16":
            arr = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        elif info["dtype"] == "BF16":
            arr = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            continue  # e.g. BOOL / U8 mask buffers: not weights
        out[name] = torch.from_numpy(arr.copy()).reshape(info["shape"])
    return out


def hf_weights_from_files(names_to_tensors):
    """Drops the `transformer.` prefix and the mask buffers: the weights
    reference (b) reads."""
    out = collections.OrderedDict()
    for name, t in names_to_tensors.items():
        if name.startswith("transformer."):
            name = name[len("transformer."):]
        if name.endswith(".attn.bias") or name.endswith(".attn.masked_bias"):
            continue
        out[name] = t
    return out


# ---------------------------------------------------------------------------
# 4. Reference (b): the Hugging Face layout's forward, every stage recorded


def activation(name, x):
    if name == "gelu_new":  # transformers' NewGELUActivation, as written there
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    if name == "gelu_pytorch_tanh":
        return F.gelu(x, approximate="tanh")
    if name == "gelu":
        return F.gelu(x)
    if name == "relu":
        return F.relu(x)
    raise ValueError(f"unknown activation_function {name!r}")


def hf_forward(w, cfg, ids, record="all", all_logits=False):
    """One sequence through GPT-2 (eval: no dropout).

    w: Hugging Face names (no prefix) -> float32 tensors; Conv1D y = x @ W + b.
    record: "all" keeps every stage attnscope names, "attention" only each
    head's weights (and logits), None nothing but the logits.
    Returns (stages, logits): stages maps (id, layer, head) -> 2-D tensor;
    logits is (1, V) for the last position, (T, V) with all_logits.
    """
    E, H = cfg["n_embd"], cfg["n_head"]
    hd, T, eps = E // H, len(ids), cfg["layer_norm_epsilon"]
    stages = {}
    keep_all = record == "all"

    def rec(sid, layer, head, t):
        if keep_all:
            stages[(sid, layer, head)] = t

    idx = torch.tensor(ids, dtype=torch.long)
    x = w["wte.weight"][idx] + w["wpe.weight"][:T]                 # (T, d)
    rec("embeddings", -1, -1, x)
    hidden = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # key j > query i
    for l in range(cfg["n_layer"]):
        p = f"h.{l}."
        a = F.layer_norm(x, (E,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)  # (T, d)
        rec("ln_1", l, -1, a)
        qkv = torch.addmm(w[p + "attn.c_attn.bias"], a, w[p + "attn.c_attn.weight"])  # (T, 3d)
        q, k, v = (t.view(T, H, hd).transpose(0, 1) for t in qkv.split(E, dim=1))  # (H, T, hd)
        scores = q @ k.transpose(-1, -2)                                  # (H, T, T)
        masked = scores.masked_fill(hidden, float("-inf"))
        scaled = masked
        if cfg["scale_attn_weights"]:
            scaled = scaled / math.sqrt(hd)
        if cfg["scale_attn_by_inverse_layer_idx"]:
            scaled = scaled / float(l + 1)
        weights = torch.softmax(scaled, dim=-1)                           # (H, T, T)
        ctx = weights @ v                                                 # (H, T, hd)
        if record is not None:
            for h in range(H):
                stages[("weights", l, h)] = weights[h]
                if keep_all:
                    for sid, t in (("queries", q), ("keys", k), ("values", v), ("scores", scores),
                                   ("masked_scores", masked), ("scaled_scores", scaled),
                                   ("context", ctx)):
                        stages[(sid, l, h)] = t[h]
                    stages[("mask", l, h)] = hidden.float()
        concat = ctx.transpose(0, 1).reshape(T, E)                        # (T, d)
        rec("concat", l, -1, concat)
        out = torch.addmm(w[p + "attn.c_proj.bias"], concat, w[p + "attn.c_proj.weight"])
        rec("output", l, -1, out)
        x = x + out                                                       # residual
        rec("attn_output", l, -1, x)
        m = F.layer_norm(x, (E,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        rec("ln_2", l, -1, m)
        fc = torch.addmm(w[p + "mlp.c_fc.bias"], m, w[p + "mlp.c_fc.weight"])
        rec("mlp_hidden", l, -1, fc)
        m = activation(cfg["activation_function"], fc)
        rec("mlp_activation", l, -1, m)
        mlp = torch.addmm(w[p + "mlp.c_proj.bias"], m, w[p + "mlp.c_proj.weight"])
        rec("mlp_output", l, -1, mlp)
        x = x + mlp
        rec("block_output", l, -1, x)
    x = F.layer_norm(x, (E,), w["ln_f.weight"], w["ln_f.bias"], eps)
    rec("ln_f", -1, -1, x)
    head = w.get("lm_head.weight", w["wte.weight"])                      # (V, d)
    logits = (x if all_logits else x[-1:]) @ head.T
    if record is not None:
        stages[("logits", -1, -1)] = logits[-1:]
    return stages, logits


def hf_generate(w, cfg, ids, new_tokens):
    """Greedy continuation, as the book's generate_text_simple: the last
    n_positions ids, the last position's logits, argmax."""
    ids = list(ids)
    for _ in range(new_tokens):
        _, logits = hf_forward(w, cfg, ids[-cfg["n_positions"]:], record=None)
        ids.append(int(torch.argmax(logits[-1])))
    return ids


# ---------------------------------------------------------------------------
# 5. Reference (a): the book's GPTModel (chapter 4), as printed, except that
#    MultiHeadAttention keeps `last_weights` (its attn_weights after dropout,
#    which eval() makes the identity).


class MultiHeadAttention(BookMultiHeadAttention):
    """The book's class (book_classes.py), keeping its last attention
    weights: a hook on its dropout, which eval() makes the identity."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.last_weights = None
        self.dropout.register_forward_hook(self._keep_weights)

    def _keep_weights(self, module, inputs, output):
        self.last_weights = output.detach()


class LayerNorm(nn.Module):
    def __init__(self, emb_dim):
        super().__init__()
        self.eps = 1e-5
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        norm_x = (x - mean) / torch.sqrt(var + self.eps)
        return self.scale * norm_x + self.shift


class GELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(
            torch.sqrt(torch.tensor(2.0 / torch.pi)) * (x + 0.044715 * torch.pow(x, 3))))


class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(cfg["emb_dim"], 4 * cfg["emb_dim"]),
            GELU(),
            nn.Linear(4 * cfg["emb_dim"], cfg["emb_dim"]),
        )

    def forward(self, x):
        return self.layers(x)


class TransformerBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.att = MultiHeadAttention(
            d_in=cfg["emb_dim"], d_out=cfg["emb_dim"], context_length=cfg["context_length"],
            num_heads=cfg["n_heads"], dropout=cfg["drop_rate"], qkv_bias=cfg["qkv_bias"])
        self.ff = FeedForward(cfg)
        self.norm1 = LayerNorm(cfg["emb_dim"])
        self.norm2 = LayerNorm(cfg["emb_dim"])
        self.drop_shortcut = nn.Dropout(cfg["drop_rate"])

    def forward(self, x):
        shortcut = x
        x = self.norm1(x)
        x = self.att(x)
        x = self.drop_shortcut(x)
        x = x + shortcut
        shortcut = x
        x = self.norm2(x)
        x = self.ff(x)
        x = self.drop_shortcut(x)
        x = x + shortcut
        return x


class GPTModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
        self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        self.drop_emb = nn.Dropout(cfg["drop_rate"])
        self.trf_blocks = nn.Sequential(*[TransformerBlock(cfg) for _ in range(cfg["n_layers"])])
        self.final_norm = LayerNorm(cfg["emb_dim"])
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)

    def forward(self, in_idx):
        batch_size, seq_len = in_idx.shape
        tok_embeds = self.tok_emb(in_idx)
        pos_embeds = self.pos_emb(torch.arange(seq_len, device=in_idx.device))
        x = tok_embeds + pos_embeds
        x = self.drop_emb(x)
        x = self.trf_blocks(x)
        x = self.final_norm(x)
        logits = self.out_head(x)
        return logits


def generate_text_simple(model, idx, max_new_tokens, context_size):
    """Chapter 4's greedy loop."""
    for _ in range(max_new_tokens):
        idx_cond = idx[:, -context_size:]
        with torch.no_grad():
            logits = model(idx_cond)
        logits = logits[:, -1, :]
        probas = torch.softmax(logits, dim=-1)
        idx_next = torch.argmax(probas, dim=-1, keepdim=True)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


def assign(left, right):
    if left.shape != right.shape:
        raise ValueError(f"Shape mismatch. Left: {left.shape}, Right: {right.shape}")
    return torch.nn.Parameter(right.clone().detach())


def load_weights_into_gpt(gpt, w):
    """Chapter 5's mapping, from Hugging Face names (torch tensors) instead of
    the TensorFlow checkpoint's params dict: the same split and transposes."""
    gpt.pos_emb.weight = assign(gpt.pos_emb.weight, w["wpe.weight"])
    gpt.tok_emb.weight = assign(gpt.tok_emb.weight, w["wte.weight"])
    for b in range(len(gpt.trf_blocks)):
        p, blk = f"h.{b}.", gpt.trf_blocks[b]
        q_w, k_w, v_w = torch.split(w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.weight"].shape[1] // 3, dim=-1)
        blk.att.W_query.weight = assign(blk.att.W_query.weight, q_w.T)
        blk.att.W_key.weight = assign(blk.att.W_key.weight, k_w.T)
        blk.att.W_value.weight = assign(blk.att.W_value.weight, v_w.T)
        q_b, k_b, v_b = torch.split(w[p + "attn.c_attn.bias"], w[p + "attn.c_attn.bias"].shape[0] // 3, dim=-1)
        blk.att.W_query.bias = assign(blk.att.W_query.bias, q_b)
        blk.att.W_key.bias = assign(blk.att.W_key.bias, k_b)
        blk.att.W_value.bias = assign(blk.att.W_value.bias, v_b)
        blk.att.out_proj.weight = assign(blk.att.out_proj.weight, w[p + "attn.c_proj.weight"].T)
        blk.att.out_proj.bias = assign(blk.att.out_proj.bias, w[p + "attn.c_proj.bias"])
        blk.ff.layers[0].weight = assign(blk.ff.layers[0].weight, w[p + "mlp.c_fc.weight"].T)
        blk.ff.layers[0].bias = assign(blk.ff.layers[0].bias, w[p + "mlp.c_fc.bias"])
        blk.ff.layers[2].weight = assign(blk.ff.layers[2].weight, w[p + "mlp.c_proj.weight"].T)
        blk.ff.layers[2].bias = assign(blk.ff.layers[2].bias, w[p + "mlp.c_proj.bias"])
        blk.norm1.scale = assign(blk.norm1.scale, w[p + "ln_1.weight"])
        blk.norm1.shift = assign(blk.norm1.shift, w[p + "ln_1.bias"])
        blk.norm2.scale = assign(blk.norm2.scale, w[p + "ln_2.weight"])
        blk.norm2.shift = assign(blk.norm2.shift, w[p + "ln_2.bias"])
    gpt.final_norm.scale = assign(gpt.final_norm.scale, w["ln_f.weight"])
    gpt.final_norm.shift = assign(gpt.final_norm.shift, w["ln_f.bias"])
    gpt.out_head.weight = assign(gpt.out_head.weight, w.get("lm_head.weight", w["wte.weight"]))


def book_model_from_hf(w, cfg):
    """Reference (a) on Hugging Face weights: chapter 5's NEW_CONFIG (qkv_bias
    True, the checkpoint's context length), eval mode."""
    book_cfg = {"vocab_size": cfg["vocab_size"], "context_length": cfg["n_positions"],
                "emb_dim": cfg["n_embd"], "n_heads": cfg["n_head"], "n_layers": cfg["n_layer"],
                "drop_rate": 0.0, "qkv_bias": True}
    gpt = GPTModel(book_cfg)
    load_weights_into_gpt(gpt, w)
    return gpt.eval()


def book_forward(gpt, ids):
    """(stages, logits) like hf_forward(record="attention"): each head's
    weights and the last position's logits (1, V)."""
    with torch.no_grad():
        logits = gpt(torch.tensor([ids], dtype=torch.long))[0]
    stages = {}
    for l, blk in enumerate(gpt.trf_blocks):
        for h in range(blk.att.num_heads):
            stages[("weights", l, h)] = blk.att.last_weights[0, h]
    stages[("logits", -1, -1)] = logits[-1:]
    return stages, logits[-1:]


def hf_weights_of_book(state_dict, book_cfg):
    """The inverse of load_weights_into_gpt: a book GPTModel state_dict in
    Hugging Face names (Conv1D (in, out) weights; zero Q/K/V biases without
    qkv_bias; lm_head = out_head)."""
    s, E = state_dict, book_cfg["emb_dim"]
    w = collections.OrderedDict()
    w["wte.weight"] = s["tok_emb.weight"]
    w["wpe.weight"] = s["pos_emb.weight"]
    for b in range(book_cfg["n_layers"]):
        p, q = f"h.{b}.", f"trf_blocks.{b}."
        att = q + "att."
        w[p + "ln_1.weight"] = s[q + "norm1.scale"]
        w[p + "ln_1.bias"] = s[q + "norm1.shift"]
        w[p + "attn.c_attn.weight"] = torch.cat(
            [s[att + n + ".weight"].T for n in ("W_query", "W_key", "W_value")], dim=1)
        w[p + "attn.c_attn.bias"] = torch.cat(
            [s.get(att + n + ".bias", torch.zeros(E)) for n in ("W_query", "W_key", "W_value")])
        w[p + "attn.c_proj.weight"] = s[att + "out_proj.weight"].T
        w[p + "attn.c_proj.bias"] = s[att + "out_proj.bias"]
        w[p + "ln_2.weight"] = s[q + "norm2.scale"]
        w[p + "ln_2.bias"] = s[q + "norm2.shift"]
        w[p + "mlp.c_fc.weight"] = s[q + "ff.layers.0.weight"].T
        w[p + "mlp.c_fc.bias"] = s[q + "ff.layers.0.bias"]
        w[p + "mlp.c_proj.weight"] = s[q + "ff.layers.2.weight"].T
        w[p + "mlp.c_proj.bias"] = s[q + "ff.layers.2.bias"]
    w["ln_f.weight"] = s["final_norm.scale"]
    w["ln_f.bias"] = s["final_norm.shift"]
    w["lm_head.weight"] = s["out_head.weight"]
    return collections.OrderedDict((k, v.detach().float().contiguous()) for k, v in w.items())


# ---------------------------------------------------------------------------
# 6. Fixtures


class Fixture:
    """One checkpoint on disk and what the references need.

    name: short id; args: what follows `model trace` (the path, then e.g.
    --config FILE); cfg: Hugging Face config of the math; weights: float32
    Hugging Face-layout weights exactly as the file holds them (upcast);
    book: reference (a), a GPTModel in eval mode, or None where the book's
    math differs from cfg's; limit_word: the config key an over-long input's
    error should name."""

    def __init__(self, name, args, cfg, weights, book, limit_word="n_positions"):
        self.name, self.args, self.cfg, self.weights, self.book = name, args, cfg, weights, book
        self.limit_word = limit_word


# name -> (file dtype, keys prefixed with "transformer.", mask buffers,
#          path is the .safetensors file instead of the folder, config overrides)
HF_VARIANTS = collections.OrderedDict([
    ("f32", ("F32", False, False, False, {})),
    ("f32_file", ("F32", False, False, True, {})),
    ("f16", ("F16", False, False, False, {})),
    ("bf16", ("BF16", False, False, False, {})),
    ("prefixed", ("F32", True, False, False, {})),
    ("buffers", ("F32", False, True, False, {})),
    ("untied", ("F32", False, False, False, {"tie_word_embeddings": False})),
    ("mixed", ("BF16", True, True, True, {"tie_word_embeddings": False})),
    ("gelu_pytorch_tanh", ("F32", False, False, False, {"activation_function": "gelu_pytorch_tanh"})),
    ("gelu", ("F32", False, False, False, {"activation_function": "gelu"})),
    ("relu", ("F32", False, False, False, {"activation_function": "relu"})),
    ("n_inner", ("F32", False, False, False, {"n_inner": 48})),
    ("layer_norm_epsilon", ("F32", False, False, False, {"layer_norm_epsilon": 1e-2})),
    ("no_scale", ("F32", False, False, False, {"scale_attn_weights": False})),
    ("inverse_layer_idx", ("F32", False, False, False,
                           {"scale_attn_by_inverse_layer_idx": True, "n_layer": 3})),
])

# name -> (qkv_bias, saved as a training checkpoint after one AdamW step,
#          where the config goes: "flag" (--config), "gpt_config.json", "config.json",
#          the file: torch.save's .pth, or the state_dict (mask buffers too) as .safetensors)
BOOK_VARIANTS = collections.OrderedDict([
    ("book_pth", (False, False, "flag", "pth")),
    ("book_pth_qkv_bias", (True, False, "gpt_config.json", "pth")),
    ("book_checkpoint", (False, True, "config.json", "pth")),
    ("book_safetensors", (True, False, "flag", "safetensors")),
])

ALL_VARIANTS = list(HF_VARIANTS) + list(BOOK_VARIANTS)


def write_hf_fixture(root, name, seed=1234):
    dtype, prefixed, buffers, as_file, overrides = HF_VARIANTS[name]
    cfg = hf_config(**overrides)
    folder = os.path.join(root, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config_json(cfg), f, indent=2)
    w = random_hf_weights(cfg, seed)
    tensors = collections.OrderedDict()
    for k, t in w.items():
        tensors[k if (k == "lm_head.weight" or not prefixed) else "transformer." + k] = t
    if buffers:
        for k, t in mask_buffers(cfg, torch.float32).items():
            tensors[("transformer." if prefixed else "") + k] = t
    path = os.path.join(folder, "model.safetensors")
    write_safetensors(path, tensors, dtype)
    weights = collections.OrderedDict((k, upcast(t, dtype)) for k, t in w.items())
    book = book_model_from_hf(weights, cfg) if book_math_applies(cfg) else None
    return Fixture(name, [path if as_file else folder], cfg, weights, book)


def random_book_model(book_cfg, seed):
    """GPTModel as the book builds it (torch.manual_seed, then the
    constructor's init), with LayerNorm scale/shift moved off 1/0 so that a
    loader that ignored them would show."""
    torch.manual_seed(seed)
    gpt = GPTModel(book_cfg)
    with torch.no_grad():
        for name, p in gpt.named_parameters():
            if name.endswith(".scale"):
                p.add_(torch.randn(p.shape) * 0.1)
            elif name.endswith(".shift"):
                p.copy_(torch.randn(p.shape) * 0.1)
    return gpt


def one_adamw_step(gpt, book_cfg, seed):
    """Chapter 5's optimizer (AdamW, lr 4e-4, weight decay 0.1), one step on
    a random batch in training mode (dropout on); returns the optimizer."""
    torch.manual_seed(seed + 1)
    gpt.train()
    opt = torch.optim.AdamW(gpt.parameters(), lr=0.0004, weight_decay=0.1)
    batch = torch.randint(0, book_cfg["vocab_size"], (2, 9))
    opt.zero_grad()
    logits = gpt(batch[:, :-1])
    loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
    loss.backward()
    opt.step()
    return opt


def write_book_fixture(root, name, seed=4321):
    qkv_bias, checkpoint, config_place, kind = BOOK_VARIANTS[name]
    book_cfg = book_config(qkv_bias=qkv_bias)
    folder = os.path.join(root, name)
    os.makedirs(folder, exist_ok=True)
    gpt = random_book_model(book_cfg, seed)
    path = os.path.join(folder, "model." + kind)
    if kind == "safetensors":
        write_safetensors(path, gpt.state_dict(), "F32")
    elif checkpoint:
        opt = one_adamw_step(gpt, book_cfg, seed)
        torch.save({"model_state_dict": gpt.state_dict(), "optimizer_state_dict": opt.state_dict()}, path)
    else:
        torch.save(gpt.state_dict(), path)
    args = [path]
    config_path = os.path.join(folder, "gpt_config.json" if config_place == "flag" else config_place)
    if config_place == "flag":
        config_path = os.path.join(root, name + "_GPT_CONFIG.json")
        args += ["--config", config_path]
    with open(config_path, "w") as f:
        json.dump(book_cfg, f, indent=2)
    gpt.eval()
    cfg = hf_config_of_book(book_cfg)
    weights = hf_weights_of_book(gpt.state_dict(), book_cfg)
    return Fixture(name, args, cfg, weights, gpt, limit_word="context_length")


def write_fixture(root, name):
    if name in HF_VARIANTS:
        return write_hf_fixture(root, name)
    if name in BOOK_VARIANTS:
        return write_book_fixture(root, name)
    raise ValueError(f"unknown fixture {name!r}; known: {', '.join(ALL_VARIANTS)}")


def write_gpt2_124m(folder, seed=124, cfg=None):
    """A random GPT-2 small (124M) folder in F32 (~500 MB): config.json and
    model.safetensors, weights drawn at GPT-2's init spread (0.02). Returns
    (cfg, weights)."""
    cfg = cfg or dict(GPT2_124M)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config_json(cfg), f, indent=2)
    w = random_hf_weights(cfg, seed, std=0.02)
    write_safetensors(os.path.join(folder, "model.safetensors"), w, "F32")
    return cfg, w


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", help="folder to write the fixtures into")
    ap.add_argument("--variants", default=",".join(ALL_VARIANTS),
                    help="comma-separated fixture names (default: all)")
    ap.add_argument("--list", action="store_true", help="print the fixture names and stop")
    ap.add_argument("--gpt2-124m", action="store_true",
                    help="write a random GPT-2 small (124M, F32) folder instead")
    args = ap.parse_args()
    if args.list:
        print("\n".join(ALL_VARIANTS))
        return 0
    if args.gpt2_124m:
        write_gpt2_124m(args.out)
        print(args.out)
        return 0
    os.makedirs(args.out, exist_ok=True)
    for name in args.variants.split(","):
        fx = write_fixture(args.out, name)
        print(f"{name}: {' '.join(fx.args)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
