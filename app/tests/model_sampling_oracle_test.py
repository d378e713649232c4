#!/usr/bin/env python3
"""model_sampling_oracle_test.py: chapter 5's readings of a model against PyTorch.

    /usr/bin/python3 model_sampling_oracle_test.py path/to/attnscope-cli

On a tiny GPTModel saved as the book saves it (model_fixtures.py, "book_pth"):

1. `model generate --temperature X --top-k K --seed S` picks the same 25
   tokens as the book's generate() (section 5.3, written out below as the
   book prints it) after torch.manual_seed(S), at several temperatures and
   k, from a short prompt and from one that makes generate() crop its
   context; without --temperature it is greedy.
2. `model trace`'s "loss" equals the book's calc_loss_batch on the text
   (F.cross_entropy of each position's logits against the next token),
   per token and as the mean, and its perplexity is exp(mean).
3. `model lens` gives, at each residual, the top tokens of
   final_norm(x_l) through out_head, and its last layer is the trace's
   next_token.
4. Bad values exit 2 naming the flag.

Exit status: 0 passed, 1 a failure, 77 torch or numpy is not importable.
"""

import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

torch, mf = harness.require("model_sampling_oracle", "torch", "model_fixtures",
                            what="torch/numpy")
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(1)

PROMPT = [6109, 3626, 6100, 345]  # "Every effort moves you"
NEW_TOKENS = 25
RUNS = [  # temperature, top_k, seed
    (1.0, None, 123),
    (1.4, 25, 123),
    (0.5, 3, 7),
    (2.0, None, 42),
    (0.0, 10, 5),   # greedy: the cut keeps the argmax
]
FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL:", msg, flush=True)


def run(cli, *args):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=120)


def generate(model, idx, max_new_tokens, context_size, temperature=0.0, top_k=None, eos_id=None):
    """The book's generate() (section 5.3), as printed."""
    for _ in range(max_new_tokens):
        idx_cond = idx[:, -context_size:]
        with torch.no_grad():
            logits = model(idx_cond)
        logits = logits[:, -1, :]
        if top_k is not None:
            top_logits, _ = torch.topk(logits, top_k)
            min_val = top_logits[:, -1]
            logits = torch.where(logits < min_val, torch.tensor(float("-inf")).to(logits.device),
                                 logits)
        if temperature > 0.0:
            logits = logits / temperature
            probs = torch.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
        else:
            idx_next = torch.argmax(logits, dim=-1, keepdim=True)
        if idx_next == eos_id:
            break
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


def check_generate(cli, fx, prompt, where):
    for temperature, top_k, seed in RUNS:
        torch.manual_seed(seed)
        idx = generate(fx.book, torch.tensor([prompt]), NEW_TOKENS, fx.cfg["n_positions"],
                       temperature=temperature, top_k=top_k)
        want = [int(i) for i in idx[0, len(prompt):]]
        args = ["model", "generate", *fx.args, "--ids", ",".join(map(str, prompt)),
                "--tokens", NEW_TOKENS, "--seed", seed, "--format", "json"]
        if temperature > 0:
            args += ["--temperature", temperature]
        if top_k is not None:
            args += ["--top-k", top_k]
        p = run(cli, *args)
        if p.returncode != 0:
            fail(f"{where} T={temperature} k={top_k} seed={seed}: exit {p.returncode}: {p.stderr}")
            continue
        got = json.loads(p.stdout)["new_ids"]
        if got != want:
            first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
            fail(f"{where} T={temperature} k={top_k} seed={seed}: attnscope picked {got}, "
                 f"the book's generate() {want} (first difference at token {first})")
        else:
            print(f"  {where} T={temperature} k={top_k} seed={seed}: {len(got)} tokens equal",
                  flush=True)


