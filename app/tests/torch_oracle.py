#!/usr/bin/env python3
"""torch_oracle.py: checks every stage attnscope-cli prints against PyTorch.

    /usr/bin/python3 torch_oracle.py path/to/attnscope-cli

For each config (a fixed list of book examples plus a reproducible set of
random ones) the script writes the config JSON, runs `attnscope-cli trace
--config FILE`, and builds the same run in PyTorch with the book's own
classes (chapter 3, book_classes.py):

    torch.manual_seed(seed); module = BookClass(...); module.train()/.eval()

It then re-runs the module's forward pass step by step, from the same RNG
state and with the module's own parameters, recording each intermediate
under the stage ids the CLI uses.  The step-by-step output must equal the
real module's output, so the recorded stages are what the book's code
computes; each one is then compared with the CLI's stage of the same id and
head.

Exit status: 0 all passed, 1 any failure, 77 torch is not importable (CTest
treats 77 as "skipped").
"""

import functools
import json
import math
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

torch = harness.require("torch_oracle", "torch")
from book_classes import (CausalAttention, MultiHeadAttention,  # noqa: E402
                          MultiHeadAttentionWrapper, SelfAttention_v1, SelfAttention_v2,
                          simple_attention)

# The random configs are reproducible: this seed picks every shape, value and
# torch seed.  Change it (or pass ORACLE_SEED=...) to explore other configs.
PY_SEED = int(os.environ.get("ORACLE_SEED", "20240613"))

VARIANTS = ["simple", "self_attention_v1", "self_attention_v2", "causal",
            "multihead_wrapper", "multihead"]
DROPOUTS = [0.0, 0.1, 0.5, 1.0]

# Tolerance for computed stages.  float32 matmuls, exp and sums accumulate in
# a different order in Eigen than in PyTorch's OpenBLAS/Sleef kernels, so the
# results legitimately differ by a few ulps of the matrix's magnitude.  The
# bound is therefore relative to the largest |value| of the PyTorch stage (and
# absolute below 1).  Everything driven by the RNG or copied from the input
# (parameters, masks, dropout masks, the inputs themselves) involves no
# arithmetic that could reorder, so it must be bit-identical: see EXACT_STAGES.
REL_TOL = 1e-5
EXACT_STAGES = {"inputs", "W_query", "W_key", "W_value", "b_query", "b_key", "b_value",
                "W_out", "b_out", "mask", "dropout_mask"}

# Largest |cli - torch| seen on a computed stage, as a fraction of its tolerance.
WORST = {"ratio": 0.0}

BOOK_TOKENS = ["Your", "journey", "starts", "with", "one", "step"]
BOOK_INPUTS = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
               [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]


# ---------------------------------------------------------------------------
# The stage list the CLI must print, derived from the spec (not from the CLI).


def qkv_stage_keys(head, with_bias, causal):
    keys = [("W_query", head), ("W_key", head), ("W_value", head)]
    if with_bias:
        keys += [("b_query", head), ("b_key", head), ("b_value", head)]
    keys += [("queries", head), ("keys", head), ("values", head), ("scores", head)]
    if causal:  # the book masks the raw scores, then scales inside the softmax
        keys += [("mask", head), ("masked_scores", head)]
    keys += [("scaled_scores", head), ("weights", head)]
    if causal:
        keys += [("dropout_mask", head), ("dropped_weights", head)]
    keys.append(("context", head))
    return keys


def expected_stage_keys(cfg):
    variant, bias, heads = cfg["variant"], cfg["qkv_bias"], cfg["num_heads"]
    keys = [("inputs", -1)]
    if variant == "simple":
        keys += [("scores", -1), ("weights", -1), ("context", -1)]
    elif variant in ("self_attention_v1", "self_attention_v2", "causal"):
        with_bias = bias and variant != "self_attention_v1"
        keys += qkv_stage_keys(-1, with_bias, variant == "causal")
    elif variant == "multihead_wrapper":
        for h in range(heads):
            keys += qkv_stage_keys(h, bias, True)
        keys.append(("output", -1))
    elif variant == "multihead":
        keys += [("W_query", -1), ("W_key", -1), ("W_value", -1)]
        if bias:
            keys += [("b_query", -1), ("b_key", -1), ("b_value", -1)]
        keys += [("queries", -1), ("keys", -1), ("values", -1)]
        for h in range(heads):
            keys += [(sid, h) for sid in (
                "queries", "keys", "values", "scores", "mask", "masked_scores",
                "scaled_scores", "weights", "dropout_mask", "dropped_weights", "context")]
        keys += [("concat", -1), ("W_out", -1), ("b_out", -1), ("output", -1)]
    else:
        raise ValueError(variant)
    return keys


