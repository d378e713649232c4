#!/usr/bin/env python3
"""cli_smoke_test.py: attnscope-cli's happy paths work.

    python3 cli_smoke_test.py path/to/attnscope-cli

Help and version, the default run (the book's example), text output, config
from standard input, flags overriding the config file, and every variant on
the "shiny" preset.  The numbers themselves are checked against PyTorch by
torch_oracle.py; here only a few book values are spot-checked.
"""

import json
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

TIMEOUT_S = 20
CLI = None  # set in main()

BOOK_TOKENS = ["Your", "journey", "starts", "with", "one", "step"]
SHINY_TOKENS = ["Hello", "shiny", "sun"]
VARIANTS = ["simple", "self_attention_v1", "self_attention_v2", "causal",
            "multihead_wrapper", "multihead"]
CAUSAL = {"causal", "multihead_wrapper", "multihead"}
LAST_STAGE = {"simple": "context", "self_attention_v1": "context",
              "self_attention_v2": "context", "causal": "context",
              "multihead_wrapper": "output", "multihead": "output"}


def run(*args, stdin=None, expect_rc=0):
    """Runs the CLI; asserts the exit code and returns (stdout, stderr)."""
    proc = subprocess.run([CLI, *args], input=(stdin or "").encode(), capture_output=True,
                          timeout=TIMEOUT_S)
    out = proc.stdout.decode("utf-8")
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == expect_rc, (
        f"`attnscope-cli {' '.join(args)}` exited {proc.returncode}, expected {expect_rc}; "
        f"stderr: {err.strip()[:300]!r}")
    return out, err


def trace(*args, stdin=None):
    """Runs `trace` with args and returns the parsed JSON (stderr must be empty)."""
    out, err = run("trace", *args, stdin=stdin)
    assert err == "", f"stderr not empty on success: {err[:200]!r}"
    try:
        return json.loads(out)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"stdout is not valid JSON ({exc}): {out[:200]!r}") from None


def stage(doc, sid, head=-1):
    for s in doc["stages"]:
        if s["id"] == sid and s["head"] == head:
            return s
    raise AssertionError(f"no stage {sid!r} head {head}; have "
                         f"{[(s['id'], s['head']) for s in doc['stages']]}")


def number(v):
    return {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}[v] if isinstance(v, str) else v


