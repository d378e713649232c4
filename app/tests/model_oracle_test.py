#!/usr/bin/env python3
"""model_oracle_test.py: `attnscope-cli model trace/generate` against PyTorch.

    /usr/bin/python3 model_oracle_test.py path/to/attnscope-cli

Writes every fixture of model_fixtures.py (tiny GPT-2 checkpoints: Hugging
Face folders and files in F32/F16/BF16, with the `transformer.` prefix, mask
buffers, an untied head, each config knob; the book's GPTModel as .pth
state dicts and as a training checkpoint) and checks:

1. The two PyTorch references agree with each other: (b) the Hugging Face
   layout's forward written directly, and (a) the book's GPTModel loaded
   with chapter 5's load_weights_into_gpt (or, for the book's own files,
   the GPTModel itself against (b) on its weights mapped back). The fixture
   files read back to the weights the references use.
2. `model trace --format json`: ids, tokens and spans (as `tokenize` gives
   them), the config block, exactly the default stages (every layer's and
   head's weights, the last position's logits), each head's weights within
   1e-5 of (b) (and of (a) where the math is the book's), the logits within
   1e-4 x max|logit|, next_token = the reference's top 10. F16/BF16 files are
   compared with the references run on the same weights widened to float32.
   On the default fixture also: every stage of --stages against (b), stage
   subsets, --layers/--heads, --ids and --text-file equal to --text, a text
   of exactly n_positions tokens, and one longer that must exit 2.
3. `model generate`: the greedy tokens equal the book's generate_text_simple
   loop (and (b)'s).
4. Gated: with ATTNSCOPE_GPT2_DIR naming a real GPT-2 folder (config.json +
   model.safetensors), the greedy continuation of "Every effort moves you"
   and every head's attention against (b) on those weights. Skipped (not
   failed) when the variable is unset.

Exit status: 0 all passed, 1 any failure,
77 torch or numpy is not importable (CTest's "skipped").
"""

import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

torch, mf = harness.require("model_oracle", "torch", "model_fixtures", what="torch/numpy")

torch.set_num_threads(1)

TEXT = "Every effort moves you"
TEXT_IDS = [6109, 3626, 6100, 345]   # GPT-2's tokenizer
NEW_TOKENS = 8                       # greedy tokens for `model generate`
GPT2_NEW_TOKENS = 10

# Tolerances. The two PyTorch references differ by ~3e-7 on attention and
# ~2e-6 on logits at this size (float32 sums in another order), so these
# leave room for a third summation order without hiding a wrong formula.
WEIGHTS_TOL = 1e-5       # absolute, on attention weights (values in [0, 1])
LOGITS_REL_TOL = 1e-4    # times max |logit|
STAGE_REL_TOL = 1e-5     # other stages: times max(1, max |value|)

PER_HEAD = ["queries", "keys", "values", "scores", "mask", "masked_scores", "scaled_scores",
            "weights", "context"]
PER_LAYER = ["concat", "output", "ln_1", "attn_output", "ln_2", "mlp_hidden", "mlp_activation",
             "mlp_output", "block_output"]
GLOBAL = ["embeddings", "ln_f", "logits"]
ALL_STAGES = ["queries", "keys", "values", "scores", "mask", "masked_scores", "scaled_scores",
              "weights", "context", "concat", "output", "embeddings", "ln_1", "attn_output",
              "ln_2", "mlp_hidden", "mlp_activation", "mlp_output", "block_output", "ln_f",
              "logits"]

FAILURES = []
WORST = {}   # check name -> (largest diff / tolerance, where)


def fail(msg):
    FAILURES.append(msg)
    print("FAIL:", msg, flush=True)


def note_worst(kind, ratio, where):
    if ratio > WORST.get(kind, (-1.0, ""))[0]:
        WORST[kind] = (ratio, where)


def run(cli, *args, timeout=60):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=timeout)


# ---------------------------------------------------------------------------
# Comparing stages


def tensor_of(stage):
    """A stage's data as a float32 tensor; "inf"/"-inf"/"nan" strings become floats."""
    rows = [[float(v) for v in row] for row in stage["data"]]
    return torch.tensor(rows, dtype=torch.float32).reshape(stage["shape"])


def stages_of(doc):
    out = {}
    for s in doc["stages"]:
        key = (s["id"], s["layer"], s["head"])
        if key in out:
            fail(f"stage {key} appears twice")
        out[key] = s
    return out


def tolerance(sid, ref):
    finite = ref[torch.isfinite(ref)]
    big = float(finite.abs().max()) if finite.numel() else 0.0
    if sid == "weights":
        return WEIGHTS_TOL
    if sid == "logits":
        return LOGITS_REL_TOL * big
    return STAGE_REL_TOL * max(1.0, big)


