#!/usr/bin/env python3
"""Writes what the book's bonus attention classes compute, with the live
PyTorch, for test_modern_attention.cpp.

Usage: modern_oracle.py OUTDIR        (writes OUTDIR/modern_cases.json)

The classes below are written here in our own words, following the book's
bonus code step for step (the same modules built in the same order, the same
tensor operations): GroupedQueryAttention (the GQA bonus), chapter 3's
MultiHeadAttention with the KV cache (gpt_with_kv_cache.py, its registered
mask buffer sliced at ptr_current_pos), the sliding-window
MultiHeadAttentionWithSWA (the SWA bonus), MultiHeadLatentAttention (the
MLA bonus), with RoPE as the book's llama3.py / qwen3.py apply it, and a cross-
attention built in chapter 3's order. Each forward records its intermediates
into a dict as it computes them. For every case:

    torch.manual_seed(seed); m = Class(...); m.train() or m.eval(); m(x)

then a fresh module of the same seed, in eval mode, is fed x one token at a
time with use_cache=True, recording each step's output and cache.

Floats are written as the hex of their little-endian float32 bytes, so the
C++ test reads the exact bits. Without PyTorch it writes nothing and exits 0:
the tests that need the file then skip.
"""
import json
import os
import random
import sys

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("modern_oracle: PyTorch is not installed; the ModernOracle tests skip", file=sys.stderr)
    sys.exit(0)


# ---------------------------------------------------------------------------
# RoPE (llama3.py / qwen3.py)

