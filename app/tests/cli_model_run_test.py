#!/usr/bin/env python3
"""cli_model_run_test.py: `attnscope-cli model trace/generate/export/list/bench/patterns`
on a tiny GPT-2 written here (standard library only; the numbers against
PyTorch are model_oracle_test.py's).

    python3 cli_model_run_test.py path/to/attnscope-cli

Checks the JSON's shape and invariants (causal rows summing to 1, the next
tokens in order), that --ids and --text agree, the file names of model
export, that model patterns scores the weights model trace prints, that
model list finds models in the folders it searches, and that
every malformed model or request exits 2 with one "error: " line naming it.
"""

import array
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

TIMEOUT_S = 60
V, D, H, L, P = 50257, 8, 2, 2, 16  # vocabulary, width, heads, layers, positions


def safetensors(tensors):
    """tensors: name -> (shape, list of floats). F32, C order."""
    header, chunks, at = {}, [], 0
    for name, (shape, values) in tensors.items():
        raw = array.array("f", values).tobytes()
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [at, at + len(raw)]}
        chunks.append(raw)
        at += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def tiny_gpt2(rng):
    def rand(*shape):
        n = 1
        for s in shape:
            n *= s
        return (list(shape), [rng.gauss(0, 0.3) for _ in range(n)])
    t = {"wte.weight": rand(V, D), "wpe.weight": rand(P, D),
         "ln_f.weight": ([D], [1.0] * D), "ln_f.bias": rand(D)}
    for layer in range(L):
        h = f"h.{layer}."
        t.update({h + "ln_1.weight": ([D], [1.0] * D), h + "ln_1.bias": rand(D),
                  h + "attn.c_attn.weight": rand(D, 3 * D), h + "attn.c_attn.bias": rand(3 * D),
                  h + "attn.c_proj.weight": rand(D, D), h + "attn.c_proj.bias": rand(D),
                  h + "ln_2.weight": ([D], [1.0] * D), h + "ln_2.bias": rand(D),
                  h + "mlp.c_fc.weight": rand(D, 4 * D), h + "mlp.c_fc.bias": rand(4 * D),
                  h + "mlp.c_proj.weight": rand(4 * D, D), h + "mlp.c_proj.bias": rand(D)})
    return t


def write_model(folder, tensors, config=None):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config or {"model_type": "gpt2", "n_layer": L, "n_head": H, "n_embd": D,
                             "n_positions": P}, f)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(safetensors(tensors))
    return folder


def run(cli, *args, env=None):
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=TIMEOUT_S,
                          env=env)


def expect_error(cli, args, needle, failures, env=None):
    p = run(cli, *args, env=env)
    lines = p.stderr.splitlines()
    if p.returncode != 2 or p.stdout or len(lines) != 1 or not lines[0].startswith("error: ") \
            or needle not in lines[0]:
        failures.append(f"{' '.join(args)}: want exit 2 and one error line with {needle!r}, got "
                        f"{p.returncode} {p.stdout[:200]!r} {p.stderr!r}")


def check_trace(cli, model, failures):
    p = run(cli, "model", "trace", model, "--text", "Hello, world!")
    if p.returncode != 0:
        failures.append(f"trace: exit {p.returncode}: {p.stderr}")
        return None
    doc = json.loads(p.stdout)
    if doc["ids"] != [15496, 11, 995, 0] or doc["tokens"] != ["Hello", ",", " world", "!"]:
        failures.append(f"trace ids/tokens: {doc['ids']} {doc['tokens']}")
    if doc["spans"] != [[0, 5], [5, 6], [6, 12], [12, 13]]:
        failures.append(f"trace spans: {doc['spans']}")
    if doc["config"]["n_layer"] != L or doc["config"]["n_head"] != H:
        failures.append(f"trace config: {doc['config']}")
    keys = [(s["id"], s["layer"], s["head"]) for s in doc["stages"]]
    want = [("weights", la, he) for la in range(L) for he in range(H)] + [("logits", -1, -1)]
    if keys != want:
        failures.append(f"default stages: {keys}")
    for s in doc["stages"]:
        if s["id"] != "weights":
            continue
        for i, row in enumerate(s["data"]):
            if abs(sum(row) - 1) > 1e-5 or any(row[j] != 0 for j in range(i + 1, len(row))):
                failures.append(f"weights l{s['layer']} h{s['head']} row {i}: {row}")
    logits = doc["stages"][-1]["data"][0]
    if doc["stages"][-1]["shape"] != [1, V] or len(logits) != V:
        failures.append("logits shape")
    nxt = doc["next_token"]
    probs = [n["probability"] for n in nxt]
    if len(nxt) != 10 or probs != sorted(probs, reverse=True) or \
            nxt[0]["id"] != max(range(V), key=lambda j: logits[j]):
        failures.append(f"next_token: {nxt[:3]}")
    if doc.get("next_token_position") != len(doc["ids"]) - 1:
        failures.append(f"next_token_position: {doc.get('next_token_position')}")
    return doc


