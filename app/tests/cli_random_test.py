#!/usr/bin/env python3
"""cli_random_test.py: `attnscope-cli trace --random T,D` against live PyTorch.

    /usr/bin/python3 cli_random_test.py path/to/attnscope-cli

Random inputs have a seed of their own (--input-seed, default 42), apart from
the weights' --seed (default 123):

    torch.manual_seed(input_seed); x = torch.rand(T, D)
    torch.manual_seed(seed); module = BookClass(D, d_out, ...)

The inputs stage must equal PyTorch's torch.rand bit for bit, and with the
default seeds W_query must not be the inputs' own numbers: under one seed
SelfAttention_v1's W_query = torch.rand(d_in, d_out) repeats the first
d_in * d_out inputs exactly.

Exit status: 0 all passed, 1 any failure, 77 torch is not importable.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

torch = harness.require("cli_random", "torch")

TIMEOUT_S = 60
CLI = None  # set in main()


def stage(doc, sid, head=-1):
    for s in doc["stages"]:
        if s["id"] == sid and s["head"] == head:
            return torch.tensor(s["data"], dtype=torch.float32)
    raise AssertionError(f"no stage {sid!r} head {head}")


def trace(*args):
    proc = subprocess.run([CLI, "trace", *args], capture_output=True, timeout=TIMEOUT_S)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, f"`trace {' '.join(args)}` exited {proc.returncode}: {err!r}"
    return json.loads(proc.stdout)


def rand(seed, rows, cols):
    torch.manual_seed(seed)
    return torch.rand(rows, cols)


def test_input_seed_is_torch_manual_seed():
    doc = trace("--random", "7,5", "--input-seed", "2024", "--variant", "self_attention_v2",
                "--d-out", "3")
    x = stage(doc, "inputs")
    assert torch.equal(x, rand(2024, 7, 5)), "inputs are not torch.rand(7, 5) after manual_seed(2024)"
    assert doc["tokens"] == [f"t{i}" for i in range(7)], doc["tokens"]
    # The weights keep their own seed (123): nn.Linear(5, 3).weight.T after manual_seed(123).
    torch.manual_seed(123)
    w = torch.nn.Linear(5, 3, bias=False).weight.detach().T
    assert torch.equal(stage(doc, "W_query"), w), "W_query is not the seed-123 module's"


def test_default_input_seed_is_42_not_the_weights_seed():
    doc = trace("--random", "64,16", "--variant", "self_attention_v1", "--d-out", "16")
    x = stage(doc, "inputs")
    assert torch.equal(x, rand(42, 64, 16)), "default inputs are not torch.rand after manual_seed(42)"
    w = stage(doc, "W_query")  # (16, 16) = torch.rand(d_in, d_out) after manual_seed(123)
    assert torch.equal(w, rand(123, 16, 16)), "W_query is not torch.rand(16, 16) under seed 123"
    first = x.flatten()[: w.numel()]
    corr = torch.corrcoef(torch.stack([first, w.flatten()]))[0, 1].item()
    assert abs(corr) < 0.3, f"W_query follows the inputs (correlation {corr:.3f})"
    # The same seed for both gives the copy this default avoids.
    same = trace("--random", "64,16", "--input-seed", "123", "--variant", "self_attention_v1",
                 "--d-out", "16")
    assert torch.equal(stage(same, "W_query").flatten(), stage(same, "inputs").flatten()[:256])


TESTS = [test_input_seed_is_torch_manual_seed, test_default_input_seed_is_42_not_the_weights_seed]


def main():
    global CLI
    CLI = harness.cli_argument("cli_random_test.py")
    return harness.run_main("cli_random", TESTS, catch=(json.JSONDecodeError,))


if __name__ == "__main__":
    sys.exit(main())