# ---------------------------------------------------------------------------
# Step-by-step forward passes that record every stage.  Each mirrors the
# book's forward() op for op, so from the same RNG state it produces the same
# bits as the module (checked by run_torch).


def dropout_step(weights, p, training):
    """nn.Dropout(p) as PyTorch 1.13 computes it on the CPU; returns (mask, out)."""
    if not training or p == 0.0 or weights.numel() == 0:
        return torch.ones_like(weights), weights
    if p == 1.0:
        return torch.zeros_like(weights), weights * torch.zeros(())
    noise = torch.empty_like(weights).bernoulli_(1 - p)
    noise.div_(1 - p)
    return noise, weights * noise


def record_qkv_params(module, head, rec, as_linear):
    """Records W_* as used (x @ W: nn.Linear's weight.T) and, if any, the biases."""
    for name in ("W_query", "W_key", "W_value"):
        p = getattr(module, name)
        rec.append((name, head, p.weight.T if as_linear else p))
    if as_linear and module.W_query.bias is not None:
        for name, b in (("b_query", "W_query"), ("b_key", "W_key"), ("b_value", "W_value")):
            rec.append((name, head, getattr(module, b).bias.unsqueeze(0)))


def step_self_attention(module, x, rec, as_linear):
    """SelfAttention_v1 (as_linear False) or _v2 on a 2-D x."""
    record_qkv_params(module, -1, rec, as_linear)
    if as_linear:
        keys, queries, values = module.W_key(x), module.W_query(x), module.W_value(x)
    else:
        keys, queries, values = x @ module.W_key, x @ module.W_query, x @ module.W_value
    scores = queries @ keys.T
    scaled = scores / keys.shape[-1]**0.5
    weights = torch.softmax(scaled, dim=-1)
    context = weights @ values
    rec += [("queries", -1, queries), ("keys", -1, keys), ("values", -1, values),
            ("scores", -1, scores), ("scaled_scores", -1, scaled), ("weights", -1, weights),
            ("context", -1, context)]
    return context


def step_causal(module, xb, head, rec):
    """CausalAttention on a batch of one; returns (1, T, d_out)."""
    n = xb.shape[1]
    record_qkv_params(module, head, rec, True)
    keys, queries, values = module.W_key(xb), module.W_query(xb), module.W_value(xb)
    scores = queries @ keys.transpose(1, 2)
    d_k = keys.shape[-1]
    mask = module.mask[:n, :n]
    masked = scores.masked_fill(mask.bool(), -torch.inf)  # book's order: mask, then scale
    scaled = masked / d_k**0.5
    weights = torch.softmax(scaled, dim=-1)
    drop_mask, dropped = dropout_step(weights, module.dropout.p, module.training)
    context = dropped @ values
    rec += [("queries", head, queries[0]), ("keys", head, keys[0]), ("values", head, values[0]),
            ("scores", head, scores[0]), ("mask", head, mask),
            ("masked_scores", head, masked[0]), ("scaled_scores", head, scaled[0]),
            ("weights", head, weights[0]), ("dropout_mask", head, drop_mask[0]),
            ("dropped_weights", head, dropped[0]), ("context", head, context[0])]
    return context


