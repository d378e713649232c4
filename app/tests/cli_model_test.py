#!/usr/bin/env python3
"""cli_model_test.py: `attnscope-cli model info PATH` on checkpoints written here.

    python3 cli_model_test.py path/to/attnscope-cli

Writes small GPT-2 folders (config.json + model.safetensors, or an index
and two shards) byte by byte with struct (no safetensors package), checks
the JSON the command prints, and that bad folders and files exit 2 with one
"error: " line naming the problem.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

TIMEOUT_S = 20


def safetensors(tensors, pad=True):
    """tensors: name -> (dtype, shape, raw bytes). Returns the file's bytes."""
    header, buf = {"__metadata__": {"format": "pt"}}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(buf), len(buf) + len(raw)]}
        buf += raw
    text = json.dumps(header).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + buf


def run(cli, *args):
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=TIMEOUT_S)


def expect_error(cli, path, needle, failures):
    p = run(cli, "model", "info", path)
    lines = p.stderr.splitlines()
    if p.returncode != 2 or p.stdout or len(lines) != 1 or not lines[0].startswith("error: ") \
            or needle not in lines[0]:
        failures.append(f"{path}: want exit 2 and one error line with {needle!r}, got "
                        f"{p.returncode} {p.stdout!r} {p.stderr!r}")


def main():
    cli = harness.cli_argument("cli_model_test.py")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        # One file.
        one = os.path.join(tmp, "one")
        os.mkdir(one)
        with open(os.path.join(one, "config.json"), "w") as f:
            json.dump({"model_type": "gpt2", "n_layer": 1, "n_head": 2, "n_embd": 4,
                       "activation_function": "gelu", "n_inner": None}, f)
        with open(os.path.join(one, "model.safetensors"), "wb") as f:
            f.write(safetensors({
                "wte.weight": ("F32", [3, 4], struct.pack("<12f", *range(12))),
                "h.0.ln_1.weight": ("F16", [4], struct.pack("<4H", 0x3C00, 0x3C00, 0x3C00, 0x3C00)),
                "h.0.attn.bias": ("BF16", [1, 1, 2, 2], struct.pack("<4H", 0x3F80, 0, 0x3F80, 0x3F80)),
            }))
        p = run(cli, "model", "info", one)
        if p.returncode != 0:
            failures.append(f"model info {one}: exit {p.returncode}: {p.stderr}")
        else:
            doc = json.loads(p.stdout)
            c = doc["config"]
            want = {"n_layer": 1, "n_head": 2, "n_embd": 4, "n_inner": 16, "n_positions": 1024,
                    "vocab_size": 50257, "activation_function": "gelu", "tie_word_embeddings": True}
            for k, v in want.items():
                if c.get(k) != v:
                    failures.append(f"config {k}: want {v!r}, got {c.get(k)!r}")
            got = [(t["name"], t["dtype"], t["shape"]) for t in doc["tensors"]]
            if got != [("h.0.attn.bias", "BF16", [1, 1, 2, 2]), ("h.0.ln_1.weight", "F16", [4]),
                       ("wte.weight", "F32", [3, 4])]:
                failures.append(f"tensors: {got}")

        # Two shards and an index; a bare file has "config": null.
        two = os.path.join(tmp, "two")
        os.mkdir(two)
        with open(os.path.join(two, "config.json"), "w") as f:
            json.dump({"model_type": "gpt2"}, f)
        for i, name in enumerate(["a", "b"]):
            with open(os.path.join(two, f"s{i}.safetensors"), "wb") as f:
                f.write(safetensors({name: ("F32", [1], struct.pack("<f", i))}))
        with open(os.path.join(two, "model.safetensors.index.json"), "w") as f:
            json.dump({"weight_map": {"a": "s0.safetensors", "b": "s1.safetensors"}}, f)
        p = run(cli, "model", "info", two)
        doc = json.loads(p.stdout) if p.returncode == 0 else {}
        if [(t["name"], t["file"]) for t in doc.get("tensors", [])] != \
                [("a", "s0.safetensors"), ("b", "s1.safetensors")]:
            failures.append(f"shards: {p.returncode} {p.stdout} {p.stderr}")
        p = run(cli, "model", "info", os.path.join(two, "s0.safetensors"))
        if p.returncode != 0 or json.loads(p.stdout)["config"] is not None:
            failures.append(f"bare file: {p.returncode} {p.stdout} {p.stderr}")

        # Bad input.
        bad = os.path.join(tmp, "bad.safetensors")
        with open(bad, "wb") as f:
            f.write(safetensors({"x": ("F32", [3], b"\0" * 8)}))
        expect_error(cli, bad, "need 12 bytes", failures)
        trunc = os.path.join(tmp, "trunc.safetensors")
        with open(trunc, "wb") as f:
            f.write(safetensors({"x": ("F32", [2], b"\0" * 8)})[:-4])
        expect_error(cli, trunc, "past the buffer", failures)
        expect_error(cli, os.path.join(tmp, "absent.safetensors"), "no such file or folder", failures)
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        expect_error(cli, empty, "no config.json", failures)
        with open(os.path.join(empty, "config.json"), "w") as f:
            json.dump({"model_type": "bert"}, f)
        expect_error(cli, empty, '"model_type"', failures)
        with open(os.path.join(empty, "config.json"), "w") as f:
            json.dump({}, f)
        expect_error(cli, empty, "no model.safetensors", failures)

    return harness.report_failures("cli_model", failures)


if __name__ == "__main__":
    sys.exit(main())