def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, dtype=torch.float32):
    assert head_dim % 2 == 0
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2, dtype=dtype)[: (head_dim // 2)].float() / head_dim))
    positions = torch.arange(context_length, dtype=dtype)
    angles = positions.unsqueeze(1) * inv_freq.unsqueeze(0)
    angles = torch.cat([angles, angles], dim=1)
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x, cos, sin, offset=0):
    _, _, seq_len, head_dim = x.shape
    x1 = x[..., : head_dim // 2]
    x2 = x[..., head_dim // 2:]
    cos = cos[offset:offset + seq_len, :].unsqueeze(0).unsqueeze(0)
    sin = sin[offset:offset + seq_len, :].unsqueeze(0).unsqueeze(0)
    rotated = torch.cat((-x2, x1), dim=-1)
    return ((x * cos) + (rotated * sin)).to(dtype=x.dtype)


# ---------------------------------------------------------------------------
# Recording helpers

def put(rec, name, t):
    if rec is not None:
        rec[name] = t.detach().clone()


def put_heads(rec, name, t):
    """t: (1, heads, rows, cols) -> rec[name/h]."""
    if rec is not None:
        for h in range(t.shape[1]):
            rec[f"{name}/{h}"] = t[0, h].detach().clone()


def recorded_dropout(module, w, rec):
    """module.dropout(w), and the noise it multiplied by (drawn again from the
    same RNG state, as at::native::dropout draws it: bernoulli_(1-p) / (1-p))."""
    p = module.dropout.p
    if module.training and 0 < p < 1:
        state = torch.get_rng_state()
        out = module.dropout(w)
        after = torch.get_rng_state()
        torch.set_rng_state(state)
        noise = torch.empty_like(w).bernoulli_(1 - p).div_(1 - p)
        assert torch.equal(torch.get_rng_state(), after)
        assert torch.equal(w * noise, out)
    else:
        out = module.dropout(w)
        noise = torch.zeros_like(w) if (module.training and p == 1) else torch.ones_like(w)
    put_heads(rec, "dropout_mask", noise)
    put_heads(rec, "dropped", out)
    return out


def finish(module, queries, keys, values, mask_bool, rec):
    """Scores, masked_fill, scaled softmax, dropout, context, out_proj: the
    tail every class shares. queries (b, H, T, hd); keys/values (b, H, S, hd)."""
    b, _, num_tokens, _ = queries.shape
    attn_scores = queries @ keys.transpose(2, 3)
    put_heads(rec, "scores", attn_scores)
    if mask_bool is not None:
        put_heads(rec, "mask", mask_bool.float().expand_as(attn_scores))
        attn_scores = attn_scores.masked_fill(mask_bool, -torch.inf)
        put_heads(rec, "masked", attn_scores)
    scaled = attn_scores / keys.shape[-1]**0.5
    put_heads(rec, "scaled", scaled)
    attn_weights = torch.softmax(scaled, dim=-1)
    put_heads(rec, "weights", attn_weights)
    attn_weights = recorded_dropout(module, attn_weights, rec)
    context = attn_weights @ values
    put_heads(rec, "context", context)
    context = context.transpose(1, 2).contiguous().view(b, num_tokens, module.d_out)
    put(rec, "concat", context[0])
    out = module.out_proj(context)
    put(rec, "output", out[0])
    return out


# ---------------------------------------------------------------------------
# The classes

class GroupedQueryAttention(nn.Module):  # the GQA bonus, RoPE as llama3.py
    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False,
                 rope=None):
        super().__init__()
        assert d_out % num_heads == 0 and num_heads % num_kv_groups == 0
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.num_kv_groups = num_kv_groups
        self.group_size = num_heads // num_kv_groups
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = nn.Dropout(dropout)
        self.rope = rope  # (cos, sin) or None
        self.cache_k = self.cache_v = None
        self.ptr_current_pos = 0

    def forward(self, x, use_cache=False, rec=None):
        b, num_tokens, _ = x.shape
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        put(rec, "queries_all", queries[0]); put(rec, "keys_all", keys[0]); put(rec, "values_all", values[0])
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        keys_new = keys.view(b, num_tokens, self.num_kv_groups, self.head_dim).transpose(1, 2)
        values_new = values.view(b, num_tokens, self.num_kv_groups, self.head_dim).transpose(1, 2)
        put_heads(rec, "q", queries); put_heads(rec, "k", keys_new); put_heads(rec, "v", values_new)
        start = self.ptr_current_pos if use_cache else 0
        if self.rope is not None:
            queries = apply_rope(queries, *self.rope, offset=start)
            keys_new = apply_rope(keys_new, *self.rope, offset=start)
            put_heads(rec, "q_rot", queries); put_heads(rec, "k_rot", keys_new)
        if use_cache:
            if self.cache_k is None:
                self.cache_k, self.cache_v = keys_new, values_new
            else:
                self.cache_k = torch.cat([self.cache_k, keys_new], dim=2)
                self.cache_v = torch.cat([self.cache_v, values_new], dim=2)
            keys_base, values_base = self.cache_k, self.cache_v
        else:
            keys_base, values_base = keys_new, values_new
        keys = keys_base.repeat_interleave(self.group_size, dim=1)
        values = values_base.repeat_interleave(self.group_size, dim=1)
        num_tokens_K = keys.shape[-2]
        q_positions = torch.arange(start, start + num_tokens, dtype=torch.long)
        self.ptr_current_pos = start + num_tokens if use_cache else 0
        k_positions = torch.arange(num_tokens_K, dtype=torch.long)
        mask = q_positions.unsqueeze(-1) < k_positions.unsqueeze(0)
        return finish(self, queries, keys, values, mask, rec)


class MultiHeadAttentionWithSWA(nn.Module):  # the SWA bonus
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None,
                 rope=None):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.sliding_window_size = sliding_window_size
        self.rope = rope
        self.cache_k = self.cache_v = None
        self.ptr_current_pos = 0

    def forward(self, x, use_cache=False, rec=None):
        b, num_tokens, _ = x.shape
        keys_new = self.W_key(x)
        values_new = self.W_value(x)
        queries = self.W_query(x)
        put(rec, "queries_all", queries[0]); put(rec, "keys_all", keys_new[0]); put(rec, "values_all", values_new[0])
        keys_new = keys_new.view(b, num_tokens, self.num_heads, self.head_dim)
        values_new = values_new.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
        put_heads(rec, "q", queries.transpose(1, 2)); put_heads(rec, "k", keys_new.transpose(1, 2))
        put_heads(rec, "v", values_new.transpose(1, 2))
        if self.rope is not None:  # rotate (b, h, T, hd) views at absolute positions
            start = self.ptr_current_pos if use_cache else 0
            queries = apply_rope(queries.transpose(1, 2), *self.rope, offset=start).transpose(1, 2)
            keys_new = apply_rope(keys_new.transpose(1, 2), *self.rope, offset=start).transpose(1, 2)
            put_heads(rec, "q_rot", queries.transpose(1, 2)); put_heads(rec, "k_rot", keys_new.transpose(1, 2))
        if use_cache:
            old_len = 0 if self.cache_k is None else self.cache_k.size(1)
            if self.cache_k is None:
                combined_k, combined_v = keys_new, values_new
            else:
                combined_k = torch.cat([self.cache_k, keys_new], dim=1)
                combined_v = torch.cat([self.cache_v, values_new], dim=1)
            keys, values = combined_k, combined_v
            if self.sliding_window_size is not None:
                attn_keep = min(keys.size(1), self.sliding_window_size + num_tokens - 1)
                keys, values = keys[:, -attn_keep:], values[:, -attn_keep:]
                cache_keep = min(combined_k.size(1), self.sliding_window_size)
                self.cache_k, self.cache_v = combined_k[:, -cache_keep:], combined_v[:, -cache_keep:]
            else:
                self.cache_k, self.cache_v = combined_k, combined_v
            dropped = combined_k.size(1) - keys.size(1)
            k_start = (self.ptr_current_pos - old_len) + dropped
            q_start = self.ptr_current_pos
        else:
            keys, values = keys_new, values_new
            q_start = k_start = 0
        keys, queries, values = keys.transpose(1, 2), queries.transpose(1, 2), values.transpose(1, 2)
        num_tokens_K = keys.shape[-2]
        q_positions = torch.arange(q_start, q_start + num_tokens, dtype=torch.long)
        k_positions = torch.arange(k_start, k_start + num_tokens_K, dtype=torch.long)
        W = num_tokens_K + 1 if self.sliding_window_size is None else int(self.sliding_window_size)
        diff = q_positions.unsqueeze(-1) - k_positions.unsqueeze(0)
        mask_bool = (diff < 0) | (diff >= W)
        self.ptr_current_pos = self.ptr_current_pos + num_tokens if use_cache else 0
        return finish(self, queries, keys, values, mask_bool, rec)


class MultiHeadAttention(nn.Module):  # gpt_with_kv_cache.py
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False, rope=None):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1),
                             persistent=False)
        self.rope = rope
        self.cache_k = self.cache_v = None
        self.ptr_current_pos = 0

    def forward(self, x, use_cache=False, rec=None):
        b, num_tokens, _ = x.shape
        keys_new = self.W_key(x)
        values_new = self.W_value(x)
        queries = self.W_query(x)
        put(rec, "queries_all", queries[0]); put(rec, "keys_all", keys_new[0]); put(rec, "values_all", values_new[0])
        keys_new = keys_new.view(b, num_tokens, self.num_heads, self.head_dim)
        values_new = values_new.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
        put_heads(rec, "q", queries.transpose(1, 2)); put_heads(rec, "k", keys_new.transpose(1, 2))
        put_heads(rec, "v", values_new.transpose(1, 2))
        if self.rope is not None:
            start = self.ptr_current_pos if use_cache else 0
            queries = apply_rope(queries.transpose(1, 2), *self.rope, offset=start).transpose(1, 2)
            keys_new = apply_rope(keys_new.transpose(1, 2), *self.rope, offset=start).transpose(1, 2)
            put_heads(rec, "q_rot", queries.transpose(1, 2)); put_heads(rec, "k_rot", keys_new.transpose(1, 2))
        if use_cache:
            if self.cache_k is None:
                self.cache_k, self.cache_v = keys_new, values_new
            else:
                self.cache_k = torch.cat([self.cache_k, keys_new], dim=1)
                self.cache_v = torch.cat([self.cache_v, values_new], dim=1)
            keys, values = self.cache_k, self.cache_v
        else:
            keys, values = keys_new, values_new
        keys, queries, values = keys.transpose(1, 2), queries.transpose(1, 2), values.transpose(1, 2)
        num_tokens_K = keys.shape[-2]
        if use_cache:
            mask_bool = self.mask.bool()[self.ptr_current_pos:self.ptr_current_pos + num_tokens, :num_tokens_K]
            self.ptr_current_pos += num_tokens
        else:
            mask_bool = self.mask.bool()[:num_tokens, :num_tokens_K]
        return finish(self, queries, keys, values, mask_bool, rec)