def compare(where, key, got_stage, ref):
    """One stage against a reference tensor; returns its max abs diff."""
    sid = key[0]
    got = tensor_of(got_stage)
    if list(got.shape) != list(ref.shape):
        fail(f"{where} {key}: shape {list(got.shape)}, reference {list(ref.shape)}")
        return float("inf")
    fin_ref, fin_got = torch.isfinite(ref), torch.isfinite(got)
    if not torch.equal(fin_ref, fin_got) or not torch.equal(ref[~fin_ref], got[~fin_got]):
        fail(f"{where} {key}: non-finite entries differ from the reference's")
        return float("inf")
    diff = float((got[fin_got] - ref[fin_ref]).abs().max()) if fin_ref.any() else 0.0
    tol = tolerance(sid, ref)
    if sid == "mask":
        tol = 0.0
    note_worst(sid, diff / tol if tol else (0.0 if diff == 0 else float("inf")), f"{where} {key}")
    if diff > tol:
        flat = (got - ref).abs().nan_to_num(0.0).flatten().argmax()
        row, col = divmod(int(flat), ref.shape[1])
        fail(f"{where} {key}: max |diff| {diff:.3e} > {tol:.3e} at [{row}, {col}] "
             f"(attnscope {float(got[row, col]):.9g}, torch {float(ref[row, col]):.9g})")
    return diff


def expect_keys(where, doc_stages, want):
    got = set(doc_stages)
    if got != set(want):
        fail(f"{where}: stages {sorted(got - set(want))[:6]} not asked for, "
             f"{sorted(set(want) - got)[:6]} missing")


def default_keys(cfg):
    keys = {("weights", l, h) for l in range(cfg["n_layer"]) for h in range(cfg["n_head"])}
    return keys | {("logits", -1, -1)}


def stage_keys(cfg, ids, layers=None, heads=None):
    layers = range(cfg["n_layer"]) if layers is None else layers
    heads = range(cfg["n_head"]) if heads is None else heads
    keys = set()
    for sid in ids:
        if sid in PER_HEAD:
            keys |= {(sid, l, h) for l in layers for h in heads}
        elif sid in PER_LAYER:
            keys |= {(sid, l, -1) for l in layers}
        else:
            keys.add((sid, -1, -1))
    return keys


# ---------------------------------------------------------------------------
# 1. The references against each other, and the files against the weights


def check_references(fx, ids):
    ref_b, logits_b = mf.hf_forward(fx.weights, fx.cfg, ids, record="attention")
    if fx.book is None:
        return
    ref_a, logits_a = mf.book_forward(fx.book, ids)
    attn = max(float((ref_a[k] - ref_b[k]).abs().max()) for k in ref_a if k[0] == "weights")
    logit = float((logits_a - logits_b).abs().max())
    scale = float(logits_b.abs().max())
    note_worst("references: weights", attn / WEIGHTS_TOL, fx.name)
    note_worst("references: logits", logit / (LOGITS_REL_TOL * scale), fx.name)
    if attn > WEIGHTS_TOL or logit > LOGITS_REL_TOL * scale:
        fail(f"{fx.name}: the two PyTorch references disagree: attention {attn:.3e}, "
             f"logits {logit:.3e} (max |logit| {scale:.3f})")


def check_files(fx):
    """The file holds what the references run on."""
    path = fx.args[0]
    if fx.name.startswith("book") and path.endswith(".safetensors"):
        got = mf.read_safetensors(path)
        for k, v in fx.book.state_dict().items():
            if not torch.equal(got[k], v):
                fail(f"{fx.name}: {k} in {path} is not the reference's")
        return
    if path.endswith(".pth"):
        obj = torch.load(path)
        state = obj.get("model_state_dict", obj)
        for k, v in fx.book.state_dict().items():
            if not torch.equal(state[k], v):
                fail(f"{fx.name}: {k} in {path} is not the reference's")
        return
    if os.path.isdir(path):
        path = os.path.join(path, "model.safetensors")
    got = mf.hf_weights_from_files(mf.read_safetensors(path))
    if list(got) != list(fx.weights) or any(not torch.equal(got[k], fx.weights[k]) for k in got):
        fail(f"{fx.name}: {path} does not read back to the reference's weights")


# ---------------------------------------------------------------------------
# 2. model trace


def trace(cli, fx, *extra):
    p = run(cli, "model", "trace", *fx.args, *extra, "--format", "json")
    if p.returncode != 0:
        fail(f"{fx.name}: model trace {' '.join(map(str, extra))}: exit {p.returncode}: "
             f"{p.stderr.strip()}")
        return None
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError as exc:
        fail(f"{fx.name}: model trace printed invalid JSON ({exc})")
        return None