def step_multihead(module, xb, rec):
    b, n, _ = xb.shape
    h, hd = module.num_heads, module.head_dim
    record_qkv_params(module, -1, rec, True)
    keys, queries, values = module.W_key(xb), module.W_query(xb), module.W_value(xb)
    rec += [("queries", -1, queries[0]), ("keys", -1, keys[0]), ("values", -1, values[0])]
    k = keys.view(b, n, h, hd).transpose(1, 2)
    q = queries.view(b, n, h, hd).transpose(1, 2)
    v = values.view(b, n, h, hd).transpose(1, 2)
    scores = q @ k.transpose(2, 3)
    mask = module.mask[:n, :n]
    masked = scores.masked_fill(mask.bool(), -torch.inf)
    scaled = masked / hd**0.5
    weights = torch.softmax(scaled, dim=-1)
    # Dropout runs once over the whole (1, heads, T, T) tensor, head by head.
    drop_mask, dropped = dropout_step(weights, module.dropout.p, module.training)
    per_head = dropped @ v
    for i in range(h):
        rec += [("queries", i, q[0, i]), ("keys", i, k[0, i]), ("values", i, v[0, i]),
                ("scores", i, scores[0, i]), ("mask", i, mask),
                ("masked_scores", i, masked[0, i]), ("scaled_scores", i, scaled[0, i]),
                ("weights", i, weights[0, i]), ("dropout_mask", i, drop_mask[0, i]),
                ("dropped_weights", i, dropped[0, i]), ("context", i, per_head[0, i])]
    concat = per_head.transpose(1, 2).contiguous().view(b, n, module.d_out)
    output = module.out_proj(concat)
    rec += [("concat", -1, concat[0]), ("W_out", -1, module.out_proj.weight.T),
            ("b_out", -1, module.out_proj.bias.unsqueeze(0)), ("output", -1, output[0])]
    return output


def run_torch(cfg, x):
    """Builds the book's module for cfg and returns (recorded stages, problems)."""
    variant, d_in, T = cfg["variant"], x.shape[1], x.shape[0]
    d_out, heads, p, bias = cfg["d_out"], cfg["num_heads"], cfg["dropout"], cfg["qkv_bias"]
    torch.manual_seed(cfg["seed"])
    if variant == "simple":
        module = None
    elif variant == "self_attention_v1":
        module = SelfAttention_v1(d_in, d_out)
    elif variant == "self_attention_v2":
        module = SelfAttention_v2(d_in, d_out, qkv_bias=bias)
    elif variant == "causal":
        module = CausalAttention(d_in, d_out, T, p, qkv_bias=bias)
    elif variant == "multihead_wrapper":
        module = MultiHeadAttentionWrapper(d_in, d_out, T, p, heads, qkv_bias=bias)
    else:
        module = MultiHeadAttention(d_in, d_out, T, p, heads, qkv_bias=bias)
    if module is not None:
        module.train(cfg["training"])

    xb = x.unsqueeze(0)
    rec = [("inputs", -1, x)]
    with torch.no_grad():
        state = torch.get_rng_state()
        if variant == "simple":
            reference = simple_attention(x)
        elif variant in ("self_attention_v1", "self_attention_v2"):
            reference = module(x)
        else:
            reference = module(xb)[0]

        torch.set_rng_state(state)
        if variant == "simple":
            scores = x @ x.T
            weights = torch.softmax(scores, dim=-1)
            stepped = weights @ x
            rec += [("scores", -1, scores), ("weights", -1, weights), ("context", -1, stepped)]
        elif variant == "self_attention_v1":
            stepped = step_self_attention(module, x, rec, as_linear=False)
        elif variant == "self_attention_v2":
            stepped = step_self_attention(module, x, rec, as_linear=True)
        elif variant == "causal":
            stepped = step_causal(module, xb, -1, rec)[0]
        elif variant == "multihead_wrapper":
            outs = [step_causal(head, xb, i, rec) for i, head in enumerate(module.heads)]
            stepped = torch.cat(outs, dim=-1)[0]
            rec.append(("output", -1, stepped))
        else:
            stepped = step_multihead(module, xb, rec)[0]

    problems = []
    if not (torch.equal(stepped, reference) or
            torch.allclose(stepped, reference, rtol=0, atol=1e-7, equal_nan=True)):
        problems.append("oracle self-check: the step-by-step forward differs from the module's "
                        f"forward by {(stepped - reference).abs().max().item():.3g}")
    rec_keys = [(sid, h) for sid, h, _ in rec]
    if rec_keys != expected_stage_keys(cfg):
        problems.append(f"oracle self-check: recorded stages {rec_keys} != expected")
    return [(sid, h, t.detach()) for sid, h, t in rec], reference, problems


# ---------------------------------------------------------------------------
# Running the CLI and comparing.


def cell(v):
    if isinstance(v, str):
        return {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}[v]
    return float(v)


def stage_tensor(stage):
    rows = [[cell(v) for v in row] for row in stage["data"]]
    r, c = stage["shape"]
    if len(rows) != r or any(len(row) != c for row in rows):
        raise ValueError(f"data does not have the shape {stage['shape']} it declares")
    # %.9g round-trips float32, so the float32 conversion recovers the CLI's bits.
    return torch.tensor(rows, dtype=torch.float64).reshape(r, c).to(torch.float32)