class MultiHeadLatentAttention(nn.Module):  # the MLA bonus
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, latent_dim=None):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.latent_dim = latent_dim if latent_dim is not None else max(16, d_out // 8)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_DKV = nn.Linear(d_in, self.latent_dim, bias=qkv_bias)
        self.W_UK = nn.Linear(self.latent_dim, d_out, bias=qkv_bias)
        self.W_UV = nn.Linear(self.latent_dim, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.cache_c_kv = None
        self.ptr_current_pos = 0

    def heads(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, x, use_cache=False, rec=None):
        b, num_tokens, _ = x.shape
        queries_all = self.W_query(x)
        latent_new = self.W_DKV(x)
        if use_cache:
            latent_total = latent_new if self.cache_c_kv is None else torch.cat([self.cache_c_kv, latent_new], dim=1)
            self.cache_c_kv = latent_total
        else:
            latent_total = latent_new
        keys_all, values_all = self.W_UK(latent_total), self.W_UV(latent_total)
        put(rec, "queries_all", queries_all[0]); put(rec, "latent", latent_total[0])
        put(rec, "keys_all", keys_all[0]); put(rec, "values_all", values_all[0])
        queries, keys, values = self.heads(queries_all), self.heads(keys_all), self.heads(values_all)
        put_heads(rec, "q", queries); put_heads(rec, "k", keys); put_heads(rec, "v", values)
        start = self.ptr_current_pos if use_cache else 0
        q_positions = torch.arange(start, start + num_tokens, dtype=torch.long)
        self.ptr_current_pos = start + num_tokens if use_cache else 0
        k_positions = torch.arange(keys.shape[-2], dtype=torch.long)
        mask_bool = q_positions.unsqueeze(-1) < k_positions.unsqueeze(0)
        return finish(self, queries, keys, values, mask_bool, rec)


class CrossAttention(nn.Module):  # ours: chapter 3's order, K/V from `memory`, no mask
    def __init__(self, d_in, d_memory, d_out, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_memory, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_memory, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, memory, rec=None):
        b, num_tokens, _ = x.shape
        s = memory.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(memory), self.W_value(memory)
        put(rec, "queries_all", queries[0]); put(rec, "keys_all", keys[0]); put(rec, "values_all", values[0])
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        keys = keys.view(b, s, self.num_heads, self.head_dim).transpose(1, 2)
        values = values.view(b, s, self.num_heads, self.head_dim).transpose(1, 2)
        put_heads(rec, "q", queries); put_heads(rec, "k", keys); put_heads(rec, "v", values)
        return finish(self, queries, keys, values, None, rec)


# ---------------------------------------------------------------------------
# Cases

def build(case, d_in, d_memory):
    torch.manual_seed(case["seed"])
    hd = case["d_out"] // case["num_heads"]
    rope = compute_rope_params(hd, case["theta"], case["T"]) if case["rope"] else None
    kind, args = case["kind"], (d_in, case["d_out"], case["dropout"], case["num_heads"])
    if kind == "gqa":
        m = GroupedQueryAttention(*args, case["num_kv_groups"], qkv_bias=case["qkv_bias"], rope=rope)
    elif kind == "mha":
        m = MultiHeadAttention(d_in, case["d_out"], case["T"], case["dropout"], case["num_heads"],
                               qkv_bias=case["qkv_bias"], rope=rope)
    elif kind == "swa":
        m = MultiHeadAttentionWithSWA(*args, qkv_bias=case["qkv_bias"], sliding_window_size=case["window"], rope=rope)
    elif kind == "mla":
        m = MultiHeadLatentAttention(*args, qkv_bias=case["qkv_bias"], latent_dim=case["latent_dim"])
    else:
        m = CrossAttention(d_in, d_memory, case["d_out"], case["dropout"], case["num_heads"], qkv_bias=case["qkv_bias"])
    return m, rope


def hexed(t):
    t = t.detach().to(torch.float32).contiguous()
    t2 = t.reshape(1, -1) if t.dim() == 1 else t
    return {"shape": list(t2.shape), "hex": t2.numpy().astype("<f4").tobytes().hex()}


def parameters(m):
    out = {}
    for name, p in m.named_parameters():  # e.g. "W_query.weight", stored as used: (in, out)
        out[name] = hexed(p.t() if name.endswith("weight") else p)
    return out


def run_case(case):
    g = torch.Generator().manual_seed(case["input_seed"])
    x = torch.rand(1, case["T"], case["d_in"], generator=g) * 2 - 1
    memory = torch.rand(1, case["S"], case["d_memory"], generator=g) * 2 - 1 if case["kind"] == "cross" else None
    m, rope = build(case, case["d_in"], case["d_memory"])
    m.train(case["training"])
    rec = {}
    out = m(x, memory, rec=rec) if memory is not None else m(x, rec=rec)
    assert torch.equal(out[0], rec["output"])
    stages = {k: hexed(v) for k, v in rec.items()}
    stages.update(parameters(m))
    if rope is not None:
        stages["cos"], stages["sin"] = hexed(rope[0]), hexed(rope[1])
    result = dict(case, x=hexed(x[0]), stages=stages)
    if memory is not None:
        result["memory"] = hexed(memory[0])
    else:
        result["cache"] = cache_steps(case, x)
    return result


def cache_steps(case, x):
    m, _ = build(case, case["d_in"], 0)
    m.eval()
    steps = []
    with torch.no_grad():
        for t in range(case["T"]):
            rec = {}
            out = m(x[:, t:t + 1], use_cache=True, rec=rec)
            step = {"output": hexed(out[0])}
            if case["kind"] == "mla":
                step["latent"] = hexed(m.cache_c_kv[0])
            else:  # cache_k: (1, groups, S, hd) for GQA, (1, S, heads, hd) otherwise
                ck = m.cache_k if case["kind"] == "gqa" else m.cache_k.transpose(1, 2)
                cv = m.cache_v if case["kind"] == "gqa" else m.cache_v.transpose(1, 2)
                step["keys"] = [hexed(ck[0, g]) for g in range(ck.shape[1])]
                step["values"] = [hexed(cv[0, g]) for g in range(cv.shape[1])]
            steps.append(step)
    return steps


def make_cases():
    rng = random.Random(20251128)
    cases = []

    def add(kind, T=6, d_in=3, d_out=4, num_heads=2, **kw):
        case = dict(kind=kind, T=T, d_in=d_in, d_out=d_out, num_heads=num_heads, num_kv_groups=1,
                    window=None, latent_dim=None, dropout=0.0, training=True, qkv_bias=False,
                    seed=123, rope=False, theta=10000.0, S=T, d_memory=d_in,
                    input_seed=rng.randrange(1 << 30))
        case.update(kw)
        case["name"] = f"case{len(cases)}_{kind}"
        cases.append(case)

    # Grouped-query: 1 group (MQA), 2, num_heads (MHA); dropout on and off.
    for groups in (1, 2, 4):
        for dropout, seed, bias in ((0.0, 123, False), (0.5, 7, True), (0.1, 2024, False)):
            add("gqa", T=6, d_in=5, d_out=8, num_heads=4, num_kv_groups=groups, dropout=dropout,
                seed=seed, qkv_bias=bias)
    add("gqa", T=7, d_in=4, d_out=12, num_heads=6, num_kv_groups=3, dropout=1.0)
    add("gqa", T=5, d_in=3, d_out=8, num_heads=4, num_kv_groups=2, dropout=0.5, training=False)
    # Sliding window 1 .. T + 1, and none (chapter 3's MHA with the cache).
    for w in range(1, 8):
        add("swa", T=6, d_in=3, d_out=4, num_heads=2, window=w, dropout=0.5 if w % 2 else 0.0,
            seed=100 + w, qkv_bias=w % 3 == 0)
    add("mha", T=6, d_in=3, d_out=4, num_heads=2, dropout=0.5)
    add("mha", T=1, d_in=2, d_out=2, num_heads=1)
    # Latent: the default width, narrow ones, bias.
    for latent, bias, dropout in ((None, False, 0.0), (1, True, 0.5), (3, False, 0.1), (40, True, 0.0)):
        add("mla", T=6, d_in=3, d_out=8, num_heads=2, latent_dim=latent, qkv_bias=bias, dropout=dropout)
    # RoPE on the multi-head classes, several thetas and head sizes (2 .. 32).
    add("gqa", T=6, d_in=4, d_out=8, num_heads=2, num_kv_groups=1, rope=True)
    add("gqa", T=9, d_in=4, d_out=16, num_heads=4, num_kv_groups=2, rope=True, theta=500000.0, dropout=0.5)
    add("mha", T=6, d_in=3, d_out=4, num_heads=2, rope=True, theta=100.0, qkv_bias=True)
    add("swa", T=8, d_in=3, d_out=64, num_heads=2, window=3, rope=True, dropout=0.1)
    # Cross-attention: queries and memory of different lengths and widths.
    add("cross", T=6, d_in=3, d_out=4, num_heads=2, S=8, d_memory=5, dropout=0.5)
    add("cross", T=1, d_in=2, d_out=6, num_heads=3, S=1, d_memory=2, qkv_bias=True)
    add("cross", T=9, d_in=4, d_out=8, num_heads=2, S=3, d_memory=7)
    # Edges of Eigen's blocked products (8 / 16 / 32 +- 1) and long sequences.
    add("gqa", T=17, d_in=15, d_out=32, num_heads=8, num_kv_groups=2, dropout=0.5, qkv_bias=True)
    add("swa", T=33, d_in=9, d_out=16, num_heads=2, window=5, dropout=0.1)
    add("mla", T=31, d_in=8, d_out=16, num_heads=4, latent_dim=7, dropout=0.5)
    add("gqa", T=64, d_in=16, d_out=16, num_heads=4, num_kv_groups=1, dropout=0.1, rope=True)
    add("swa", T=65, d_in=8, d_out=8, num_heads=2, window=16, rope=True)
    add("mla", T=64, d_in=8, d_out=8, num_heads=2)
    add("cross", T=64, d_in=8, d_out=8, num_heads=2, S=17, d_memory=9, dropout=0.5)
    # Long enough for the engine to run the heads in parallel (T >= 128).
    add("gqa", T=130, d_in=6, d_out=8, num_heads=2, num_kv_groups=1, dropout=0.5, rope=True)
    # Random shapes, seeds and options.
    for _ in range(30):
        kind = rng.choice(["gqa", "mha", "swa", "mla", "cross"])
        heads, hd = rng.choice([1, 2, 3, 4]), rng.choice([1, 2, 3, 4, 6])
        T = rng.randint(1, 20)
        kw = dict(T=T, d_in=rng.randint(1, 9), d_out=heads * hd, num_heads=heads,
                  dropout=rng.choice([0.0, 0.1, 0.5, 1.0]), training=rng.random() < 0.8,
                  qkv_bias=rng.random() < 0.5, seed=rng.randrange(1 << 31))
        if kind == "gqa":
            kw["num_kv_groups"] = rng.choice([g for g in range(1, heads + 1) if heads % g == 0])
        if kind == "swa":
            kw["window"] = rng.randint(1, T + 1)
        if kind == "mla":
            kw["latent_dim"] = rng.choice([None, 1, 2, 5, 9])
        if kind == "cross":
            kw.update(S=rng.randint(1, 20), d_memory=rng.randint(1, 9))
        if kind in ("gqa", "mha", "swa") and hd % 2 == 0 and rng.random() < 0.5:
            kw.update(rope=True, theta=rng.choice([10000.0, 100.0, 500000.0]))
        add(kind, **kw)
    return cases


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    results = [run_case(c) for c in make_cases()]
    with open(os.path.join(outdir, "modern_cases.json"), "w", encoding="utf-8") as f:
        json.dump(results, f)
    print(f"modern_oracle: {len(results)} cases written to {outdir}")


if __name__ == "__main__":
    main()
