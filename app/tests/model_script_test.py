#!/usr/bin/env python3
"""model_script_test.py: `attnscope-cli model script` scripts print what `model trace` gives.

    /usr/bin/python3 model_script_test.py path/to/attnscope-cli

On tiny book-style GPTModel .pth files (model_fixtures.py: a bare state_dict
with qkv_bias false, one with qkv_bias true, chapter 5's training checkpoint
under "model_state_dict"), the test asks `model script` for the script, runs
it with the PyTorch this interpreter imports, and compares the printed
attention weights of the chosen layer and head and the printed next tokens
(id, logit, probability) with `model trace --format json` on the same text,
at about 20 tokens and at 40 (more than 32). Scripts run in this process
(runpy, stdout captured: torch is imported once) except one, which runs as
its own `python3 script.py`, as a learner would. Also: the models that have
no script (a Hugging Face folder, the book's GPTModel as .safetensors) and
a layer or head the model lacks are refused with one line that says why.

Exit status: 0 passed, 1 any failure, 77 torch is not importable (skipped).
"""

import contextlib
import io
import json
import os
import re
import runpy
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

torch, mf = harness.require("model_script_test", "torch", "model_fixtures", what="torch/numpy")
torch.set_num_threads(1)

CLI = None
FIXTURES = {}  # name -> model_fixtures.Fixture, written once into the run's folder

# The engine and PyTorch sum in other orders (model_oracle_test.py: the two
# PyTorch references differ by ~3e-7 on weights and ~2e-6 on logits here).
WEIGHTS_TOL = 1e-5     # absolute; weights are in [0, 1]
LOGITS_REL_TOL = 1e-5  # times max(1, max |logit|)
PROB_TOL = 1e-6        # absolute, plus 1e-5 relative

TEXT_20 = "The attention mechanism lets every token look back at the tokens before it, as GPT-2 does."
TEXT_40 = ("Attention lets each token of a sentence look back at the tokens before it, weigh them "
           "by how well its query matches their keys, and sum their values into a new vector for "
           "the next layer.")  # 40 of GPT-2's tokens


def cli(*args, check=True):
    proc = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=60)
    if check:
        assert proc.returncode == 0, \
            f"attnscope-cli {' '.join(map(str, args))} exited {proc.returncode}: {proc.stderr.strip()}"
    return proc


def fixture(tmp, name):
    if name not in FIXTURES:
        FIXTURES[name] = mf.write_fixture(tmp, name)
    return FIXTURES[name]


def run_script(tmp, script, own_process=False):
    """The script's stdout: run here with runpy, or as `python3 script.py`."""
    path = os.path.join(tmp, "run.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(script)
    if own_process:
        proc = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, OMP_NUM_THREADS="1"))
        assert proc.returncode == 0, f"python3 run.py exited {proc.returncode}: {proc.stderr[-2000:]}"
        return proc.stdout
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(path, run_name="__main__")
    return out.getvalue()


def parse_printed(text):
    """(weights rows, [(rank, id, logit, probability)]) from the script's lines."""
    rows, nexts = [], []
    for line in text.splitlines():
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if parts[0] == "weights":
            assert int(parts[1]) == len(rows), f"weights rows out of order: {line[:60]}"
            rows.append([float(v) for v in parts[2:]])
        elif parts[0] == "next":
            nexts.append((int(parts[1]), int(parts[2]), float(parts[3]), float(parts[4])))
        else:
            raise AssertionError(f"unexpected line in the script's output: {line[:80]}")
    return rows, nexts


def check_against_trace(printed, doc, layer, head, top):
    rows, nexts = parse_printed(printed)
    stages = {(s["id"], s["layer"], s["head"]): s for s in doc["stages"]}
    want = stages[("weights", layer, head)]["data"]
    T = len(want)
    assert len(rows) == T and all(len(r) == T for r in rows), \
        f"printed {len(rows)} rows, the trace's weights are {T} x {T}"
    worst = max(abs(g - float(w)) for gr, wr in zip(rows, want) for g, w in zip(gr, wr))
    assert worst <= WEIGHTS_TOL, f"weights differ from the trace's by {worst:.3g}"

    logits = [float(v) for v in stages[("logits", -1, -1)]["data"][-1]]
    tol = LOGITS_REL_TOL * max(1.0, max(abs(v) for v in logits))
    assert [n[0] for n in nexts] == list(range(top)), f"ranks {[n[0] for n in nexts]}"
    by_logit = sorted(range(len(logits)), key=lambda i: -logits[i])
    probability = {n["id"]: n["probability"] for n in doc["next_token"]}
    for rank, token, logit, p in nexts:
        assert abs(logit - logits[token]) <= tol, \
            f"rank {rank}: id {token}'s logit {logit} vs the trace's {logits[token]}"
        other = by_logit[rank]  # the trace's token at this rank: the same unless tied
        assert token == other or abs(logits[token] - logits[other]) <= tol, \
            f"rank {rank}: the script says id {token}, the trace id {other}"
        if token in probability:
            want_p = probability[token]
            assert abs(p - want_p) <= PROB_TOL + 1e-5 * want_p, \
                f"rank {rank}: probability {p} vs the trace's {want_p}"
    return T