# Where a dot product overflows, which non-finite value comes out depends on
# how the products are summed: PyTorch's BLAS uses fused multiply-adds, in
# which only a dot product's first product is rounded (and can overflow) on
# its own, while attnscope rounds every product as the book's math does, so
# it meets inf - inf (NaN) where PyTorch's running sum stays -inf. For these
# stages of an overflowing run the oracle asks for non-finite values in the
# same cells, not the same NaN/inf; every later stage is compared strictly.
DOT_PRODUCT_STAGES = {"scores", "scaled_scores", "masked_scores"}


def compare_stage(sid, head, got, ref, overflow=False):
    """Returns a problem string, or None."""
    where = f"stage {sid!r} head {head}"
    if overflow and sid in DOT_PRODUCT_STAGES:
        if not torch.equal(torch.isfinite(got), torch.isfinite(ref)):
            pos = [tuple(ix) for ix in
                   (torch.isfinite(got) != torch.isfinite(ref)).nonzero().tolist()][:3]
            return f"{where}: finite in one and not the other at {pos}"
        got = torch.where(torch.isfinite(got), got, torch.zeros_like(got))
        ref = torch.where(torch.isfinite(ref), ref, torch.zeros_like(ref))
    if list(got.shape) != list(ref.shape):
        return f"{where}: shape {list(got.shape)}, torch has {list(ref.shape)}"
    if sid in EXACT_STAGES:
        if not torch.equal(got, ref):
            bad = (got != ref) & ~(torch.isnan(got) & torch.isnan(ref))
            idx = tuple(bad.nonzero()[0].tolist())
            # Distance in units in the last place (float32 bit patterns, same sign).
            ulps = abs(got[idx].view(torch.int32).item() - ref[idx].view(torch.int32).item())
            return (f"{where}: must be bit-exact; {int(bad.sum())} of {bad.numel()} entries "
                    f"differ, first at {idx}: cli {got[idx].item()!r} torch "
                    f"{ref[idx].item()!r} ({ulps} ulp)")
        return None
    finite = torch.isfinite(ref)
    g, r = got.double(), ref.double()
    nonfinite_ok = torch.equal(torch.isnan(got), torch.isnan(ref)) and \
        torch.equal(got[torch.isinf(ref)], ref[torch.isinf(ref)])
    if not nonfinite_ok:
        idx = (torch.isnan(got) != torch.isnan(ref)) | (torch.isinf(got) != torch.isinf(ref)) | \
            (torch.isinf(ref) & (got != ref))
        pos = [tuple(ix) for ix in idx.nonzero().tolist()][:3]
        return f"{where}: non-finite entries differ at {pos}"
    if not torch.isfinite(got[finite]).all():
        return f"{where}: cli has non-finite values where torch is finite"
    scale = max(1.0, r[finite].abs().max().item()) if finite.any() else 1.0
    diff = torch.where(finite, (g - r).abs(), torch.zeros_like(r))
    worst = diff.max().item() if diff.numel() else 0.0
    WORST["ratio"] = max(WORST["ratio"], worst / (REL_TOL * scale))
    if worst > REL_TOL * scale:
        idx = divmod(int(diff.argmax()), ref.shape[1])
        return (f"{where}: |cli - torch| = {worst:.3g} > {REL_TOL:g} * {scale:.4g} at {idx}: "
                f"cli {got[idx].item()!r} torch {ref[idx].item()!r}")
    return None


