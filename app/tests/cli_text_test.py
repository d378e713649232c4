#!/usr/bin/env python3
"""cli_text_test.py: `attnscope-cli trace --text ...` against live PyTorch.

    /usr/bin/python3 cli_text_test.py path/to/attnscope-cli

A typed text becomes the inputs the way the book's chapter 2 builds them:

    ids = GPT-2's token ids of the text        (attnscope-cli tokenize)
    torch.manual_seed(embed_seed)
    tok = nn.Embedding(50257, d_in); pos = nn.Embedding(positions, d_in)  # pos if --positions
    x = tok(ids) + pos(torch.arange(T))

then the chapter-3 module is built from --seed as torch_oracle.py builds it.
The inputs must equal PyTorch's bit for bit; every other stage is compared
as torch_oracle.py compares it (exact for parameters and masks, a relative
tolerance for computed stages).

Exit status: 0 all passed, 1 any failure, 77 torch is not importable.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

torch = harness.require("cli_text", "torch")
nn = torch.nn
import torch_oracle  # noqa: E402

TIMEOUT_S = 60
CLI = None  # set in main()


def cli(*args):
    proc = subprocess.run([CLI, *args], capture_output=True, timeout=TIMEOUT_S)
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8", "replace")


def chapter2_inputs(ids, d_in, seed, positions):
    torch.manual_seed(seed)
    tok = nn.Embedding(50257, d_in)
    pos = nn.Embedding(positions, d_in) if positions else None
    with torch.no_grad():
        x = tok(torch.tensor(ids))
        if pos is not None:
            x = x + pos(torch.arange(len(ids)))
    return x


def check_run(text, variant, d_in, embed_seed, positions, extra=(), cfg_extra=None):
    rc, out, err = cli("tokenize", "--text", text)
    assert rc == 0, f"tokenize exited {rc}: {err!r}"
    tokenized = json.loads(out)
    args = ["trace", "--text", text, "--variant", variant, "--d-in", str(d_in),
            "--embed-seed", str(embed_seed), "--format", "json", *extra]
    if positions:
        args += ["--positions", str(positions)]
    rc, out, err = cli(*args)
    assert rc == 0, f"`{' '.join(args)}` exited {rc}: {err!r}"
    doc = json.loads(out)
    assert doc["tokens"] == tokenized["tokens"], f"tokens {doc['tokens']} != {tokenized['tokens']}"
    x = chapter2_inputs(tokenized["ids"], d_in, embed_seed, positions)
    cfg = {"variant": variant, "d_out": 2, "num_heads": 1, "dropout": 0.0, "seed": 123,
           "qkv_bias": False, "training": True}
    cfg.update(cfg_extra or {})
    assert doc["config"] == dict(cfg, d_in=d_in), f"config echo {doc['config']}"
    ref_stages, _, problems = torch_oracle.run_torch(cfg, x)
    assert not problems, problems
    by_key = {(s["id"], s["head"]): s for s in doc["stages"]}
    assert list(by_key) == torch_oracle.expected_stage_keys(cfg), list(by_key)
    for sid, head, ref in ref_stages:
        got = torch_oracle.stage_tensor(by_key[(sid, head)])
        problem = torch_oracle.compare_stage(sid, head, got, ref)  # "inputs" is bit-exact
        assert problem is None, problem


def test_book_sentence_causal_with_positions():
    check_run("Your journey starts with one step", "causal", 4, 123, 8)


def test_no_positions_and_a_tail_block():
    # 50257 * 5 % 16 != 0: the last 16 normals of the table are redrawn
    check_run("Hello, world! Ünïcödé 🙂 <|endoftext|>", "multihead", 5, 7, 0,
              ["--heads", "2", "--d-out", "4", "--dropout", "0.1", "--seed", "9"],
              {"variant": "multihead", "num_heads": 2, "d_out": 4, "dropout": 0.1, "seed": 9})


def test_wide_embeddings_and_short_positional_table():
    # 50257 * 16 has no tail; 3 x 1 positions (< 16 normals) take PyTorch's double path
    check_run("one two three", "self_attention_v2", 16, 2024, 3)
    check_run("one two three", "self_attention_v1", 1, 5, 3)


def test_bad_combinations_name_both_flags():
    cases = [
        (["--text", "a b", "--preset", "book"], "--text and --preset"),
        (["--text", "a b", "--random", "3,3"], "--text and --random"),
        (["--text-file", "-", "--embeddings", "x.csv"], "--text-file and --embeddings"),
        (["--text", "a b c", "--positions", "2"], "raise --positions to at least 3"),
        (["--d-in", "4"], "--d-in shapes the embeddings of --text"),
        (["--text", "a", "--d-in", "0"], "--d-in (0)"),
        (["--text", ""], "no tokens"),
        (["--text-file", "-", "--config", "-"], "both read standard input"),
    ]
    for args, want in cases:
        rc, out, err = cli("trace", *args)
        assert rc == 2 and out == "", f"{args}: exit {rc}, stdout {out[:80]!r}"
        assert err.startswith("error: ") and err.count("\n") == 1 and want in err, \
            f"{args}: stderr {err!r} lacks {want!r}"


TESTS = [test_book_sentence_causal_with_positions, test_no_positions_and_a_tail_block,
         test_wide_embeddings_and_short_positional_table, test_bad_combinations_name_both_flags]


def main():
    global CLI
    CLI = harness.cli_argument("cli_text_test.py")
    return harness.run_main("cli_text", TESTS, catch=(json.JSONDecodeError, KeyError))


if __name__ == "__main__":
    sys.exit(main())