def check_requests(cli, model, doc, tmp, failures):
    p = run(cli, "model", "trace", model, "--ids", "15496,11,995,0")
    if p.returncode != 0 or json.loads(p.stdout)["stages"] != doc["stages"]:
        failures.append(f"--ids differs from --text: {p.returncode} {p.stderr}")
    p = run(cli, "model", "trace", model, "--text", "Hello, world!", "--layers", "1",
            "--heads", "0", "--stages", "context,embeddings,ln_1,block_output")
    got = [(s["id"], s["layer"], s["head"], s["shape"]) for s in json.loads(p.stdout)["stages"]] \
        if p.returncode == 0 else p.stderr
    if got != [("embeddings", -1, -1, [4, D]), ("ln_1", 1, -1, [4, D]),
               ("context", 1, 0, [4, D // H]), ("block_output", 1, -1, [4, D])]:
        failures.append(f"selection: {got}")
    p = run(cli, "model", "trace", model, "--text", "Hello, world!", "--format", "text")
    if p.returncode != 0 or "next token" not in p.stdout or "weights layer 1 head 1" not in p.stdout:
        failures.append(f"text format: {p.returncode} {p.stdout[:300]} {p.stderr}")
    # --next-at: what the model predicts after "Hello" inside "Hello, world!"
    # is what a run of "Hello" alone predicts (causal attention).
    at = run(cli, "model", "trace", model, "--text", "Hello, world!", "--next-at", "0",
             "--layers", "0", "--heads", "0")
    alone = run(cli, "model", "trace", model, "--text", "Hello", "--layers", "0", "--heads", "0")
    got = json.loads(at.stdout) if at.returncode == 0 else {}
    want = json.loads(alone.stdout) if alone.returncode == 0 else {}
    got_ids = [n["id"] for n in got.get("next_token", [])]
    if got.get("next_token_position") != 0 or len(got_ids) != 10 or \
            got_ids != [n["id"] for n in want.get("next_token", [])]:
        failures.append(f"--next-at 0: {at.returncode} {at.stderr} {got.get('next_token', [])[:2]}")
    expect_error(cli, ["model", "trace", model, "--text", "Hello", "--next-at", "1"],
                 "--next-at 1 is not a token of the text", failures)
    p = run(cli, "model", "generate", model, "--text", "Hello", "--tokens", "3", "--format", "json")
    gen = json.loads(p.stdout) if p.returncode == 0 else {}
    if len(gen.get("new_ids", [])) != 3 or gen.get("ids", [])[:1] != [15496]:
        failures.append(f"generate: {p.returncode} {p.stdout} {p.stderr}")
    out = os.path.join(tmp, "out")
    os.mkdir(out)
    p = run(cli, "model", "export", model, "--text", "Hi there", "--layers", "1", "--format",
            "npy", "--out", out)
    names = sorted(os.path.basename(x).rsplit("_", 1)[0] for x in p.stdout.split())
    if p.returncode != 0 or names != ["logits_tiny", "weights_l1_h0_tiny", "weights_l1_h1_tiny"]:
        failures.append(f"export: {p.returncode} {names} {p.stderr}")
    svg_dir = os.path.join(tmp, "svg")
    os.mkdir(svg_dir)
    p = run(cli, "model", "export", model, "--text", "Hi there", "--layers", "1", "--heads", "0",
            "--format", "svg", "--out", svg_dir)
    svg = open(p.stdout.split()[0], encoding="utf-8").read() if p.returncode == 0 else ""
    if "attention weights, layer 1, head 0</text>" not in svg or \
            "tiny, 2 tokens: &quot;Hi there&quot;</text>" not in svg:
        failures.append(f"svg titles: {p.returncode} {p.stderr} {svg[:600]}")
    p = run(cli, "model", "bench", model, "--tokens", "5", "--repeat", "1")
    if p.returncode != 0 or not p.stdout.splitlines()[-1].startswith("median_ms="):
        failures.append(f"bench: {p.returncode} {p.stdout} {p.stderr}")
    p = run(cli, "model", "bench", model, "--tokens", "5", "--repeat", "1", "--append")
    fields = dict(w.split("=", 1) for w in p.stdout.split() if "=" in w)
    try:
        timed = all(float(fields[k]) > 0 for k in
                    ("append_over_full", "full_forward_ms", "read_weights_ms", "weights_mb"))
    except (KeyError, ValueError):
        timed = False
    if p.returncode != 0 or "append" not in p.stdout or not timed:
        failures.append(f"bench --append: {p.returncode} {p.stdout} {p.stderr}")
    long_text = " ".join(["word"] * (P + 3))
    expect_error(cli, ["model", "trace", model, "--text", long_text], "n_positions = 16", failures)
    p = run(cli, "model", "trace", model, "--text", long_text, "--keep-last")
    if p.returncode != 0 or len(json.loads(p.stdout)["ids"]) != P:
        failures.append(f"--keep-last: {p.returncode} {p.stderr}")
    expect_error(cli, ["model", "trace", model, "--text", "a", "--stages", "dropout_mask"],
                 "not a stage of a model run", failures)
    expect_error(cli, ["model", "trace", model, "--text", "a", "--layers", "2"],
                 "layer 2 is out of range", failures)
    expect_error(cli, ["model", "trace", model, "--ids", "1,x"], "'x' is not a token id", failures)
    expect_error(cli, ["model", "trace", model, "--ids", "50257"], "outside", failures)
    expect_error(cli, ["model", "trace", model, "--ids", "1", "--text", "a"], "exactly one",
                 failures)
    expect_error(cli, ["model", "trace", model, "--text", ""], "no tokens", failures)


def head_scores(w):
    """The scores of docs/trace-format.md, "Head patterns", of one head's weights."""
    t = len(w)
    ent = [-sum(x * math.log(x) for x in row if x > 0) for row in w]
    later = max(t - 1, 1)
    return {"previous_token": sum(w[i][i - 1] for i in range(1, t)) / later,
            "first_token": sum(w[i][0] for i in range(1, t)) / later,
            "self": sum(w[i][i] for i in range(t)) / t,
            "entropy": sum(ent) / t,
            "entropy_normalised": sum(ent[i] / math.log(i + 1) for i in range(1, t)) / later}


def check_patterns(cli, model, doc, failures):
    """model patterns on the trace's text: the scores of the trace's weights, and
    the induction score of a trace of the repeated sequence it ran."""
    p = run(cli, "model", "patterns", model, "--text", "Hello, world!", "--induction-n", "50",
            "--seed", "3")
    if p.returncode != 0:
        failures.append(f"patterns: exit {p.returncode}: {p.stderr}")
        return
    pat = json.loads(p.stdout)
    n = (P - 1) // 2  # 50 capped so that [BOS] r r fits P positions
    seq = pat["induction_ids"]
    if (pat["layers"], pat["heads"], pat["induction_n"]) != (L, H, n) or len(seq) != 1 + 2 * n \
            or seq[0] != 50256 or seq[1:n + 1] != seq[n + 1:] or len(set(seq[1:n + 1])) != n:
        failures.append(f"patterns header: {pat['layers']} {pat['heads']} "
                        f"{pat['induction_n']} {seq}")
    if set(pat["explanations"]) != {"previous_token", "first_token", "self", "entropy",
                                    "entropy_normalised", "induction"}:
        failures.append(f"patterns explanations: {sorted(pat['explanations'])}")
    r = run(cli, "model", "trace", model, "--ids", ",".join(map(str, seq)), "--stages", "weights")
    repeated = {(s["layer"], s["head"]): s["data"] for s in json.loads(r.stdout)["stages"]}
    weights = {(s["layer"], s["head"]): s["data"] for s in doc["stages"] if s["id"] == "weights"}
    got = [(s["layer"], s["head"]) for s in pat["scores"]]
    if got != sorted(weights):
        failures.append(f"patterns heads: {got}")
        return
    for s in pat["scores"]:
        key = (s["layer"], s["head"])
        want = head_scores(weights[key])
        w = repeated[key]
        want["induction"] = sum(w[1 + n + k][2 + k] for k in range(n)) / n
        for name, value in want.items():
            if abs(s[name] - value) > 1e-6:
                failures.append(f"patterns l{key[0]} h{key[1]} {name}: {s[name]} != {value}")
    expect_error(cli, ["model", "patterns", model, "--text", "Hi", "--induction-n", "1"],
                 "at least 2", failures)


def check_bad_models(cli, tensors, tmp, failures):
    def bad(name, change, config=None):
        t = dict(tensors)
        change(t)
        return write_model(os.path.join(tmp, name), t, config)

    m = bad("missing", lambda t: t.pop("h.1.mlp.c_fc.bias"))
    expect_error(cli, ["model", "trace", m, "--text", "a"], '"h.1.mlp.c_fc.bias" is missing',
                 failures)
    m = bad("shape", lambda t: t.update({"h.0.attn.c_proj.weight": ([D, D + 1], [0.0] * D * (D + 1))}))
    expect_error(cli, ["model", "trace", m, "--text", "a"], "needs [8, 8]", failures)
    m = bad("blocks", lambda t: t.update({"h.2.ln_1.weight": ([D], [1.0] * D)}))
    expect_error(cli, ["model", "trace", m, "--text", "a"], "3 blocks", failures)
    m = bad("untied", lambda t: None, {"model_type": "gpt2", "n_layer": L, "n_head": H,
                                       "n_embd": D, "n_positions": P,
                                       "tie_word_embeddings": False})
    expect_error(cli, ["model", "trace", m, "--text", "a"], "lm_head.weight", failures)
    m = bad("config", lambda t: None, {"model_type": "gpt2", "n_layer": L, "n_head": H,
                                       "n_embd": 16, "n_positions": P})
    expect_error(cli, ["model", "trace", m, "--text", "a"], "wte.weight", failures)
    pth = os.path.join(tmp, "model.pth")
    with open(pth, "wb") as f:
        f.write(b"PK\x05\x06" + b"\0" * 18)
    expect_error(cli, ["model", "trace", pth, "--text", "a"], "--config", failures)
    expect_error(cli, ["model", "trace", os.path.join(tmp, "absent"), "--text", "a"],
                 "no such file", failures)


def check_list(cli, model, tmp, failures):
    env = dict(os.environ)
    hub = os.path.join(tmp, "hf", "hub")
    snap = os.path.join(hub, "models--someone--tiny-gpt2", "snapshots", "abc123")
    os.makedirs(os.path.dirname(snap))
    os.symlink(model, snap)
    data = os.path.join(tmp, "data")
    os.makedirs(os.path.join(data, "attnscope", "models"))
    os.symlink(model, os.path.join(data, "attnscope", "models", "mine"))
    env.update({"HF_HOME": os.path.join(tmp, "hf"), "XDG_DATA_HOME": data})
    env.pop("HF_HUB_CACHE", None)
    p = run(cli, "model", "list", env=env)
    doc = json.loads(p.stdout) if p.returncode == 0 else {}
    got = [(m["name"], m["where"]) for m in doc.get("models", [])]
    if got != [("mine", "attnscope"), ("someone/tiny-gpt2", "huggingface-cache")]:
        failures.append(f"model list: {got} {p.stderr}")


def main():
    cli = harness.cli_argument("cli_model_run_test.py")
    failures = []
    tensors = tiny_gpt2(random.Random(5))
    with tempfile.TemporaryDirectory() as tmp:
        model = write_model(os.path.join(tmp, "tiny"), tensors)
        doc = check_trace(cli, model, failures)
        if doc:
            check_requests(cli, model, doc, tmp, failures)
            check_patterns(cli, model, doc, failures)
        check_bad_models(cli, tensors, tmp, failures)
        check_list(cli, model, tmp, failures)
    return harness.report_failures("cli_model_run", failures)


if __name__ == "__main__":
    sys.exit(main())