def check_config_block(fx, doc):
    got = doc.get("config", {})
    keys = list(mf.TINY) if not fx.name.startswith("book") else \
        ["n_layer", "n_head", "n_embd", "n_positions", "vocab_size", "layer_norm_epsilon",
         "n_inner", "scale_attn_weights", "scale_attn_by_inverse_layer_idx"]
    for k in keys:
        want = mf.n_inner(fx.cfg) if k == "n_inner" else fx.cfg[k]
        if got.get(k) != want:
            fail(f"{fx.name}: config {k} is {got.get(k)!r}, want {want!r}")


def check_next_token(fx, doc, logits):
    probs = torch.softmax(logits[-1].double(), dim=-1)
    top = torch.topk(probs, 10)
    want_ids = [int(i) for i in top.indices]
    got = doc.get("next_token", [])
    got_ids = [t.get("id") for t in got]
    # Ranks whose probabilities are closer than the tolerance may swap.
    scale = float(logits.abs().max())
    for r, (g, w) in enumerate(zip(got_ids, want_ids)):
        if g != w and abs(float(probs[g]) - float(probs[w])) > LOGITS_REL_TOL * scale * float(probs[w]):
            fail(f"{fx.name}: next_token rank {r}: id {g}, reference {w}")
            return
    if len(got) != 10:
        fail(f"{fx.name}: next_token has {len(got)} entries, want 10")
    for t in got:
        p = float(probs[t["id"]])
        if abs(t["probability"] - p) > 2 * LOGITS_REL_TOL * scale * p + 1e-9:
            fail(f"{fx.name}: next_token {t['id']} probability {t['probability']}, reference {p}")
        if not isinstance(t.get("token"), str):
            fail(f"{fx.name}: next_token {t['id']} has no token string")


def check_default_trace(cli, fx, text, ids, tokenized):
    doc = trace(cli, fx, "--text", text)
    if doc is None:
        return None
    where = f"{fx.name} T={len(ids)}"
    if doc.get("ids") != ids:
        fail(f"{where}: ids {doc.get('ids')}, want {ids}")
        return doc
    for k in ("tokens", "spans"):
        if doc.get(k) != tokenized[k]:
            fail(f"{where}: {k} {str(doc.get(k))[:120]} differ from `tokenize`'s")
    check_config_block(fx, doc)
    st = stages_of(doc)
    expect_keys(where, st, default_keys(fx.cfg))
    ref_b, logits = mf.hf_forward(fx.weights, fx.cfg, ids, record="attention")
    refs = [("b", ref_b)]
    if fx.book is not None:
        refs.append(("a", mf.book_forward(fx.book, ids)[0]))
    for name, ref in refs:
        for key in sorted(default_keys(fx.cfg) & set(st)):
            compare(f"{where} vs ({name})", key, st[key], ref[key])
    check_next_token(fx, doc, logits)
    return doc


def check_all_stages(cli, fx, ids):
    doc = trace(cli, fx, "--ids", ",".join(map(str, ids)), "--stages", ",".join(ALL_STAGES))
    if doc is None:
        return
    st = stages_of(doc)
    want = stage_keys(fx.cfg, ALL_STAGES)
    expect_keys(f"{fx.name} --stages all", st, want)
    ref, _ = mf.hf_forward(fx.weights, fx.cfg, ids, record="all")
    for key in sorted(want & set(st)):
        compare(f"{fx.name} --stages all", key, st[key], ref[key])


def check_selections(cli, fx, ids):
    id_arg = ",".join(map(str, ids))
    for sel in (["scores", "ln_f"], ["mask", "block_output"], ["embeddings"], ["logits"],
                ["context", "concat", "output"]):
        doc = trace(cli, fx, "--ids", id_arg, "--stages", ",".join(sel))
        if doc is not None:
            expect_keys(f"{fx.name} --stages {','.join(sel)}", stages_of(doc),
                        stage_keys(fx.cfg, sel))
    doc = trace(cli, fx, "--ids", id_arg, "--layers", "1", "--heads", "0,3",
                "--stages", "weights,ln_1")
    if doc is not None:
        expect_keys(f"{fx.name} --layers 1 --heads 0,3", stages_of(doc),
                    stage_keys(fx.cfg, ["weights", "ln_1"], layers=[1], heads=[0, 3]))


