#!/usr/bin/env python3
"""pytorch_code_test.py: `attnscope-cli code` scripts print the trace's output.

    /usr/bin/python3 pytorch_code_test.py path/to/attnscope-cli

For every variant, with dropout 0 and > 0, qkv_bias, eval mode, imported
weights (JSON in both orientations, a wrapper's heads) and imported
embeddings, random and typed-text inputs, the test asks `attnscope-cli code` for the script and
`attnscope-cli trace` for the run, runs the script with the PyTorch this
interpreter imports and compares what it prints with the trace's last stage
(context, or the layers' output).  The scripts run in this process (runpy,
their stdout captured: importing torch once keeps the test fast); one of them
also runs as its own `python3 script.py`, as a learner would.

Exit status: 0 passed, 1 any failure, 77 torch is not importable (skipped).
"""

import contextlib
import functools
import io
import json
import math
import os
import re
import runpy
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

torch = harness.require("pytorch_code_test", "torch")

# The engine and PyTorch sum in different orders (torch_oracle.py: a few ulps
# of the matrix's magnitude); the script prints 6 decimals (sci mode: 7
# significant digits).
REL_TOL = 1e-5
PRINT_TOL = 1e-6


def cli_run(cli, *args):
    proc = subprocess.run([cli, *args], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"attnscope-cli {' '.join(args)} exited {proc.returncode}: "
                           f"{proc.stderr.strip()}")
    return proc.stdout


def parse_printed_tensor(text):
    """The numbers of a printed tensor, in order: 'tensor([[...]], grad_fn=...)'."""
    start = text.index("tensor(")
    body = text[start + len("tensor("):text.rindex("]") + 1]
    tokens = re.findall(r"-?(?:inf|nan|\d+(?:\.\d*)?(?:e[+-]?\d+)?)", body)
    return [float(t) for t in tokens]


def output_stage(trace):
    final = trace["stages"][-1]
    assert final["id"] in ("context", "output") and final["head"] == -1, final["id"]
    values = [v if not isinstance(v, str) else float(v) for row in final["data"] for v in row]
    return final["shape"], values


def compare(printed, shape, want):
    if len(printed) != shape[0] * shape[1]:
        return f"printed {len(printed)} numbers, the trace's output has {shape[0]}x{shape[1]}"
    finite = [abs(w) for w in want if math.isfinite(w)]
    tol = REL_TOL * max(1.0, max(finite, default=1.0)) + PRINT_TOL
    for i, (g, w) in enumerate(zip(printed, want)):
        if math.isnan(w) and math.isnan(g):
            continue
        if not math.isfinite(w) or not math.isfinite(g):
            if g != w:
                return f"element {i}: script {g!r}, trace {w!r}"
            continue
        if abs(g - w) > tol:
            return f"element {i}: script {g!r}, trace {w!r} (|diff| {abs(g - w):.3g} > {tol:.3g})"
    return None


def write_json(folder, name, obj):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        json.dump(obj, f)
    return path


def rows(r, c, base):
    """A deterministic r x c matrix of float32-exact values (as nested lists)."""
    return [[((base + 7 * i + 3 * j) % 13 - 6) / 8.0 for j in range(c)] for i in range(r)]


