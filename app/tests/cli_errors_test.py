#!/usr/bin/env python3
"""cli_errors_test.py: every bad input to attnscope-cli fails cleanly.

    python3 cli_errors_test.py path/to/attnscope-cli

The contract (docs/trace-format.md, "Errors"): bad input ends with exit code
2, nothing on standard output, and exactly one line on standard error that
starts with "error: " and names the problem.  Each case below also names a
substring the message must contain, so that the message stays helpful.
A crash, a hang (20 s) or any other exit code is a failure.
"""

import functools
import json
import os
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

TIMEOUT_S = 20

ONE = {"embeddings": [[0.1, 0.2], [0.3, 0.4]]}  # a valid base config


def with_fields(**fields):
    return json.dumps(dict(ONE, **fields))


# (name, config file text or None, extra argv, standard input or None, expected
# substring of the error line).  A config text is written to a file and passed
# as --config FILE, before the extra argv.
CONFIG_CASES = [
    # Not a JSON object at all.
    ("malformed JSON", '{"embeddings": [[1, 2]', "is not valid JSON"),
    ("trailing garbage", '{"embeddings": [[1]]} x', "is not valid JSON"),
    ("empty file", "", "is empty"),
    ("whitespace-only file", " \n\t\n", "is empty"),
    ("JSON array", "[1, 2]", "must be a JSON object"),
    ("JSON number", "3", "must be a JSON object"),
    ("JSON string", '"embeddings"', "must be a JSON object"),
    # Embeddings.
    ("no embeddings and no preset", '{"variant": "causal"}', "no embeddings"),
    ("embeddings not a list", '{"embeddings": 5}', "embeddings must be a list"),
    ("embeddings an object", '{"embeddings": {"a": [1]}}', "embeddings must be a list"),
    ("ragged rows", '{"embeddings": [[1, 2], [3]]}', "ragged"),
    ("row not a list", '{"embeddings": [[1, 2], 3]}', "embeddings[1] must be a list"),
    ("empty embeddings", '{"embeddings": []}', "embeddings is empty"),
    ("empty row", '{"embeddings": [[]]}', "embeddings[0] is empty"),
    ("string cell", '{"embeddings": [[1, "a"]]}', "embeddings[0][1] must be a number"),
    ("null cell", '{"embeddings": [[1, null]]}', "embeddings[0][1] must be a number"),
    ("boolean cell", '{"embeddings": [[true, 1]]}', "embeddings[0][0] must be a number"),
    ("cell too large for float32", '{"embeddings": [[1e39]]}', "too large for a 32-bit float"),
    ("cell beyond double range", '{"embeddings": [[1e999]]}', "1e999"),
    ("T = 4097 rows", json.dumps({"embeddings": [[0.5]] * 4097}), "too many tokens"),
    ("d_in = 4097", json.dumps({"embeddings": [[0.5] * 4097]}), "d_in (4097)"),
    # Tokens.
    ("tokens count != rows", with_fields(tokens=["a"]), "1 token name was given for 2 rows"),
    ("tokens not strings", with_fields(tokens=["a", 3]), "tokens[1] must be a string"),
    ("tokens not a list", with_fields(tokens="ab"), "tokens must be a list"),
    ("preset with wrong token count", '{"preset": "book", "tokens": ["a"]}', "given for 6 rows"),
    # Hyper-parameters.
    ("d_out a fraction", with_fields(d_out=2.5), "d_out must be a whole number"),
    ("d_out a string", with_fields(d_out="2"), "d_out must be a whole number"),
    ("d_out a boolean", with_fields(d_out=True), "d_out must be a whole number"),
    ("d_out 0", with_fields(d_out=0), "d_out (0) must be between 1 and 4096"),
    ("d_out 4097", with_fields(d_out=4097), "d_out (4097) must be between 1 and 4096"),
    ("d_out 1e20", with_fields(d_out=1e20), "d_out"),
    ("num_heads 0", with_fields(num_heads=0), "num_heads (0) must be between 1 and 64"),
    ("num_heads 65", with_fields(num_heads=65), "num_heads (65) must be between 1 and 64"),
    ("dropout -0.1", with_fields(dropout=-0.1), "dropout (-0.1) must be between 0 and 1"),
    ("dropout 1.5", with_fields(dropout=1.5), "dropout (1.5) must be between 0 and 1"),
    ("dropout a string", with_fields(dropout="x"), "dropout must be a number"),
    ("dropout beyond double range", '{"embeddings": [[1]], "dropout": 1e999}', "1e999"),
    ("unknown variant", with_fields(variant="nope"), "unknown variant 'nope'"),
    ("variant not a string", with_fields(variant=3), "variant must be a string"),
    ("unknown preset", '{"preset": "nope"}', "unknown preset 'nope'"),
    ("preset not a string", '{"preset": 3}', "preset must be a string"),
    ("unknown field", with_fields(colour=1), "unknown field 'colour'"),
    ("negative seed", with_fields(seed=-1), "seed (-1) must be a whole number"),
    ("seed a string", with_fields(seed="1"), "seed must be a whole number"),
    ("seed 2**64", '{"embeddings": [[1]], "seed": 18446744073709551616}', "seed must be"),
    ("qkv_bias 1", with_fields(qkv_bias=1), "qkv_bias must be true or false"),
    ("training a string", with_fields(training="yes"), "training must be true or false"),
    ("description a number", with_fields(description=3), "description must be a string"),
]