def run_cli(cli, cfg):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cfg, f)
        path = f.name
    try:
        proc = subprocess.run([cli, "trace", "--config", path], capture_output=True,
                              text=True, timeout=120)
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        raise RuntimeError(f"attnscope-cli exited {proc.returncode}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def check_config(cli, cfg, x, tokens, expect_rows=None, overflow=False):
    """Runs one config through both sides; returns a list of problems.

    overflow: the run's dot products leave float32's range (DOT_PRODUCT_STAGES)."""
    full = {"variant": "simple", "d_out": 2, "num_heads": 1, "dropout": 0.0, "seed": 123,
            "qkv_bias": False, "training": True}
    full.update({k: v for k, v in cfg.items() if k in full})
    try:
        trace = run_cli(cli, cfg)
    except Exception as exc:  # crash, bad JSON, timeout
        return [f"running the CLI: {exc}"]
    problems = []
    if trace.get("attnscope_trace") != 1 or trace.get("variant") != full["variant"]:
        problems.append("header: attnscope_trace/variant wrong")
    if trace.get("tokens") != tokens:
        problems.append(f"tokens {trace.get('tokens')} != {tokens}")
    want_config = dict(full, d_in=x.shape[1])
    if trace.get("config") != want_config:
        problems.append(f"config echo {trace.get('config')} != {want_config}")

    ref_stages, reference, oracle_problems = run_torch(full, x)
    problems += oracle_problems
    cli_keys = [(s["id"], s["head"]) for s in trace["stages"]]
    want_keys = expected_stage_keys(full)
    if cli_keys != want_keys:
        problems.append(f"stage list differs:\n      cli:      {cli_keys}\n"
                        f"      expected: {want_keys}")
    cli_by_key = {(s["id"], s["head"]): s for s in trace["stages"]}
    for sid, head, ref in ref_stages:
        stage = cli_by_key.get((sid, head))
        if stage is None:
            problems.append(f"stage {sid!r} head {head}: missing from the CLI output")
            continue
        try:
            got = stage_tensor(stage)
        except Exception as exc:
            problems.append(f"stage {sid!r} head {head}: {exc}")
            continue
        problem = compare_stage(sid, head, got, ref, overflow)
        if problem:
            problems.append(problem)
    if expect_rows:
        final = ref_stages[-1][0]
        got = stage_tensor(cli_by_key[(final, -1)])
        for row, want in expect_rows.items():
            vals = got[row].tolist()
            if any(abs(a - b) > 5e-5 for a, b in zip(vals, want)):
                problems.append(f"book value: {final} row {row} is "
                                f"{[round(v, 4) for v in vals]}, the book prints {want}")
    return problems


def as_float32(values):
    """Rounds Python floats to float32 values (exactly representable in JSON)."""
    return torch.tensor(values, dtype=torch.float32).tolist()


def random_configs(rng):
    """Every variant x dropout x mode x qkv_bias combination, random shapes/seeds."""
    configs = []
    combos = [(v, p, training, bias) for v in VARIANTS for p in DROPOUTS
              for training in (True, False) for bias in (False, True)]
    for i, (variant, p, training, bias) in enumerate(combos):
        T = rng.choice([1, 2, 32]) if rng.random() < 0.2 else rng.randint(1, 32)
        d_in = rng.choice([1, 16]) if rng.random() < 0.2 else rng.randint(1, 16)
        heads = rng.randint(1, 8)
        if variant == "multihead":
            d_out = heads * rng.randint(1, max(1, 16 // heads))
        else:
            d_out = rng.randint(1, 16)
        seed = rng.randint(2**32, 2**64 - 1) if i % 8 == 7 else rng.randint(0, 2**32 - 1)
        scale = rng.choice([0.5, 1.0, 2.0])
        x = as_float32([[rng.uniform(-scale, scale) for _ in range(d_in)] for _ in range(T)])
        cfg = {"tokens": [f"w{t}" for t in range(T)], "embeddings": x, "variant": variant,
               "d_out": d_out, "dropout": p, "seed": seed, "qkv_bias": bias,
               "training": training}
        if variant in ("multihead_wrapper", "multihead"):
            cfg["num_heads"] = heads
        configs.append(cfg)
    return configs


def edge_configs(rng):
    """Every variant at the edges of float32 (docs/RELIABILITY.md, "Numeric edge cases").

    1e30: every product of the scores overflows to +-inf, the softmax makes
    NaN (inf - inf) and every later stage inherits it; from the softmax on,
    NaN, inf and -inf must sit in the same cells as in PyTorch, the masked
    positions of a NaN softmax row included (see DOT_PRODUCT_STAGES for the
    scores).  1e17: scores near 1e35, still finite; the softmax
    subtracts the row max and stays finite.  1e-30: products underflow to 0,
    the weights are uniform."""
    configs = []
    for scale in (1e30, 1e17, 1e-30):
        overflow = scale > 1e20
        for i, variant in enumerate(VARIANTS):
            T, d_in = 6, 3
            x = as_float32([[rng.choice((-1, 1)) * rng.uniform(0.5, 1.0) * scale
                             for _ in range(d_in)] for _ in range(T)])
            cfg = {"tokens": [f"e{t}" for t in range(T)], "embeddings": x, "variant": variant,
                   "d_out": 4, "dropout": 0.5, "seed": rng.randint(0, 2**32 - 1),
                   "qkv_bias": i % 2 == 0, "training": True}
            if variant in ("multihead_wrapper", "multihead"):
                cfg["num_heads"] = 2
            configs.append((f"edge {scale:g} {variant}", cfg, overflow))
    return configs


def fixed_configs():
    """The book's own examples, run on the built-in 'book' preset.

    Each entry: (config, rows of the final stage the book prints)."""
    return [
        ({"preset": "book", "variant": "simple"}, {1: [0.4419, 0.6515, 0.5683]}),
        ({"preset": "book", "variant": "self_attention_v1", "seed": 123},
         {0: [0.2996, 0.8053], 1: [0.3061, 0.8210]}),
        ({"preset": "book", "variant": "self_attention_v2", "seed": 789},
         {0: [-0.0739, 0.0713]}),
        ({"preset": "book", "variant": "causal", "seed": 123, "d_out": 2, "dropout": 0.0},
         {0: [-0.4519, 0.2216]}),
        ({"preset": "book", "variant": "multihead_wrapper", "seed": 123, "d_out": 2,
          "num_heads": 2, "dropout": 0.0}, {0: [-0.4519, 0.2216, 0.4772, 0.1063]}),
        ({"preset": "book", "variant": "multihead", "seed": 123, "d_out": 2, "num_heads": 2,
          "dropout": 0.0}, {0: [0.3190, 0.4858]}),
        # Dropout as the book shows it, plus seeds at the edges of the range.
        ({"preset": "book", "variant": "causal", "seed": 123, "dropout": 0.5}, None),
        ({"preset": "book", "variant": "multihead", "seed": 2**32, "d_out": 4, "num_heads": 2,
          "dropout": 0.5, "qkv_bias": True}, None),
        ({"preset": "book", "variant": "multihead_wrapper", "seed": 2**64 - 1, "d_out": 3,
          "num_heads": 3, "dropout": 0.1}, None),
        ({"preset": "book", "variant": "causal", "seed": 0, "dropout": 0.5,
          "training": False}, None),
    ]


def main():
    cli = harness.cli_argument("torch_oracle.py")
    torch.set_num_threads(1)
    print(f"torch_oracle: torch {torch.__version__}, python random seed {PY_SEED} "
          f"(set ORACLE_SEED to change)")

    book_x = as_float32(BOOK_INPUTS)
    # (name, config, embeddings, tokens, book rows, overflows)
    cases = [(f"book {i}", cfg, book_x, BOOK_TOKENS, rows, False)
             for i, (cfg, rows) in enumerate(fixed_configs())]
    rng = random.Random(PY_SEED)
    for i, cfg in enumerate(random_configs(rng)):
        cases.append((f"random {i}", cfg, cfg["embeddings"], cfg["tokens"], None, False))
    for name, cfg, overflow in edge_configs(random.Random(PY_SEED + 1)):
        cases.append((name, cfg, cfg["embeddings"], cfg["tokens"], None, overflow))

    only = os.environ.get("ORACLE_CASE")  # e.g. ORACLE_CASE="random 33" reruns one case
    if only:
        cases = [c for c in cases if c[0] == only]

    failed_names = []  # the first three failures show their whole config

    def check_case(name, cfg, x, tokens, rows, overflow):
        problems = check_config(cli, cfg, torch.tensor(x, dtype=torch.float32), tokens, rows,
                                overflow)
        if not problems:
            return
        failed_names.append(name)
        shown = {k: v for k, v in cfg.items() if k not in ("embeddings", "tokens")}
        lines = [f"python seed {PY_SEED}, rerun with ORACLE_CASE=\"{name}\": "
                 f"{json.dumps(shown)} T={len(x)} d_in={len(x[0])}"]
        if len(failed_names) <= 3 or only:  # the whole file, embeddings included
            lines.append(f"  config: {json.dumps(cfg)}")
        lines += [f"  - {p}" for p in problems[:8]]
        if len(problems) > 8:
            lines.append(f"  ... and {len(problems) - 8} more")
        raise AssertionError("\n".join(lines))

    tests = [(case[0], functools.partial(check_case, *case)) for case in cases]
    passed, failed = harness.run_tests(tests)
    print(f"worst computed-stage error: {WORST['ratio']:.3f} of the tolerance")
    return harness.summary("oracle", passed, failed)


if __name__ == "__main__":
    sys.exit(main())
