#!/usr/bin/env python3
"""cli_model_compare_test.py: `attnscope-cli model compare A B` against the
numbers computed here from `model trace --format json` of A and of B.

    python3 cli_model_compare_test.py path/to/attnscope-cli

Two tiny GPT-2 checkpoints of one shape and different random weights
(cli_model_run_test.py's writer, standard library only; with PyTorch also
two of the book's GPTModel .pth files from model_fixtures.py), run on a
40-token text: each head's mean |B - A| over the cells a query sees and the
largest |B - A| and where it is; --layer with --head gives both weight
matrices and their difference; a model against itself differs nowhere;
models of two shapes are refused naming both; a missing B is an error.
"""

import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import cli_model_run_test as tiny  # noqa: E402

TIMEOUT_S = 60
POSITIONS = 64
# 40 tokens: more than 32, where the engine's row blocks start to split.
TEXT = ("The attention mechanism lets every token look back at the tokens before it, "
        "and training changes where each head looks, one small step at a time, until the "
        "model has read the whole sentence once more.")
CLI = None
SKIPPED = []


def run(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=TIMEOUT_S)


WRITTEN = {}  # (seed, heads) -> folder: each model is written once (most of the test's time)


def write_tiny(folder, seed, heads=tiny.H):
    """A 2-layer GPT-2 folder with room for 64 tokens and `heads` heads (or
    the folder already written for them)."""
    if (seed, heads) in WRITTEN:
        return WRITTEN[(seed, heads)]
    WRITTEN[(seed, heads)] = folder
    rng = random.Random(seed)
    tensors = tiny.tiny_gpt2(rng)
    tensors["wpe.weight"] = ([POSITIONS, tiny.D],
                             [rng.gauss(0, 0.3) for _ in range(POSITIONS * tiny.D)])
    return tiny.write_model(folder, tensors, {
        "model_type": "gpt2", "n_layer": tiny.L, "n_head": heads, "n_embd": tiny.D,
        "n_positions": POSITIONS})


def json_of(*args):
    p = run(*args)
    assert p.returncode == 0, f"{' '.join(args)}: exit {p.returncode}: {p.stderr}"
    return json.loads(p.stdout)


def weights_of(args):
    """(layer, head) -> T x T weights from `model trace --stages weights`."""
    doc = json_of("model", "trace", *args, "--text", TEXT, "--stages", "weights")
    return {(s["layer"], s["head"]): s["data"] for s in doc["stages"]}, doc["ids"]


def expected(wa, wb):
    """mean |B - A| over key <= query, the largest and its first cell, row by row."""
    total, best, at = 0.0, 0.0, (0, 0)
    T = len(wa)
    for i in range(T):
        for j in range(i + 1):
            d = abs(wb[i][j] - wa[i][j])
            total += d
            if d > best:
                best, at = d, (i, j)
    return total / (T * (T + 1) / 2), best, at


def check_against_traces(args_a, args_b, extra=()):
    """compare's per-head numbers are those of the two traces' weights."""
    wa, ids = weights_of(args_a)
    wb, ids_b = weights_of(args_b)
    assert ids == ids_b and len(ids) >= 40, f"{len(ids)} tokens, ids equal: {ids == ids_b}"
    doc = json_of("model", "compare", args_a[0], args_b[0], *extra, "--text", TEXT)
    assert doc["tokens"] == len(ids) and doc["ids"] == ids, doc["ids"]
    assert len(doc["per_head"]) == len(wa), f"{len(doc['per_head'])} heads, traces {len(wa)}"
    for h in doc["per_head"]:
        key = (h["layer"], h["head"])
        mean, best, at = expected(wa[key], wb[key])
        assert abs(h["mean_abs"] - mean) <= 1e-6 * max(mean, 1e-3), f"{key}: {h} vs {mean}"
        # %.9g values: the subtraction here is in double, the engine's in float.
        assert abs(h["max_abs"] - best) <= 1e-6, f"{key}: max {h['max_abs']} vs {best}"
        assert h["max_abs"] > 0, f"{key}: other weights gave the same map"
        cell = (h["max_query"], h["max_key"])
        got = abs(wb[key][cell[0]][cell[1]] - wa[key][cell[0]][cell[1]])
        assert abs(got - best) <= 1e-6, f"{key}: the largest is at {at}, compare says {cell}"
    most = max(doc["per_head"], key=lambda h: h["mean_abs"])
    assert doc["most_changed"]["mean_abs"] == most["mean_abs"], doc["most_changed"]
    return wa, wb