def build_cases(tmp):
    """Returns [(name, argv, stdin text, expected substring or exact line[, env])]."""
    cases = []
    for i, (name, text, expect) in enumerate(CONFIG_CASES):
        path = os.path.join(tmp, f"case{i:02d}.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        cases.append((name, ["trace", "--config", path], None, expect))

    good = os.path.join(tmp, "good.json")
    with open(good, "w", encoding="utf-8") as f:
        f.write(with_fields(d_out=2))
    cases += [
        # The one message the brief pins down word for word.
        ("multihead d_out 5, num_heads 2 (config)",
         ["trace", "--config", os.path.join(tmp, "d5h2.json")], None,
         "=error: d_out (5) must be divisible by num_heads (2)"),
        ("multihead d_out 5, num_heads 2 (flags)",
         ["trace", "--variant", "multihead", "--d-out", "5", "--heads", "2"], None,
         "=error: d_out (5) must be divisible by num_heads (2)"),
        # `code` resolves its run as trace does, and prints no script for a bad one.
        ("code: multihead d_out 5, num_heads 2",
         ["code", "--variant", "multihead", "--d-out", "5", "--heads", "2"], None,
         "=error: d_out (5) must be divisible by num_heads (2)"),
        # Standard input.
        ("empty stdin", ["trace", "--config", "-"], "", "standard input: is empty"),
        ("array on stdin", ["trace", "--config", "-"], "[1]",
         "standard input: must be a JSON object"),
        ("malformed stdin", ["trace", "--config", "-"], "{", "standard input: is not valid JSON"),
        # Files that cannot be read.
        ("missing config file", ["trace", "--config", os.path.join(tmp, "missing.json")], None,
         "cannot open"),
        ("config is a directory", ["trace", "--config", tmp], None, "directory"),
        # The same mistakes through flags; a bad flag beats a good file.
        ("--d-out 0", ["trace", "--d-out", "0"], None, "d_out (0) must be between 1 and 4096"),
        ("--d-out 4097", ["trace", "--d-out", "4097"], None, "d_out (4097)"),
        ("--d-out -3", ["trace", "--d-out", "-3"], None, "d_out (-3)"),
        ("--d-out abc", ["trace", "--d-out", "abc"], None, "--d-out"),
        ("--d-out 2.5", ["trace", "--d-out", "2.5"], None, "--d-out"),
        ("--d-out 0 over a good file", ["trace", "--config", good, "--d-out", "0"], None,
         "d_out (0)"),
        ("--dropout 2", ["trace", "--dropout", "2"], None, "dropout (2) must be between 0 and 1"),
        ("--dropout -0.5", ["trace", "--dropout", "-0.5"], None, "dropout (-0.5)"),
        ("--dropout nan", ["trace", "--dropout", "nan"], None, "dropout"),
        ("--dropout x", ["trace", "--dropout", "x"], None, "--dropout"),
        ("--variant nope", ["trace", "--variant", "nope"], None, "unknown variant 'nope'"),
        ("--preset nope", ["trace", "--preset", "nope"], None, "unknown preset 'nope'"),
        ("--heads 0", ["trace", "--heads", "0"], None, "num_heads (0) must be between 1 and 64"),
        ("--heads 65", ["trace", "--heads", "65"], None, "num_heads (65)"),
        ("--seed abc", ["trace", "--seed", "abc"], None, "--seed"),
        ("--seed -1", ["trace", "--seed", "-1"], None, "seed"),
        ("--seed 2**64", ["trace", "--seed", "18446744073709551616"], None, "seed"),
        # Random inputs (--random T,D, --input-seed S).
        ("--random 0,3", ["trace", "--random", "0,3"], None,
         "=error: --random '0,3' must be T,D with T from 1 to 4096 and D from 1 to 4096, "
         "e.g. 1024,768"),
        ("--random 5", ["trace", "--random", "5"], None, "--random '5' must be T,D"),
        ("--random 5,4097", ["trace", "--random", "5,4097"], None, "D from 1 to 4096"),
        ("--random a,b", ["trace", "--random", "a,b"], None, "--random 'a,b'"),
        ("--random 3,3,3", ["export", "--random", "3,3,3", "--format", "csv", "--out", tmp],
         None, "--random '3,3,3'"),
        ("--input-seed -1", ["trace", "--random", "4,3", "--input-seed", "-1"], None,
         "=error: --input-seed (-1) must be a whole number from 0 to 18446744073709551615"),
        ("--input-seed without --random", ["trace", "--input-seed", "7"], None,
         "--input-seed is the seed of --random's inputs: add --random T,D"),
        ("--random with --preset", ["trace", "--random", "4,3", "--preset", "shiny"], None,
         "--random and --preset both give the inputs"),
        ("--random with --embeddings", ["trace", "--random", "4,3", "--embeddings", good], None,
         "--random and --embeddings both give the inputs"),
        ("--random with a config's embeddings", ["trace", "--config", good, "--random", "4,3"],
         None, "--random and the config file's tokens/embeddings both give the inputs"),
        ("--format xml", ["trace", "--format", "xml"], None, "--format"),
        ("--config without a value", ["trace", "--config"], None, "--config"),
        ("unknown flag", ["trace", "--frobnicate"], None, "--frobnicate"),
        ("no subcommand", [], None, "A subcommand is required"),
        # These two say "A subcommand is required" without naming the bad
        # word (CLI11 checks for the subcommand first); only the contract and
        # the pointer to --help are asserted.
        ("unknown top-level flag", ["--frobnicate"], None, "attnscope-cli --help"),
        ("unknown subcommand", ["frob"], None, "attnscope-cli --help"),
        # bench: the same contract.
        ("bench --tokens 0", ["bench", "--tokens", "0"], None,
         "--tokens and --d-in must be between 1 and 4096"),
        ("bench --d-in 5000", ["bench", "--d-in", "5000"], None, "between 1 and 4096"),
        ("bench --heads 5 (d_out 768)", ["bench", "--tokens", "4", "--heads", "5"], None,
         "d_out (768) must be divisible by num_heads (5)"),
        ("bench --variant nope", ["bench", "--variant", "nope"], None, "unknown variant 'nope'"),
        ("bench --repeat 0", ["bench", "--repeat", "0"], None, "--repeat"),
        ("bench --dropout 2", ["bench", "--tokens", "4", "--dropout", "2"], None, "dropout (2)"),
        # A trace larger than the memory left (here a 100 MB budget; the
        # GPT-2 sized trace needs 360 MB) is refused before it is computed.
        ("bench over the memory budget", ["bench", "--tokens", "1024"], None,
         "this trace needs 360 MB of memory and 100 MB is available: try fewer tokens",
         {"ATTNSCOPE_MEMORY_LIMIT_MB": "100"}),
        ("trace over the memory budget",
         ["trace", "--preset", "book", "--variant", "multihead", "--d-out", "2048", "--heads", "2"],
         None, "this trace needs", {"ATTNSCOPE_MEMORY_LIMIT_MB": "0"}),
    ]
    with open(os.path.join(tmp, "d5h2.json"), "w", encoding="utf-8") as f:
        f.write(with_fields(variant="multihead", d_out=5, num_heads=2))
    return cases


def check(cli, name, argv, stdin, expect, env=None):
    """Runs one case (with env added to the environment); returns a problem or None."""
    cmd = [cli] + argv
    try:
        proc = subprocess.run(cmd, input=(stdin or "").encode(), capture_output=True,
                              timeout=TIMEOUT_S, env=dict(os.environ, **(env or {})))
    except subprocess.TimeoutExpired:
        return f"hung: no exit within {TIMEOUT_S} s"
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 2:
        what = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else \
            f"exit code {proc.returncode}"
        return (f"{what}, expected 2\n    stderr: {err[:300]!r}\n    stdout: {out[:120]!r}"
                + (" ..." if len(out) > 120 else ""))
    problems = []
    if out:
        problems.append(f"stdout is not empty ({len(out)} chars): {out[:120]!r}")
    lines = err.split("\n")
    if not (len(lines) == 2 and lines[1] == ""):
        problems.append(f"stderr is not exactly one line: {err[:300]!r}")
    line = lines[0]
    if not line.startswith("error: "):
        problems.append(f"stderr does not start with 'error: ': {line[:200]!r}")
    if expect.startswith("="):
        if line != expect[1:]:
            problems.append(f"message is {line!r}, expected exactly {expect[1:]!r}")
    elif expect not in line:
        problems.append(f"message {line!r} does not mention {expect!r}")
    return "; ".join(problems) or None


def expect_clean_error(cli, name, argv, stdin, expect, env=None):
    """One case as a test: raises AssertionError with the problem, the command
    and the start of its config file."""
    problem = check(cli, name, argv, stdin, expect, env)
    if problem is None:
        return
    message = (f"{problem}\n  command: {shlex.join([cli] + argv)}"
               + (f" < {stdin!r}" if stdin is not None else ""))
    if len(argv) >= 3 and argv[1] == "--config" and os.path.isfile(argv[2]):
        with open(argv[2], encoding="utf-8") as f:
            text = f.read()
        message += f"\n  config: {text[:200]!r}" + (" ..." if len(text) > 200 else "")
    raise AssertionError(message)


def main():
    cli = harness.cli_argument("cli_errors_test.py")
    with tempfile.TemporaryDirectory(prefix="attnscope-errors-") as tmp:
        tests = [(case[0], functools.partial(expect_clean_error, cli, *case))
                 for case in build_cases(tmp)]
        passed, failed = harness.run_tests(tests)
    return harness.summary("cli_errors", passed, failed)


if __name__ == "__main__":
    sys.exit(main())
