#!/usr/bin/env python3
"""cli_modern_test.py: attnscope-cli with the classes after chapter 3.

    /usr/bin/python3 cli_modern_test.py path/to/attnscope-cli

Without PyTorch: bad values for the new options exit 2 with one line,
`kv-memory` prints the book's README numbers, `trace --cache-step` checks
itself against a full recompute. With PyTorch: `trace --format json` of
gqa, swa (with RoPE), mla, cross and multihead with RoPE equals the live
oracle's classes (core/tests/modern_oracle.py, the book's bonus classes in
our words) stage by stage, and `code` prints a script whose output PyTorch
computes as the trace's.

Exit status: 0 all passed, 1 any failure (torch-only parts are reported as
skipped when torch is missing).
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "core", "tests"))
import harness  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

TIMEOUT_S = 60
CLI = None  # set in main()
TOLERANCE = 1e-5  # float32 reassociation between our kernels and PyTorch's


def cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, timeout=TIMEOUT_S)


def trace(*args):
    proc = cli("trace", *args)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, f"`trace {' '.join(args)}` exited {proc.returncode}: {err!r}"
    return json.loads(proc.stdout)


def refused(args, words):
    proc = cli(*args)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, f"{args} exited {proc.returncode}, not 2: {err!r}"
    assert proc.stdout == b"", f"{args} printed to stdout"
    assert err.count("\n") == 1 and err.startswith("error: "), f"{args}: not one error line: {err!r}"
    for w in words:
        assert w in err, f"{args}: {w!r} not in {err!r}"


REFUSALS = [
    (["trace", "--variant", "gqa", "--heads", "4", "--d-out", "8", "--kv-groups", "3"],
     ["num_kv_groups (3)", "1, 2 or 4"]),
    (["trace", "--variant", "swa", "--heads", "2", "--d-out", "4", "--window", "0"],
     ["window (0)", "between 1"]),
    (["trace", "--variant", "mla", "--heads", "2", "--d-out", "4", "--latent-dim", "0"],
     ["latent_dim (0)"]),
    (["trace", "--variant", "mla", "--heads", "2", "--d-out", "4", "--rope"], ["RoPE", "mla"]),
    (["trace", "--variant", "gqa", "--heads", "2", "--d-out", "6", "--rope"],
     ["even head_dim", "3"]),
    (["trace", "--variant", "causal", "--rope"], ["RoPE", "causal"]),
    (["trace", "--variant", "swa", "--rope-theta", "500"], ["--rope-theta", "--rope"]),
    (["trace", "--variant", "gqa", "--heads", "2", "--d-out", "4", "--rope", "--rope-theta", "-1"],
     ["theta", "positive"]),
    (["trace", "--variant", "cross", "--cache-step", "0"], ["cross", "cache"]),
    (["trace", "--variant", "gqa", "--heads", "2", "--d-out", "4", "--cache-step", "6"],
     ["cache step 6", "0 to 5"]),
    (["code", "--variant", "gqa", "--heads", "2", "--d-out", "4", "--weights", "/nonexistent"],
     ["/nonexistent"]),
    (["kv-memory", "--model", "gpt5"], ["gpt5", "book-8b"]),
    (["kv-memory", "--dtype", "fp64"], ["fp64", "bf16"]),
    (["kv-memory", "--context", "0"], ["--context (0)"]),
]


def refusal_test(args, words):
    return (" ".join(args[:3]) + " " + " ".join(args[-2:]), lambda: refused(args, words))


def test_kv_memory_matches_the_gqa_readme():
    proc = cli("kv-memory", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    got = {m["mechanism"]: m for m in doc["mechanisms"]}
    # The GQA README's 8B example: 32 heads, 8 K/V heads, 32 layers, bf16, 32k tokens.
    assert got["MHA"]["gb"] == "17.18 GB" and got["GQA"]["gb"] == "4.29 GB", got
    assert got["MHA"]["bytes"] == 2 * 2 * 32 * 32 * 128 * 32768, got["MHA"]
    text = cli("kv-memory", "--model", "gpt2-124m").stdout.decode()
    assert "MHA" in text and "GQA" in text, text


def test_cache_step_checks_itself_against_a_full_recompute():
    for args in (["--variant", "gqa", "--heads", "4", "--d-out", "8", "--kv-groups", "2"],
                 ["--variant", "swa", "--heads", "2", "--d-out", "4", "--window", "2", "--rope"],
                 ["--variant", "mla", "--heads", "2", "--d-out", "4", "--latent-dim", "3"]):
        doc = trace(*args, "--cache-step", "4")
        step = doc["cache_step"]
        assert step["position"] == 4 and step["max_abs_diff_vs_full"] < TOLERANCE, (args, step)
        assert doc["tokens"] == ["one"], doc["tokens"]
        keys = doc["key_tokens"]
        window = "swa" in args
        assert keys == (["with", "one"] if window else ["Your", "journey", "starts", "with", "one"]), keys
        out = [s for s in doc["stages"] if s["id"] == "output"][0]
        full = trace(*args, "--eval")
        full_out = [s for s in full["stages"] if s["id"] == "output"][0]
        row = full_out["data"][4]
        assert max(abs(a - b) for a, b in zip(out["data"][0], row)) < TOLERANCE, (args, out, row)


# ---------------------------------------------------------------------------
# With PyTorch

def tensor(doc, sid, head=-1):
    for s in doc["stages"]:
        if s["id"] == sid and s["head"] == head:
            return torch.tensor(s["data"], dtype=torch.float32)
    raise AssertionError(f"no stage {sid!r} head {head}")


def close(a, b, what):
    a, b = a.float(), b.float()
    assert a.shape == b.shape, f"{what}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
    scale = max(1.0, b.abs().max().item())
    diff = (a - b).abs().max().item()
    assert diff <= TOLERANCE * scale, f"{what}: differs by {diff}"


def oracle_run(doc, kind, window=None, latent=None, groups=1):
    import modern_oracle
    c = doc["config"]
    x = tensor(doc, "inputs").unsqueeze(0)
    memory = tensor(doc, "memory").unsqueeze(0) if kind == "cross" else None
    case = dict(kind=kind, d_out=c["d_out"], num_heads=c["num_heads"], dropout=c["dropout"],
                seed=c["seed"], qkv_bias=c["qkv_bias"], rope=c.get("rope", False),
                theta=c.get("rope_theta", 10000.0), T=x.shape[1], window=window,
                latent_dim=latent, num_kv_groups=groups)
    m, _ = modern_oracle.build(case, x.shape[2], memory.shape[2] if memory is not None else 0)
    m.train(c["training"])
    rec = {}
    with torch.no_grad():
        out = m(x, memory, rec=rec) if memory is not None else m(x, rec=rec)
    return out[0], rec


TORCH_CASES = [
    ("gqa", ["--variant", "gqa", "--heads", "4", "--d-out", "8", "--kv-groups", "2",
             "--dropout", "0.3", "--qkv-bias"], dict(groups=2)),
    ("swa", ["--variant", "swa", "--heads", "2", "--d-out", "8", "--window", "3", "--rope",
             "--rope-theta", "500", "--dropout", "0.2"], dict(window=3)),
    ("mla", ["--variant", "mla", "--heads", "2", "--d-out", "4", "--latent-dim", "3",
             "--dropout", "0.5", "--seed", "7"], dict(latent=3)),
    ("cross", ["--variant", "cross", "--heads", "2", "--d-out", "4", "--dropout", "0.25"], {}),
    ("mha", ["--variant", "multihead", "--heads", "2", "--d-out", "4", "--rope",
             "--random", "9,5"], {}),
]


def torch_case(kind, args, extra):
    def run():
        doc = trace(*args)
        out, rec = oracle_run(doc, kind, **extra)
        close(tensor(doc, "output"), out, f"{kind} output")
        heads = doc["config"]["num_heads"]
        for h in range(heads):
            for ours, theirs in (("weights", "weights"), ("scores", "scores"),
                                 ("dropout_mask", "dropout_mask"), ("context", "context")):
                close(tensor(doc, ours, h), rec[f"{theirs}/{h}"], f"{kind} {ours} head {h}")
        if kind == "gqa":
            for g in range(extra["groups"]):
                close(tensor(doc, "group_keys", g), rec[f"k/{g}"], f"group_keys {g}")
        if kind == "mla":
            close(tensor(doc, "latent_kv"), rec["latent"], "latent_kv")
        # The script `code` prints computes the same output in PyTorch.
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            proc = cli("code", *args)
            assert proc.returncode == 0, proc.stderr
            f.write(proc.stdout.decode() + "\nimport json as _j\n"
                    "print('OUT' + _j.dumps(context_vecs[0].tolist()))\n")
        try:
            ran = subprocess.run([sys.executable, f.name], capture_output=True,
                                 timeout=TIMEOUT_S)
        finally:
            os.unlink(f.name)
        assert ran.returncode == 0, ran.stderr.decode()
        line = [ln for ln in ran.stdout.decode().splitlines() if ln.startswith("OUT")][0]
        close(torch.tensor(json.loads(line[3:])), tensor(doc, "output"), f"{kind} script")
    return (f"torch {kind}", run)


def main():
    global CLI
    CLI = harness.cli_argument("cli_modern_test.py")
    tests = [refusal_test(a, w) for a, w in REFUSALS]
    tests += [test_kv_memory_matches_the_gqa_readme,
              test_cache_step_checks_itself_against_a_full_recompute]
    skipped = []
    if torch is not None:
        tests += [torch_case(*c) for c in TORCH_CASES]
    else:
        skipped.append(f"the PyTorch comparisons ({harness.TORCH_HINT})")
    passed, failed = harness.run_tests(tests, catch=(json.JSONDecodeError, KeyError, IndexError))
    return harness.summary("cli_modern", passed, failed, skipped_parts=skipped)


if __name__ == "__main__":
    sys.exit(main())