def same_run(where, a, b):
    """Two traces of the same ids: identical stages and next tokens."""
    if a is None or b is None:
        return
    if a.get("ids") != b.get("ids") or a.get("stages") != b.get("stages") \
            or a.get("next_token") != b.get("next_token"):
        fail(f"{where}: the trace differs from --text's")


def check_input_forms(cli, fx, text_doc, tmp):
    ids_doc = trace(cli, fx, "--ids", ",".join(map(str, TEXT_IDS)))
    same_run(f"{fx.name} --ids", text_doc, ids_doc)
    path = os.path.join(tmp, "prompt.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(TEXT)
    same_run(f"{fx.name} --text-file", text_doc, trace(cli, fx, "--text-file", path))
    p = run(cli, "model", "trace", *fx.args, "--text", TEXT, "--format", "text")
    if p.returncode != 0 or not p.stdout.strip():
        fail(f"{fx.name} --format text: exit {p.returncode}, {len(p.stdout)} bytes: {p.stderr.strip()}")


def expect_error(where, p, words):
    """Exit 2, nothing on stdout, one "error: " line holding one of `words`."""
    lines = p.stderr.splitlines()
    if p.returncode != 2 or p.stdout or len(lines) != 1 or not lines[0].startswith("error: ") \
            or not any(w in lines[0] for w in words):
        fail(f"{where}: want exit 2, no output and one 'error: ' line naming {' or '.join(words)}; "
             f"got exit {p.returncode}, {len(p.stdout)} bytes out, stderr {p.stderr.strip()!r}")


def check_too_long(cli, fx, text, t):
    p = run(cli, "model", "trace", *fx.args, "--text", text, "--format", "json")
    expect_error(f"{fx.name}: {t} tokens (> {fx.cfg['n_positions']})", p,
                 {fx.limit_word, "n_positions"})


def check_bad_ids(cli, fx):
    vocab = fx.cfg["vocab_size"]
    p = run(cli, "model", "trace", *fx.args, "--ids", f"6109,{vocab}", "--format", "json")
    expect_error(f"{fx.name}: --ids 6109,{vocab}", p, {str(vocab)})


def gpt2_decoder():
    """id -> bytes, from assets/gpt2/encoder.json and GPT-2's byte-to-unicode map."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "assets", "gpt2")
    with open(os.path.join(root, "encoder.json"), encoding="utf-8") as f:
        encoder = json.load(f)
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    byte_of = {chr(c): b for b, c in zip(bs, cs)}
    return {i: bytes(byte_of[ch] for ch in tok) for tok, i in encoder.items()}


DECODER = {}


def decode(ids):
    if not DECODER:
        DECODER.update(gpt2_decoder())
    return b"".join(DECODER[i] for i in ids).decode("utf-8", errors="replace")


def generate_matches(stdout, prompt_ids, new_ids):
    """Whether `model generate`'s output says `new_ids` follow the prompt:
    JSON with the ids (all of them or the new ones) or the text, or plain
    text holding the decoded continuation."""
    try:
        doc = json.loads(stdout)
    except json.JSONDecodeError:
        doc = None
    if isinstance(doc, dict):
        for key in ("ids", "generated_ids", "new_ids"):
            if isinstance(doc.get(key), list):
                return doc[key] in (new_ids, prompt_ids + new_ids)
        if isinstance(doc.get("text"), str):
            return doc["text"] in (decode(new_ids), decode(prompt_ids + new_ids))
        return False
    return decode(new_ids) in stdout


def run_generate(cli, fx, prompt_ids, want, timeout=60):
    p = run(cli, "model", "generate", *fx.args, "--text", decode(prompt_ids), "--tokens", len(want),
            timeout=timeout)
    if p.returncode != 0:
        fail(f"{fx.name}: model generate: exit {p.returncode}: {p.stderr.strip()}")
    elif not generate_matches(p.stdout, prompt_ids, want):
        fail(f"{fx.name}: model generate printed {p.stdout[:300]!r}; the greedy reference "
             f"continues with {want} ({decode(want)!r})")


def check_generate(cli, fx):
    want_b = mf.hf_generate(fx.weights, fx.cfg, TEXT_IDS, NEW_TOKENS)[len(TEXT_IDS):]
    if fx.book is not None:
        idx = mf.generate_text_simple(fx.book, torch.tensor([TEXT_IDS]), NEW_TOKENS,
                                      fx.cfg["n_positions"])
        want_a = [int(i) for i in idx[0, len(TEXT_IDS):]]
        if want_a != want_b:
            fail(f"{fx.name}: the references' greedy tokens differ: (a) {want_a}, (b) {want_b}")
    run_generate(cli, fx, TEXT_IDS, want_b)


def engine_has_model_trace(cli):
    p = run(cli, "model", "--help")
    return p.returncode == 0 and "trace" in p.stdout


def long_texts(cli, n_positions):
    """A text of exactly n_positions tokens and one a little longer."""
    def ids_of(text):
        return json.loads(run(cli, "tokenize", "--text", text).stdout)["ids"]
    k = 1
    while len(ids_of(TEXT + " Every effort moves you" * (k + 1))) <= n_positions:
        k += 1
    exact = TEXT + " Every effort moves you" * k
    longer = exact + " Every effort moves you"
    return exact, ids_of(exact), longer, len(ids_of(longer))


def check_engine(cli, fixtures, tmp):
    tokenized = json.loads(run(cli, "tokenize", "--text", TEXT).stdout)
    if tokenized["ids"] != TEXT_IDS:
        fail(f"tokenize {TEXT!r} gave {tokenized['ids']}, want {TEXT_IDS}")
        return
    exact, exact_ids, longer, longer_t = long_texts(cli, mf.TINY["n_positions"])
    exact_tok = json.loads(run(cli, "tokenize", "--text", exact).stdout)
    for fx in fixtures:
        start = time.monotonic()
        doc = check_default_trace(cli, fx, TEXT, TEXT_IDS, tokenized)
        check_generate(cli, fx)
        if fx.name in ("f32", "book_pth", "book_safetensors", "mixed"):
            check_all_stages(cli, fx, TEXT_IDS)
        if fx.name in ("f32", "book_checkpoint", "book_safetensors"):
            check_input_forms(cli, fx, doc, tmp)
            if len(exact_ids) != fx.cfg["n_positions"]:
                fail(f"the long text has {len(exact_ids)} tokens, want {fx.cfg['n_positions']}")
            check_default_trace(cli, fx, exact, exact_ids, exact_tok)
            check_too_long(cli, fx, longer, longer_t)
        if fx.name == "f32":
            check_selections(cli, fx, TEXT_IDS)
            check_bad_ids(cli, fx)
        print(f"  {fx.name}: {time.monotonic() - start:.2f} s", flush=True)


# ---------------------------------------------------------------------------
# 4. A real GPT-2 (gated)


def read_hf_folder(folder):
    with open(os.path.join(folder, "config.json")) as f:
        doc = json.load(f)
    cfg = dict(mf.GPT2_124M)
    cfg.update({k: doc[k] for k in mf.TINY if k in doc})
    index = os.path.join(folder, "model.safetensors.index.json")
    tensors = {}
    if os.path.exists(index):
        with open(index) as f:
            for shard in sorted(set(json.load(f)["weight_map"].values())):
                tensors.update(mf.read_safetensors(os.path.join(folder, shard)))
    else:
        tensors = mf.read_safetensors(os.path.join(folder, "model.safetensors"))
    return cfg, mf.hf_weights_from_files(tensors)


def check_real_gpt2(cli):
    folder = os.environ.get("ATTNSCOPE_GPT2_DIR")
    if not folder:
        print("real GPT-2: skipped (set ATTNSCOPE_GPT2_DIR to a Hugging Face gpt2 folder to run it)")
        return
    cfg, w = read_hf_folder(folder)
    book = mf.book_model_from_hf(w, cfg) if mf.book_math_applies(cfg) else None
    fx = mf.Fixture("gpt2", [folder], cfg, w, book)
    check_default_trace(cli, fx, TEXT, TEXT_IDS, json.loads(run(cli, "tokenize", "--text", TEXT).stdout))
    want = mf.hf_generate(w, cfg, TEXT_IDS, GPT2_NEW_TOKENS)[len(TEXT_IDS):]
    run_generate(cli, fx, TEXT_IDS, want, timeout=300)
    print(f"real GPT-2 ({folder}): greedy continuation {want} {decode(want)!r}")


def main():
    cli = harness.cli_argument("model_oracle_test.py")
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        fixtures = [mf.write_fixture(tmp, name) for name in mf.ALL_VARIANTS]
        for fx in fixtures:
            check_files(fx)
            check_references(fx, TEXT_IDS)
        print(f"references: {len(fixtures)} fixtures, (a) and (b) agree where the math is the book's")
        if engine_has_model_trace(cli):
            check_engine(cli, fixtures, tmp)
        else:
            fail(f"{cli} has no `model trace` (`model --help` does not list it)")
        check_real_gpt2(cli)
    for kind, (ratio, where) in sorted(WORST.items()):
        print(f"  worst {kind}: {ratio:.3f} of its tolerance ({where})")
    print(f"model_oracle: {len(FAILURES)} failure(s), {time.monotonic() - start:.1f} s")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