def write_config(tmp, name, cfg):
    path = os.path.join(tmp, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path


# ---------------------------------------------------------------------------
# The tests: each raises AssertionError on failure.


def test_help(tmp):
    out, err = run("--help")
    assert "trace" in out, f"--help does not mention the trace subcommand: {out!r}"
    assert "Usage" in out


def test_trace_help(tmp):
    out, _ = run("trace", "--help")
    for flag in ("--config", "--preset", "--variant", "--d-out", "--heads", "--dropout",
                 "--seed", "--qkv-bias", "--eval", "--format"):
        assert flag in out, f"trace --help does not list {flag}"


def test_version(tmp):
    out, _ = run("--version")
    assert re.fullmatch(r"attnscope-cli \d+\.\d+\.\d+\S*\ndata: \S.*\n?", out), \
        f"--version prints {out!r}, expected 'attnscope-cli X.Y.Z' and 'data: DIR'"
    data = out.splitlines()[1][len("data: "):]
    assert os.path.isfile(os.path.join(data, "gpt2", "encoder.json")), \
        f"--version names {data} as the data folder, which has no gpt2/encoder.json"


def test_default_run(tmp):
    doc = trace()
    assert doc["attnscope_trace"] == 1
    assert doc["variant"] == "simple"
    assert doc["tokens"] == BOOK_TOKENS, doc["tokens"]
    assert doc["config"] == {"variant": "simple", "d_in": 3, "d_out": 2, "num_heads": 1,
                             "dropout": 0, "seed": 123, "qkv_bias": False,
                             "training": True}, doc["config"]
    assert [(s["id"], s["head"]) for s in doc["stages"]] == \
        [("inputs", -1), ("scores", -1), ("weights", -1), ("context", -1)]
    for s in doc["stages"]:
        assert len(s["data"]) == s["shape"][0] and \
            all(len(row) == s["shape"][1] for row in s["data"]), f"{s['id']}: shape mismatch"
    assert stage(doc, "inputs")["data"][0] == [0.430000007, 0.150000006, 0.889999986]
    scores = stage(doc, "scores")["data"]
    assert round(scores[0][0], 4) == 0.9995, f"scores[0][0] = {scores[0][0]}, book: 0.9995"
    assert [round(v, 4) for v in scores[1]] == [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]
    for row in stage(doc, "weights")["data"]:
        assert abs(sum(row) - 1) < 1e-5, f"weights row sums to {sum(row)}"
    context = stage(doc, "context")["data"]
    assert [round(v, 4) for v in context[1]] == [0.4419, 0.6515, 0.5683], context[1]


def test_deterministic(tmp):
    a, _ = run("trace", "--variant", "multihead", "--heads", "2", "--d-out", "4",
               "--dropout", "0.5")
    b, _ = run("trace", "--variant", "multihead", "--heads", "2", "--d-out", "4",
               "--dropout", "0.5")
    assert a == b, "two identical runs printed different output"


def test_text_format(tmp):
    for variant in VARIANTS:
        args = ["--preset", "shiny", "--variant", variant, "--heads", "2", "--d-out", "4"]
        text, err = run("trace", *args, "--format", "text")
        assert err == ""
        doc = trace(*args)
        headers = re.findall(r"^== (\S+)(?: \[head (\d+)\])?  \((\d+)x(\d+)\) ==$", text,
                             re.MULTILINE)
        got = [(sid, int(h) if h else -1, [int(r), int(c)]) for sid, h, r, c in headers]
        want = [(s["id"], s["head"], s["shape"]) for s in doc["stages"]]
        assert got == want, f"{variant}: text headers {got} != JSON stages {want}"
        assert variant in text.splitlines()[0], f"first line does not name {variant}"
    text, _ = run("trace", "--variant", "causal", "--format", "text")
    assert "-inf" in text, "causal text output shows no -inf in masked_scores"
    assert "== masked_scores  (6x6) ==" in text
    assert "journey" in text


def test_config_from_stdin(tmp):
    cfg = {"description": "three tokens", "tokens": ["a", "b", "c"],
           "embeddings": [[1, 0], [0, 1], [0.5, 0.25]], "variant": "causal", "d_out": 3,
           "seed": 7}
    doc = trace("--config", "-", stdin=json.dumps(cfg))
    assert doc["tokens"] == ["a", "b", "c"]
    assert doc["variant"] == "causal"
    assert doc["config"]["d_in"] == 2 and doc["config"]["d_out"] == 3
    assert doc["config"]["seed"] == 7
    assert stage(doc, "inputs")["data"] == [[1, 0], [0, 1], [0.5, 0.25]]
    assert stage(doc, "W_query")["shape"] == [2, 3]
    # Same file, same answer.
    path = write_config(tmp, "stdin-twin.json", cfg)
    assert trace("--config", path) == doc, "stdin and file give different traces"


def test_default_tokens(tmp):
    doc = trace("--config", "-", stdin='{"embeddings": [[1], [2], [3]]}')
    assert doc["tokens"] == ["t0", "t1", "t2"], doc["tokens"]


def test_flags_override_config(tmp):
    cfg = {"preset": "shiny", "variant": "causal", "d_out": 2, "num_heads": 1,
           "dropout": 0.0, "seed": 123, "qkv_bias": False, "training": True}
    path = write_config(tmp, "override.json", cfg)
    doc = trace("--config", path)
    assert doc["config"]["d_out"] == 2 and doc["tokens"] == SHINY_TOKENS
    doc = trace("--config", path, "--d-out", "4")
    assert doc["config"]["d_out"] == 4, f"--d-out 4 did not win: {doc['config']}"
    assert stage(doc, "W_query")["shape"] == [3, 4]
    assert stage(doc, "context")["shape"] == [3, 4]
    doc = trace("--config", path, "--variant", "multihead", "--heads", "2", "--d-out", "4",
                "--dropout", "0.5", "--seed", "9", "--qkv-bias", "--eval")
    c = doc["config"]
    assert (c["variant"], c["num_heads"], c["d_out"], c["dropout"], c["seed"], c["qkv_bias"],
            c["training"]) == ("multihead", 2, 4, 0.5, 9, True, False), c
    assert doc["tokens"] == SHINY_TOKENS
    mask = stage(doc, "dropout_mask", 0)["data"]
    assert all(v == 1 for row in mask for v in row), "--eval: dropout_mask is not all ones"
    doc = trace("--config", path, "--preset", "book")
    assert doc["tokens"] == BOOK_TOKENS, "--preset book did not override the file's preset"


def test_random_inputs(tmp):
    # --random gives the inputs; a config file without inputs gives the rest.
    path = write_config(tmp, "no_inputs.json", {"variant": "causal", "d_out": 2})
    doc = trace("--config", path, "--random", "3,2")
    assert doc["tokens"] == ["t0", "t1", "t2"], doc["tokens"]
    assert doc["config"]["variant"] == "causal"
    x = stage(doc, "inputs")
    assert x["shape"] == [3, 2] and all(0 <= v < 1 for row in x["data"] for v in row), x
    other = stage(trace("--random", "3,2", "--input-seed", "7"), "inputs")
    assert other["data"] != x["data"], "--input-seed 7 drew the same inputs as the default seed"
    assert stage(trace("--random", "3,2", "--seed", "9"), "inputs")["data"] == x["data"], \
        "--seed (the weights') changed the random inputs"
    out, _ = run("export", "--random", "4,3", "--stage", "inputs", "--format", "csv", "--out", tmp)
    with open(out.strip(), encoding="utf-8") as f:
        assert len(f.read().strip().split("\n")) >= 4, "the exported inputs lack rows"


def test_every_variant_on_shiny(tmp):
    for variant in VARIANTS:
        for extra in ([], ["--qkv-bias", "--dropout", "0.5"], ["--dropout", "1"]):
            doc = trace("--preset", "shiny", "--variant", variant, "--heads", "2",
                        "--d-out", "4", *extra)
            assert doc["variant"] == variant == doc["config"]["variant"]
            assert doc["tokens"] == SHINY_TOKENS
            ids = [s["id"] for s in doc["stages"]]
            assert ids[0] == "inputs" and ids[-1] == LAST_STAGE[variant], \
                f"{variant}: stages {ids[0]} .. {ids[-1]}"
            for s in doc["stages"]:
                vals = [number(v) for row in s["data"] for v in row]
                # The causal mask's -inf: masked, then scaled (the book's order).
                if s["id"] in ("masked_scores", "scaled_scores") and variant in CAUSAL:
                    assert all(not math.isnan(v) and v != math.inf for v in vals)
                else:
                    assert all(math.isfinite(v) for v in vals), \
                        f"{variant} {extra}: non-finite value in {s['id']}"
            if variant in ("multihead_wrapper", "multihead"):
                assert {s["head"] for s in doc["stages"]} == {-1, 0, 1}


def test_overflow_is_explained_on_stderr(tmp):
    """Embeddings of 1e30 are valid but X.X^T overflows: the trace is printed
    (NaN where PyTorch has NaN) with one warning line saying where and why."""
    cfg = {"tokens": ["a", "b"], "embeddings": [[1e30, 2e30], [-1e30, 1e30]],
           "variant": "simple"}
    out, err = run("trace", "--config", "-", stdin=json.dumps(cfg))
    doc = json.loads(out)
    assert stage(doc, "weights")["data"][0][0] == "nan", stage(doc, "weights")["data"]
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: "), f"stderr: {err!r}"
    for part in ("+inf in scores, row 0 ('a'), column 0 ('a')", "overflowed",
                 "Keep embedding values below about 1e19"):
        assert part in lines[0], f"{part!r} not in {lines[0]!r}"
    # The causal mask's -inf is by design: no warning.
    run_out, run_err = run("trace", "--preset", "book", "--variant", "causal")
    assert run_err == "", f"a masked run warned: {run_err!r}"


def test_bench(tmp):
    """bench prints its configuration, the run statistics and, last, median_ms=<number>."""
    out, err = run("bench", "--variant", "multihead", "--tokens", "8", "--d-in", "16",
                   "--d-out", "16", "--heads", "2", "--dropout", "0.1", "--repeat", "3")
    assert err == "", f"stderr not empty: {err[:200]!r}"
    lines = out.strip().splitlines()
    assert lines[0].startswith("bench: multihead T=8 d_in=16 d_out=16 heads=2 dropout=0.1 training"), lines[0]
    m = re.fullmatch(r"runs=(\d+) min_ms=([0-9.]+) median_ms=([0-9.]+) max_ms=([0-9.]+) "
                     r"peak_rss_mb=([0-9.]+)", lines[1])
    assert m, f"unexpected statistics line: {lines[1]!r}"
    runs, lo, med, hi, rss = int(m.group(1)), *map(float, m.group(2, 3, 4, 5))
    assert runs == 3, runs
    assert 0 < lo <= med <= hi, (lo, med, hi)
    assert rss > 1, rss
    last = re.fullmatch(r"median_ms=([0-9.]+)", lines[-1])
    assert last and float(last.group(1)) == med, f"last line {lines[-1]!r} must repeat the median"


TESTS = [test_bench, test_help, test_trace_help, test_version, test_default_run, test_deterministic,
         test_text_format, test_config_from_stdin, test_default_tokens,
         test_flags_override_config, test_random_inputs, test_every_variant_on_shiny,
         test_overflow_is_explained_on_stderr]


def main():
    global CLI
    CLI = harness.cli_argument("cli_smoke_test.py")
    return harness.run_main("cli_smoke", TESTS, tmp_prefix="attnscope-smoke-")


if __name__ == "__main__":
    sys.exit(main())