def trace_doc(fx, text_args, layer, head):
    return json.loads(cli("model", "trace", *fx.args, *text_args, "--layers", layer, "--heads",
                          head, "--stages", "weights,logits", "--format", "json").stdout)


def script_matches(tmp, name, text_args, layer, head, top, own_process=False):
    fx = fixture(tmp, name)
    script = cli("model", "script", *fx.args, *text_args, "--layer", layer, "--head", head,
                 "--top", top).stdout
    assert f"LAYER = {layer}" in script and f"HEAD = {head}" in script, "LAYER/HEAD not in the script"
    printed = run_script(tmp, script, own_process)
    return script, check_against_trace(printed, trace_doc(fx, text_args, layer, head), layer, head,
                                       top)


# ---------------------------------------------------------------------------
# Tests


def test_bare_state_dict_at_about_20_tokens(tmp):
    script, T = script_matches(tmp, "book_pth", ["--text", TEXT_20], 1, 2, 5, own_process=True)
    assert 15 <= T <= 25, f"the text has {T} tokens"
    assert "#   " + TEXT_20 in script, "the text is not in a comment"
    assert '"qkv_bias": False' in script


def test_qkv_bias_at_40_tokens(tmp):
    script, T = script_matches(tmp, "book_pth_qkv_bias", ["--text", TEXT_40], 0, 3, 8)
    assert T == 40, f"the text has {T} tokens"
    assert '"qkv_bias": True' in script


def test_training_checkpoint_with_ids(tmp):
    ids = [6109, 3626, 6100, 345]  # "Every effort moves you"
    script, T = script_matches(tmp, "book_checkpoint", ["--ids", ",".join(map(str, ids))], 0, 0, 3)
    assert T == 4
    literal = "ids = [\n" + "".join(f"    {i},  # " + '"' for i in ids[:1])
    assert literal in script and "    345,  # \" you\"\n]" in script, \
        "the ids are not written as a list literal with their tokens"
    assert "#   Every effort moves you\n" in script, "the ids' text is not in a comment"


def expect_refused(proc, *words):
    assert proc.returncode == 2, f"exit {proc.returncode}, stderr {proc.stderr.strip()!r}"
    assert proc.stdout == "", "a refused script printed something"
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), f"stderr {err!r}"
    for w in words:
        assert w in err, f"{w!r} not in {err!r}"


def test_hugging_face_folder_is_refused(tmp):
    fx = fixture(tmp, "f32")
    expect_refused(cli("model", "script", *fx.args, "--text", "Hi", check=False),
                   ".pth", "model trace")


def test_book_safetensors_is_refused(tmp):
    fx = fixture(tmp, "book_safetensors")
    expect_refused(cli("model", "script", *fx.args, "--text", "Hi", check=False),
                   ".pth", "model trace")


def test_layer_and_head_out_of_range_are_refused(tmp):
    fx = fixture(tmp, "book_pth")
    cfg = fx.cfg
    expect_refused(cli("model", "script", *fx.args, "--text", "Hi", "--layer", cfg["n_layer"],
                       check=False), "--layer", str(cfg["n_layer"] - 1))
    expect_refused(cli("model", "script", *fx.args, "--text", "Hi", "--head", -1, check=False),
                   "--head", f"0..{cfg['n_head'] - 1}")
    expect_refused(cli("model", "script", *fx.args, "--text", "Hi", "--top", 0, check=False),
                   "--top")


TESTS = [
    test_bare_state_dict_at_about_20_tokens,
    test_qkv_bias_at_40_tokens,
    test_training_checkpoint_with_ids,
    test_hugging_face_folder_is_refused,
    test_book_safetensors_is_refused,
    test_layer_and_head_out_of_range_are_refused,
]


def main():
    global CLI
    CLI = harness.cli_argument("model_script_test.py")
    return harness.run_main("model_script", TESTS, tmp_prefix="attnscope-model-script-")


if __name__ == "__main__":
    sys.exit(main())