def cases(folder):
    book = ["--preset", "book"]
    # Weights in the trace's orientation (x @ W + b) and as PyTorch's state_dict.
    causal_w = write_json(folder, "causal.json", {
        "W_query": rows(3, 2, 1), "W_key": rows(3, 2, 2), "W_value": rows(3, 2, 3)})
    v1_w = write_json(folder, "v1.json", {
        "W_query": rows(3, 2, 4), "W_key": rows(3, 2, 5), "W_value": rows(3, 2, 6)})
    mha_w = write_json(folder, "mha.json", {
        "W_query.weight": rows(4, 3, 1), "W_key.weight": rows(4, 3, 2),
        "W_value.weight": rows(4, 3, 3), "W_query.bias": rows(1, 4, 4)[0],
        "W_key.bias": rows(1, 4, 5)[0], "W_value.bias": rows(1, 4, 6)[0],
        "out_proj.weight": rows(4, 4, 7), "out_proj.bias": rows(1, 4, 8)[0]})
    wrapper_w = write_json(folder, "wrapper.json", {"heads": [
        {"W_query": rows(3, 2, h), "W_key": rows(3, 2, h + 1), "W_value": rows(3, 2, h + 2)}
        for h in range(2)]})
    # Token names that would break a comment, and values that are not short decimals.
    emb = write_json(folder, "emb.json", {
        "tokens": ["new\nline", "tab\there", "#hash", "ünï"],
        "embeddings": [[0.1 + 1e-7 * i, -2.5e-8, 3e5, 1.0 / 3.0] for i in range(4)]})
    # Scores overflow float32: the softmax makes NaN in both (torch_oracle.py's edges).
    huge = write_json(folder, "huge.json", {"embeddings": [[1e30, -1e30, 5e29], [2e30, 1e30, -1e30],
                                                           [-1e30, 3e29, 1e30]]})
    # 40 tokens x d_out 30: 1200 outputs, past torch's default summary threshold.
    wide = write_json(folder, "wide.json", {"embeddings": rows(40, 5, 9)})
    return [
        ("simple", book + ["--variant", "simple"]),
        ("self_attention_v1", book + ["--variant", "self_attention_v1", "--seed", "123"]),
        ("self_attention_v2 qkv_bias", book + ["--variant", "self_attention_v2", "--seed", "789",
                                               "--qkv-bias"]),
        ("causal dropout 0", book + ["--variant", "causal"]),
        ("causal dropout 0.5", book + ["--variant", "causal", "--dropout", "0.5"]),
        ("causal dropout 0.5 eval", book + ["--variant", "causal", "--dropout", "0.5", "--eval"]),
        ("multihead_wrapper dropout 0.1 qkv_bias seed 2^64-1",
         book + ["--variant", "multihead_wrapper", "--heads", "3", "--d-out", "2",
                 "--dropout", "0.1", "--qkv-bias", "--seed", str(2**64 - 1)]),
        ("multihead dropout 0", book + ["--variant", "multihead", "--heads", "2"]),
        ("multihead dropout 0.5 qkv_bias", book + ["--variant", "multihead", "--heads", "2",
                                                  "--d-out", "4", "--dropout", "0.5",
                                                  "--qkv-bias", "--seed", "7"]),
        ("multihead dropout 0.5 eval", book + ["--variant", "multihead", "--heads", "2",
                                              "--d-out", "4", "--dropout", "0.5", "--eval"]),
        ("self_attention_v1 imported weights", book + ["--variant", "self_attention_v1",
                                                       "--weights", v1_w]),
        ("causal imported weights dropout 0.5", book + ["--variant", "causal", "--dropout", "0.5",
                                                        "--weights", causal_w]),
        ("multihead imported state_dict qkv_bias dropout 0.3",
         book + ["--variant", "multihead", "--heads", "2", "--d-out", "4", "--qkv-bias",
                 "--dropout", "0.3", "--weights", mha_w]),
        ("multihead_wrapper imported heads dropout 0.5",
         book + ["--variant", "multihead_wrapper", "--heads", "2", "--dropout", "0.5",
                 "--weights", wrapper_w]),
        ("causal imported embeddings", ["--embeddings", emb, "--variant", "causal",
                                        "--dropout", "0.2", "--d-out", "3"]),
        ("causal NaN outputs", ["--embeddings", huge, "--variant", "causal", "--dropout", "0.5"]),
        ("multihead 1200 outputs", ["--embeddings", wide, "--variant", "multihead", "--heads", "3",
                                    "--d-out", "30", "--dropout", "0.1"]),
        ("causal random inputs from their own seed",
         ["--random", "7,5", "--input-seed", "11", "--variant", "causal", "--d-out", "3",
          "--dropout", "0.5"]),
        ("multihead on a typed text with positions",
         ["--text", "Your journey starts with one step", "--d-in", "6", "--embed-seed", "7",
          "--positions", "10", "--variant", "multihead", "--heads", "2", "--dropout", "0.2"]),
    ]


def run_script(path):
    """Runs the script here, as __main__, and returns what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(path, run_name="__main__")
    return out.getvalue()


def script_problem(cli, folder, i, args):
    """Runs `code` and `trace` for args and the script in this process;
    returns a problem, or None."""
    script = cli_run(cli, "code", *args)
    shape, want = output_stage(json.loads(cli_run(cli, "trace", *args)))
    path = os.path.join(folder, f"run{i}.py")
    with open(path, "w") as f:
        f.write(script)
    last = script.rstrip("\n").splitlines()[-1]
    if not last.startswith("print("):
        return f"the last line is {last!r}, not the print of the output"
    if "--random" in args and not ("torch.manual_seed(11)" in script and
                                   "torch.rand(7, 5)" in script):
        return "--random inputs are not drawn with torch.manual_seed + torch.rand"
    if "--text" in args and not ("torch.nn.Embedding(50257, 6)" in script and
                                 "torch.nn.Embedding(10, 6)" in script):
        return "--text inputs are not made by chapter 2's nn.Embedding layers"
    return compare(parse_printed_tensor(run_script(path)), shape, want)


def check_script(cli, folder, i, args):
    try:
        problem = script_problem(cli, folder, i, args)
    except Exception as exc:  # a CLI error, or the script raised
        problem = f"{type(exc).__name__}: {exc}"
    if problem:
        raise AssertionError(f"{problem}\n  attnscope-cli code {' '.join(args)}")


def check_standalone(cli, folder, args):
    """As a learner runs it: its own interpreter, nothing imported before."""
    path = os.path.join(folder, "standalone.py")
    with open(path, "w") as f:
        f.write(cli_run(cli, "code", *args))
    proc = subprocess.run([sys.executable, path], capture_output=True, text=True,
                          timeout=120)
    shape, want = output_stage(json.loads(cli_run(cli, "trace", *args)))
    problem = (f"exited {proc.returncode}: {proc.stderr.strip()}" if proc.returncode
               else compare(parse_printed_tensor(proc.stdout), shape, want))
    if problem:
        raise AssertionError(problem)


def main():
    cli = harness.cli_argument("pytorch_code_test.py")
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        all_cases = cases(folder)
        tests = [(name, functools.partial(check_script, cli, folder, i, args))
                 for i, (name, args) in enumerate(all_cases)]
        name, args = all_cases[8]
        tests.append((f"python3 script.py ({name})",
                      functools.partial(check_standalone, cli, folder, args)))
        passed, failed = harness.run_tests(tests, show_passes=True)
    return harness.summary("pytorch_code", passed, failed)


if __name__ == "__main__":
    sys.exit(main())