def test_two_safetensors_models_differ_as_their_traces_say(tmp):
    a = write_tiny(os.path.join(tmp, "a"), 5)
    b = write_tiny(os.path.join(tmp, "b"), 6)
    wa, wb = check_against_traces([a], [b])
    # One head: its numbers and both matrices and their difference.
    doc = json_of("model", "compare", a, b, "--text", TEXT, "--layer", "1", "--head", "0")
    assert [(h["layer"], h["head"]) for h in doc["per_head"]] == [(1, 0)], doc["per_head"]
    assert doc["same_file"] is False
    for name, want in (("weights_a", wa[(1, 0)]), ("weights_b", wb[(1, 0)])):
        assert doc[name] == want, f"{name} is not the trace's weights"
    diff = doc["difference"]
    for i, row in enumerate(diff):
        for j, v in enumerate(row):
            assert abs(v - (wb[(1, 0)][i][j] - wa[(1, 0)][i][j])) <= 1e-7, f"difference ({i}, {j})"
    # --layer alone: every head of that layer.
    doc = json_of("model", "compare", a, b, "--text", TEXT, "--layer", "0")
    assert [(h["layer"], h["head"]) for h in doc["per_head"]] == [(0, 0), (0, 1)]
    p = run("model", "compare", a, b, "--text", TEXT, "--format", "text")
    assert p.returncode == 0 and "most changed: layer" in p.stdout, p.stdout + p.stderr


def test_a_model_against_itself_differs_nowhere(tmp):
    a = write_tiny(os.path.join(tmp, "same"), 5)
    doc = json_of("model", "compare", a, a, "--text", TEXT)
    assert doc["same_file"] is True
    for h in doc["per_head"]:
        assert h["mean_abs"] == 0 and h["max_abs"] == 0, h


def expect_error(args, *needles):
    p = run(*args)
    lines = p.stderr.splitlines()
    assert p.returncode == 2 and not p.stdout and len(lines) == 1 and \
        lines[0].startswith("error: "), f"{' '.join(args)}: exit {p.returncode}: {p.stderr!r}"
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"


def test_models_of_two_shapes_are_refused_naming_both(tmp):
    a = write_tiny(os.path.join(tmp, "two"), 5)
    b = write_tiny(os.path.join(tmp, "four"), 6, heads=4)
    expect_error(["model", "compare", a, b, "--text", TEXT],
                 "2 layers × 2 heads", "2 layers × 4 heads")
    expect_error(["model", "compare", a, os.path.join(tmp, "missing"), "--text", TEXT], "missing")
    expect_error(["model", "compare", a, a, "--text", TEXT, "--layer", "2"], "layer 2")


def test_two_book_pth_files(tmp):
    try:
        import model_fixtures  # needs torch and numpy
    except ImportError as exc:
        SKIPPED.append(f"book .pth pair: cannot import model_fixtures ({exc})")
        return
    fa = model_fixtures.write_book_fixture(os.path.join(tmp, "epoch1"), "book_pth", seed=1)
    fb = model_fixtures.write_book_fixture(os.path.join(tmp, "epoch10"), "book_pth", seed=10)
    check_against_traces(fa.args, fb.args, ("--config", fa.args[2], "--config-b", fb.args[2]))


TESTS = [test_two_safetensors_models_differ_as_their_traces_say,
         test_a_model_against_itself_differs_nowhere,
         test_models_of_two_shapes_are_refused_naming_both,
         test_two_book_pth_files]


def main():
    global CLI
    CLI = harness.cli_argument("cli_model_compare_test.py")
    with tempfile.TemporaryDirectory(prefix="attnscope-compare-") as tmp:
        passed, failed = harness.run_tests(TESTS, tmp)
    return harness.summary("cli_model_compare", passed, failed, skipped_parts=SKIPPED)


if __name__ == "__main__":
    sys.exit(main())