def check_loss(cli, fx, ids):
    p = run(cli, "model", "trace", *fx.args, "--ids", ",".join(map(str, ids)),
            "--stages", "logits", "--layers", "0", "--format", "json")
    if p.returncode != 0:
        fail(f"model trace: exit {p.returncode}: {p.stderr}")
        return None
    doc = json.loads(p.stdout)
    with torch.no_grad():
        logits = fx.book(torch.tensor([ids]))
    inputs, targets = logits[:, :-1, :], torch.tensor([ids[1:]])
    want = F.cross_entropy(inputs.flatten(0, 1), targets.flatten())  # calc_loss_batch
    per = F.cross_entropy(inputs.flatten(0, 1), targets.flatten(), reduction="none")
    loss = doc.get("loss")
    if not loss or len(loss["per_token"]) != len(ids) - 1:
        fail(f"model trace: loss {loss!r}, want {len(ids) - 1} per-token values")
        return doc
    worst = max(abs(a - float(b)) for a, b in zip(loss["per_token"], per))
    if worst > 1e-4:
        fail(f"per-token loss differs from F.cross_entropy by {worst}")
    if abs(loss["mean"] - float(want)) > 1e-4:
        fail(f"loss mean {loss['mean']}, calc_loss_batch {float(want)}")
    if abs(loss["perplexity"] - math.exp(loss["mean"])) > 1e-6 * loss["perplexity"]:
        fail(f"perplexity {loss['perplexity']} is not exp(mean) = {math.exp(loss['mean'])}")
    print(f"  loss {loss['mean']:.6f} (calc_loss_batch {float(want):.6f}), worst per-token "
          f"difference {worst:.2e}", flush=True)
    one = json.loads(run(cli, "model", "trace", *fx.args, "--ids", ids[0], "--stages", "logits",
                         "--format", "json").stdout)
    if one["loss"] != {"per_token": [], "mean": None, "perplexity": None}:
        fail(f"a one-token text's loss is {one['loss']}, want nothing to predict")
    return doc


def lens_reference(gpt, ids, position):
    """final_norm(x_l) . out_head for x_0 (embeddings) .. x_L (last block)."""
    with torch.no_grad():
        idx = torch.tensor([ids])
        x = gpt.tok_emb(idx) + gpt.pos_emb(torch.arange(len(ids)))
        rows = [x[0, position]]
        for block in gpt.trf_blocks:
            x = block(x)
            rows.append(x[0, position])
        return torch.softmax(gpt.out_head(gpt.final_norm(torch.stack(rows))), dim=-1)


def check_lens(cli, fx, ids, trace_doc):
    for position in (None, 2):
        args = ["model", "lens", *fx.args, "--ids", ",".join(map(str, ids)), "--top", 5,
                "--format", "json"]
        if position is not None:
            args += ["--position", position]
        p = run(cli, *args)
        if p.returncode != 0:
            fail(f"model lens: exit {p.returncode}: {p.stderr}")
            continue
        doc = json.loads(p.stdout)
        pos = len(ids) - 1 if position is None else position
        probs = lens_reference(fx.book, ids, pos)
        if doc["position"] != pos or len(doc["layers"]) != probs.shape[0]:
            fail(f"model lens: position {doc['position']} with {len(doc['layers'])} layers, want "
                 f"{pos} with {probs.shape[0]}")
            continue
        for layer in doc["layers"]:
            ref = probs[layer["layer"]]
            want = [int(i) for i in torch.topk(ref, 5).indices]
            got = [t["id"] for t in layer["top"]]
            worst = max(abs(t["probability"] - float(ref[t["id"]])) for t in layer["top"])
            if got != want or worst > 1e-6:
                fail(f"lens at {pos}, layer {layer['layer']}: {got} (worst probability off by "
                     f"{worst:.2e}), reference {want}")
        final = [t["id"] for t in doc["layers"][-1]["top"]]
        if position is None and final != [t["id"] for t in trace_doc["next_token"][:5]]:
            fail(f"the lens's last layer {final} is not the trace's next_token")
        if not doc["layers"][-1]["final"] or doc["layers"][0]["final"]:
            fail("only the last layer of the lens is marked final")
    print(f"  lens: {len(ids)} tokens, layers 0..{fx.cfg['n_layer']} equal the reference",
          flush=True)


def check_errors(cli, fx):
    ids = ",".join(map(str, PROMPT))
    for args, word in (
            (["generate", "--tokens", 3, "--temperature", -1], "--temperature"),
            (["generate", "--tokens", 3, "--temperature", 1, "--top-k", 60000], "top-k"),
            (["lens", "--position", 4], "--position"),
            (["lens", "--top", 0], "--top")):
        p = run(cli, "model", args[0], *fx.args, "--ids", ids, *args[1:])
        if p.returncode != 2 or word not in p.stderr or p.stdout:
            fail(f"model {' '.join(map(str, args))}: exit {p.returncode}, stderr {p.stderr!r}; "
                 f"want exit 2 naming {word}")


def main():
    cli = harness.cli_argument("model_sampling_oracle_test.py")
    with tempfile.TemporaryDirectory() as tmp:
        fx = mf.write_fixture(tmp, "book_pth")
        check_generate(cli, fx, PROMPT, "short prompt")
        long_prompt = (PROMPT * 13)[:50]  # 50 + 25 > 64 positions: generate() crops
        check_generate(cli, fx, long_prompt, "cropped context")
        ids = (PROMPT * 5)[:17]
        doc = check_loss(cli, fx, ids)
        if doc:
            check_lens(cli, fx, ids, doc)
        check_errors(cli, fx)
    print(f"model_sampling_oracle: {len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
