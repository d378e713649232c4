#!/usr/bin/env python3
"""export_test.py: attnscope-cli's files: export, imports, explicit weights.

    /usr/bin/python3 export_test.py path/to/attnscope-cli

- NPY: numpy.load of every exported stage of every variant equals the trace
  JSON's numbers exactly (float32, shape, order).
- SVG: every file parses (xml.etree, and xmllint when installed), has one
  cell rect per matrix entry and the token labels on both axes.
- CSV and JSON: exports read back to the trace's float32 values, and feed
  back in as --embeddings.
- Naming: <stage>[_h<head>]_<variant>_<YYYYmmdd-HHMMSS>.<ext>; an existing
  name (file or symlink) gets -1, -2 ... and is never touched.
- Every bad import (embeddings and weights) and every unwritable output:
  exit 2, one "error: " line naming the file and the problem, empty stdout,
  and nothing written or damaged.
- Explicit weights: with PyTorch installed, a module whose weights are
  replaced after construction (load_state_dict) gives the same trace as
  --weights with the same seed, dropout included.

Needs numpy (python3-numpy) for the NPY checks; without it the rest runs and
the script exits 77 (CTest: skipped). Without torch the PyTorch checks are
skipped with a message.
"""

import csv
import io
import json
import math
import os
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402

try:
    import numpy as np
except Exception:  # ImportError, or a broken install
    np = None

TIMEOUT_S = 60
CLI = None  # set in main()

VARIANTS = ["simple", "self_attention_v1", "self_attention_v2", "causal",
            "multihead_wrapper", "multihead"]
RUN_FLAGS = ["--heads", "2", "--d-out", "4", "--qkv-bias", "--dropout", "0.5", "--seed", "7"]
BOOK_TOKENS = ["Your", "journey", "starts", "with", "one", "step"]
# What figure titles call the stages whose ids are not words.
STAGE_NAMES = {"inputs": "X (inputs)", "queries": "Q (queries)", "keys": "K (keys)",
               "values": "V (values)", "scores": "\u03c9 (scores)",
               "scaled_scores": "scaled scores", "mask": "mask (1 = future)",
               "masked_scores": "masked scores", "weights": "attention weights",
               "dropout_mask": "dropout mask", "dropped_weights": "weights after dropout",
               "context": "Z (context vectors)", "concat": "concat (heads side by side)",
               "W_out": "W_out (out_proj)", "b_out": "b_out (out_proj bias)"}
TOKEN_BY_TOKEN = {"scores", "scaled_scores", "mask", "masked_scores", "weights", "dropout_mask",
                  "dropped_weights"}
SKIPPED = []


def run(*args, expect_rc=0, preexec=None):
    """Runs the CLI; asserts the exit code and returns (stdout, stderr)."""
    proc = subprocess.run([CLI, *args], capture_output=True, timeout=TIMEOUT_S,
                          preexec_fn=preexec)
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == expect_rc, (
        f"`attnscope-cli {' '.join(args)}` exited {proc.returncode}, expected {expect_rc}; "
        f"stderr: {err.strip()[:400]!r}")
    return out, err


def trace(*args):
    out, err = run("trace", *args)
    assert err == "", err
    return json.loads(out)


def export(out_dir, fmt, *args):
    """Runs export and returns the printed paths (each must exist)."""
    out, err = run("export", "--format", fmt, "--out", out_dir, *args)
    assert err == "", f"stderr not empty on success: {err[:200]!r}"
    paths = out.splitlines()
    for p in paths:
        assert os.path.isfile(p), f"printed path {p!r} is not a file"
        assert os.path.dirname(os.path.abspath(p)) == os.path.abspath(out_dir), p
    return paths


def fresh_dir(tmp, name):
    path = os.path.join(tmp, name)
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(path)
    return path


def cell(v):
    if isinstance(v, str):
        return {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}[v]
    return float(v)


def f32(x):
    """The float32 nearest to x, as a Python float."""
    return struct.unpack("f", struct.pack("f", x))[0]


def stem_of(stage, variant):
    return stage["id"] + (f"_h{stage['head']}" if stage["head"] >= 0 else "") + f"_{variant}_"


NAME_RE = re.compile(r"^(?P<stem>.+_)(?P<ts>\d{8}-\d{6})(?P<n>-\d+)?\.(?P<ext>[a-z]+)$")


def check_names(doc, paths, ext):
    """Paths are the stages in trace order, named by the rule; returns the timestamp."""
    assert len(paths) == len(doc["stages"]), f"{len(paths)} files for {len(doc['stages'])} stages"
    stamps = set()
    for stage, path in zip(doc["stages"], paths):
        m = NAME_RE.match(os.path.basename(path))
        assert m, f"{path}: name does not follow <stage>[_h<head>]_<variant>_<time>.{ext}"
        assert m["stem"] == stem_of(stage, doc["variant"]), (path, stem_of(stage, doc["variant"]))
        assert m["ext"] == ext, path
        time.strptime(m["ts"], "%Y%m%d-%H%M%S")
        stamps.add(m["ts"])
    assert len(stamps) == 1, f"one export run uses one timestamp, got {stamps}"
    return stamps.pop()


def write(path, text_or_bytes):
    mode = "wb" if isinstance(text_or_bytes, bytes) else "w"
    with open(path, mode) as f:
        f.write(text_or_bytes)
    return path


# ---------------------------------------------------------------------------
# Formats


def test_npy_equals_trace_json(tmp):
    if np is None:
        SKIPPED.append("test_npy_equals_trace_json: numpy is not installed (python3-numpy)")
        return
    for preset in ("book", "shiny"):
        for variant in VARIANTS:
            args = ["--preset", preset, "--variant", variant, *RUN_FLAGS]
            doc = trace(*args)
            out = fresh_dir(tmp, f"npy-{preset}-{variant}")
            paths = export(out, "npy", *args)
            check_names(doc, paths, "npy")
            for stage, path in zip(doc["stages"], paths):
                a = np.load(path, allow_pickle=False)
                assert a.dtype == np.dtype("<f4"), f"{path}: dtype {a.dtype}"
                assert a.flags["C_CONTIGUOUS"], path
                assert list(a.shape) == stage["shape"], f"{path}: shape {a.shape} != {stage['shape']}"
                want = np.array([[cell(v) for v in row] for row in stage["data"]], dtype=np.float32)
                assert np.array_equal(a, want, equal_nan=True), (
                    f"{variant} {stage['id']} head {stage['head']}: npy differs from the trace JSON "
                    f"by {np.nanmax(np.abs(a - want))}")


def test_svg_has_cells_and_token_labels(tmp):
    tokens = ["<a&b>", "\u00fcber", "x\"y", "z"]
    cfg = write(os.path.join(tmp, "svg-cfg.json"), json.dumps(
        {"tokens": tokens, "embeddings": [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [0.7, 0.8, 0.9],
                                          [0.2, -0.1, 0.5]]}))
    xmllint = shutil.which("xmllint")
    if not xmllint:
        SKIPPED.append("xmllint checks: xmllint is not installed (libxml2-utils)")
    for variant in VARIANTS:
        args = ["--config", cfg, "--variant", variant, *RUN_FLAGS]
        doc = trace(*args)
        out = fresh_dir(tmp, f"svg-{variant}")
        paths = export(out, "svg", *args)
        check_names(doc, paths, "svg")
        T = len(tokens)
        for stage, path in zip(doc["stages"], paths):
            if xmllint:
                proc = subprocess.run([xmllint, "--noout", path], capture_output=True)
                assert proc.returncode == 0, f"{path}: xmllint: {proc.stderr.decode()[:300]}"
            root = ET.parse(path).getroot()
            assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
            ns = {"s": "http://www.w3.org/2000/svg"}
            rects = [r for r in root.iter("{http://www.w3.org/2000/svg}rect")
                     if "cell" in r.get("class", "").split()]
            rows, cols = stage["shape"]
            assert len(rects) == rows * cols, f"{path}: {len(rects)} cell rects for {rows}x{cols}"
            row_labels = [t.text for t in root.iterfind(".//s:text[@class='row-label']", ns)]
            col_labels = [t.text for t in root.iterfind(".//s:text[@class='col-label']", ns)]
            if not stage["id"].startswith(("W_", "b_")):
                assert row_labels == tokens, f"{path}: row labels {row_labels}"
            if stage["id"] in TOKEN_BY_TOKEN:
                assert rows == cols == T
                assert col_labels == tokens, f"{path}: column labels {col_labels}"
            # The stage's name for people as title, the run (RUN_FLAGS) as subtitle;
            # the document title holds both.
            title = root.find(".//s:text[@class='title']", ns).text
            subtitle = root.find(".//s:text[@class='subtitle']", ns).text
            doc_title = "".join(root.find("s:title", ns).itertext())
            name = STAGE_NAMES.get(stage["id"], stage["id"])
            want = name + (f", head {stage['head']}" if stage["head"] >= 0 else "")
            assert title == want, f"{path}: title {title!r}, expected {want!r}"
            assert f"({variant})" in subtitle, f"{path}: subtitle {subtitle!r}"
            parts = [] if variant == "simple" else ["d_out 4", "seed 7"]
            parts += ["qkv_bias"] if variant not in ("simple", "self_attention_v1") else []
            parts += ["dropout 0.5"] if variant in ("causal", "multihead_wrapper",
                                                    "multihead") else []
            parts += ["2 heads"] if variant.startswith("multihead") else []
            for part in parts:
                assert part in subtitle, f"{path}: subtitle {subtitle!r} lacks {part!r}"
            assert doc_title.startswith(title) and doc_title.endswith(subtitle), doc_title
            if stage["id"] == "masked_scores":
                masked = [r for r in rects if "masked" in r.get("class", "").split()]
                assert len(masked) == T * (T - 1) // 2, f"{path}: {len(masked)} masked cells"
                texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
                assert texts.count("\u2212\u221e") == T * (T - 1) // 2, "masked cells are not labelled −∞"


def cell_fills(path):
    root = ET.parse(path).getroot()
    return [r.get("fill") for r in root.iter("{http://www.w3.org/2000/svg}rect")
            if "cell" in r.get("class", "").split()]


def test_svg_row_scale(tmp):
    """--row-scale colours each row on its own range: in the book's causal
    weights every row's largest weight gets the top colour, and the colour
    bar's ends are words."""
    args = ["--variant", "causal", "--eval"]
    plain = export(fresh_dir(tmp, "rows-off"), "svg", *args, "--stage", "weights")
    by_row = export(fresh_dir(tmp, "rows-on"), "svg", *args, "--stage", "weights", "--row-scale")
    assert len(plain) == len(by_row) == 1
    weights = trace(*args)["stages"]
    weights = [s for s in weights if s["id"] == "weights"][0]["data"]
    off, on = cell_fills(plain[0]), cell_fills(by_row[0])
    T = len(weights)
    top_on = {on[r * T + max(range(T), key=lambda c: weights[r][c])] for r in range(T)}
    assert len(top_on) == 1, f"row maxima have different colours by row: {top_on}"
    top_off = {off[r * T + max(range(T), key=lambda c: weights[r][c])] for r in range(T)}
    assert len(top_off) > 1, "on one scale the rows' maxima should differ"
    with open(by_row[0], encoding="utf-8") as f:
        text = f.read()
    assert "row max" in text and "each row on its own scale" in text
    with open(plain[0], encoding="utf-8") as f:
        assert "row max" not in f.read()


def test_svg_decimals(tmp):
    """Cells print the book's 4 decimals by default; --decimals changes it."""
    args = ["--variant", "causal", "--eval", "--stage", "weights"]
    four = export(fresh_dir(tmp, "dec-4"), "svg", *args)
    two = export(fresh_dir(tmp, "dec-2"), "svg", *args, "--decimals", "2")
    def values(path):
        root = ET.parse(path).getroot()
        return [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")
                if t.get("class") == "value"]
    assert values(four[0])[0] == "1.0000", values(four[0])[:3]
    assert values(two[0])[0] == "1.00", values(two[0])[:3]


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_csv_round_trip(tmp):
    for variant in VARIANTS:
        args = ["--preset", "book", "--variant", variant, *RUN_FLAGS]
        doc = trace(*args)
        paths = export(fresh_dir(tmp, f"csv-{variant}"), "csv", *args)
        check_names(doc, paths, "csv")
        for stage, path in zip(doc["stages"], paths):
            rows = read_csv(path)
            header, body = rows[0], rows[1:]
            assert header[0] == "", f"{path}: corner cell {header[0]!r}"
            assert len(body) == stage["shape"][0] and len(header) == stage["shape"][1] + 1, path
            if stage["id"] in TOKEN_BY_TOKEN:
                assert header[1:] == BOOK_TOKENS, header
            if not stage["id"].startswith(("W_", "b_")):
                assert [r[0] for r in body] == BOOK_TOKENS, path
            for r, (line, want) in enumerate(zip(body, stage["data"])):
                got = [f32(float(x)) for x in line[1:]]
                exp = [f32(cell(v)) for v in want]
                assert got == exp, f"{path} row {r}: {got} != {exp}"
    # The inputs CSV is an embeddings file: importing it gives the same run.
    args = ["--preset", "shiny", "--variant", "causal"]
    paths = export(fresh_dir(tmp, "csv-inputs"), "csv", *args, "--stage", "inputs")
    again = trace("--embeddings", paths[0], "--variant", "causal")
    assert again == trace(*args), "re-importing the exported inputs CSV changed the trace"


def test_json_round_trip(tmp):
    for variant in VARIANTS:
        args = ["--preset", "book", "--variant", variant, *RUN_FLAGS]
        doc = trace(*args)
        paths = export(fresh_dir(tmp, f"json-{variant}"), "json", *args)
        check_names(doc, paths, "json")
        for stage, path in zip(doc["stages"], paths):
            with open(path, encoding="utf-8") as f:
                got = json.load(f)
            assert set(got) == {"id", "layer", "head", "variant", "tokens", "shape", "data"}, set(got)
            assert (got["id"], got["layer"], got["head"], got["variant"], got["tokens"],
                    got["shape"]) == \
                (stage["id"], stage["layer"], stage["head"], variant, BOOK_TOKENS,
                 stage["shape"]), path
            assert got["layer"] == 0, path
            assert got["data"] == stage["data"], f"{path}: data differs from the trace"
    # An exported token-rows stage is an embeddings file too.
    args = ["--preset", "shiny", "--variant", "simple"]
    paths = export(fresh_dir(tmp, "json-context"), "json", *args, "--stage", "context")
    again = trace("--embeddings", paths[0])
    ctx = [s for s in trace(*args)["stages"] if s["id"] == "context"][0]
    assert again["tokens"] == ["Hello", "shiny", "sun"]
    assert again["stages"][0]["data"] == ctx["data"]


def test_stage_and_head_selection(tmp):
    args = ["--preset", "book", "--variant", "multihead_wrapper", "--heads", "3"]
    out = fresh_dir(tmp, "select")
    paths = export(out, "csv", *args, "--stage", "weights")
    assert [os.path.basename(p).split("_multihead")[0] for p in paths] == \
        ["weights_h0", "weights_h1", "weights_h2"], paths
    paths = export(out, "csv", *args, "--stage", "weights", "--head", "1")
    assert len(paths) == 1 and os.path.basename(paths[0]).startswith("weights_h1_multihead_wrapper_")
    paths = export(out, "csv", *args, "--head", "-1")
    assert [os.path.basename(p).split("_multihead")[0] for p in paths] == ["inputs", "output"]


def test_naming_never_overwrites(tmp):
    out = fresh_dir(tmp, "names")
    sentinel = write(os.path.join(tmp, "sentinel.txt"), "do not touch")
    now = time.time()
    taken = {}
    for dt in range(-1, 6):  # every second the export may land in
        ts = time.strftime("%Y%m%d-%H%M%S", time.localtime(now + dt))
        name = os.path.join(out, f"weights_causal_{ts}.csv")
        if dt % 2:
            os.symlink(sentinel, name)
        else:
            write(name, f"old {ts}")
        taken[name] = dt % 2
    paths = export(out, "csv", "--variant", "causal", "--stage", "weights")
    assert len(paths) == 1 and re.search(r"_\d{8}-\d{6}-1\.csv$", paths[0]), paths
    with open(sentinel) as f:
        assert f.read() == "do not touch", "export wrote through a symlink"
    for name, is_link in taken.items():
        assert os.path.islink(name) == bool(is_link), name
        if not is_link:
            with open(name) as f:
                assert f.read().startswith("old "), f"{name} was overwritten"
    # The same export twice: new names, the first files unchanged.
    first = export(out, "npy", "--variant", "causal")
    before = {p: open(p, "rb").read() for p in first}
    second = export(out, "npy", "--variant", "causal")
    assert not set(first) & set(second), "a second export reused a name"
    assert all(open(p, "rb").read() == b for p, b in before.items())
    hidden = [n for n in os.listdir(out) if n.startswith(".")]
    assert not hidden, f"temporary files left behind: {hidden}"


def test_sanitized_names(tmp):
    # Stage ids come from the engine, never from the user; tokens never reach
    # a file name. Still, no name may hold a separator or start with a dot.
    out = fresh_dir(tmp, "sanitize")
    cfg = write(os.path.join(tmp, "evil.json"), json.dumps(
        {"tokens": ["../x", "/etc/passwd"], "embeddings": [[1, 2], [3, 4]]}))
    for p in export(out, "csv", "--config", cfg):
        base = os.path.basename(p)
        assert "/" not in base and not base.startswith(".") and ".." not in base, base
    assert not os.path.exists(os.path.join(tmp, "x")), "a token escaped the output folder"


# ---------------------------------------------------------------------------
# Explicit weights


def test_weights_files(tmp):
    """--weights JSON (canonical and state_dict style) and a folder of .npy files."""
    base = ["--preset", "book", "--variant", "multihead", "--heads", "2", "--d-out", "4",
            "--qkv-bias", "--dropout", "0.5", "--seed", "11"]
    doc = trace(*base)
    st = {(s["id"], s["head"]): s["data"] for s in doc["stages"]}
    canonical = {name: st[(name, -1)] for name in
                 ("W_query", "W_key", "W_value", "W_out")}
    for name in ("b_query", "b_key", "b_value", "b_out"):
        canonical[name] = st[(name, -1)][0]
    path = write(os.path.join(tmp, "w.json"), json.dumps(canonical))
    got = trace(*base, "--weights", path)
    assert got["config"].get("weights") == "explicit", got["config"]
    assert got["stages"] == doc["stages"], "the seeded weights given explicitly changed the trace"
    assert "weights" not in doc["config"]

    def transposed(m):
        return [list(r) for r in zip(*m)]
    sd = {"W_query.weight": transposed(canonical["W_query"]), "W_query.bias": canonical["b_query"],
          "W_key.weight": transposed(canonical["W_key"]), "W_key.bias": canonical["b_key"],
          "W_value.weight": transposed(canonical["W_value"]), "W_value.bias": canonical["b_value"],
          "out_proj.weight": transposed(canonical["W_out"]), "out_proj.bias": canonical["b_out"],
          "mask": [[0.0, 1.0], [0.0, 0.0]]}
    path = write(os.path.join(tmp, "sd.json"), json.dumps(sd))
    assert trace(*base, "--weights", path)["stages"] == doc["stages"]
    text, _ = run("trace", *base, "--weights", path, "--format", "text")
    assert "explicit weights" in text.splitlines()[0], text.splitlines()[0]

    if np is None:
        SKIPPED.append("test_weights_files (npy part): numpy is not installed")
        return
    wdir = fresh_dir(tmp, "npy-weights")
    for name, value in sd.items():
        if name != "mask":
            np.save(os.path.join(wdir, name + ".npy"), np.array(value, dtype=np.float64))
    assert trace(*base, "--weights", wdir)["stages"] == doc["stages"]
    # Repeated --weights: one file per tensor.
    files = []
    for name in sorted(os.listdir(wdir)):
        files += ["--weights", os.path.join(wdir, name)]
    assert trace(*base, *files)["stages"] == doc["stages"]


def test_explicit_weights_match_pytorch(tmp):
    """load_state_dict after construction == --weights with the same seed (dropout too)."""
    try:
        import torch
        import book_classes as book
        import torch_oracle as oracle
    except Exception as exc:
        SKIPPED.append(f"test_explicit_weights_match_pytorch: cannot import torch ({exc})")
        return
    torch.set_num_threads(1)
    x = torch.tensor(oracle.BOOK_INPUTS)
    T = x.shape[0]
    cases = [("causal", lambda: book.CausalAttention(3, 4, T, 0.5, qkv_bias=True), "context"),
             ("multihead_wrapper",
              lambda: book.MultiHeadAttentionWrapper(3, 4, T, 0.5, 2, qkv_bias=True), "output"),
             ("multihead", lambda: book.MultiHeadAttention(3, 4, T, 0.5, 2, qkv_bias=True),
              "output"),
             ("self_attention_v1", lambda: book.SelfAttention_v1(3, 4), "context")]
    for variant, make, last in cases:
        torch.manual_seed(999)
        donor = make()  # the weights a notebook trained or loaded
        state = {k: v.tolist() for k, v in donor.state_dict().items()}
        path = write(os.path.join(tmp, f"sd-{variant}.json"), json.dumps(state))
        torch.manual_seed(42)
        module = make()
        module.load_state_dict(donor.state_dict())
        module.train()
        with torch.no_grad():
            want = module(x if variant == "self_attention_v1" else x.unsqueeze(0))
            want = want if variant == "self_attention_v1" else want[0]
        got = trace("--preset", "book", "--variant", variant, "--d-out", "4", "--heads", "2",
                    "--qkv-bias", "--dropout", "0.5", "--seed", "42", "--weights", path)
        out = [s for s in got["stages"] if s["id"] == last and s["head"] == -1][0]["data"]
        scale = max(1.0, float(want.abs().max()))
        diff = max(abs(a - b) for ra, rb in zip(out, want.tolist()) for a, b in zip(ra, rb))
        assert diff <= 1e-5 * scale, f"{variant}: --weights output differs from PyTorch by {diff}"
        wq = [s for s in got["stages"] if s["id"] == "W_query"][0]["data"]
        donor_wq = (donor.W_query if variant == "self_attention_v1" else
                    donor.heads[0].W_query.weight.T if variant == "multihead_wrapper" else
                    donor.W_query.weight.T)
        assert [[f32(v) for v in r] for r in wq] == donor_wq.tolist(), f"{variant}: W_query"


# ---------------------------------------------------------------------------
# Bad input: exit 2, one line naming the file and the problem, nothing written


def expect_error(argv, must_contain, out_dir=None, victim=None):
    proc = subprocess.run([CLI, *argv], capture_output=True, timeout=TIMEOUT_S)
    err = proc.stderr.decode("utf-8", "replace")
    out = proc.stdout.decode("utf-8", "replace")
    what = f"`attnscope-cli {' '.join(argv)}`"
    assert proc.returncode == 2, f"{what}: exit {proc.returncode}, stderr {err[:300]!r}"
    assert out == "", f"{what}: stdout not empty: {out[:200]!r}"
    lines = err.split("\n")
    assert len(lines) == 2 and lines[1] == "" and lines[0].startswith("error: "), \
        f"{what}: stderr is not one 'error: ' line: {err[:300]!r}"
    for part in ([must_contain] if isinstance(must_contain, str) else must_contain):
        assert part in lines[0], f"{what}: {lines[0]!r} does not mention {part!r}"
    if out_dir is not None:
        names = sorted(os.listdir(out_dir))
        assert names == ["victim.csv"], f"{what}: the output folder now holds {names}"
        with open(victim) as f:
            assert f.read() == "precious", f"{what}: damaged an existing file"


def bad_embedding_files(tmp):
    """[(file, expected message parts)]; the file name is always expected too."""
    d = fresh_dir(tmp, "bad-emb")
    cases = []

    def add(name, content, *expect):
        path = os.path.join(d, name)
        if content is not None:
            write(path, content)
        cases.append((path, list(expect)))

    add("missing.csv", None, "no such file")
    add("empty.csv", "", "is empty")
    add("ragged.csv", "1,2,3\n4,5\n", "line 2 has 2 cells but line 1 has 3")
    add("text.csv", "1,2\n3,four\n", "line 2, column 2: 'four' is not a number")
    add("nan.csv", "a,1,2\nb,nan,3\n", "line 2, column 2 is 'nan'", "finite")
    add("inf.csv", "a,1,2\nb,3,-inf\n", "line 2, column 3 is '-inf'")
    add("huge.csv", "1,1e39\n", "too large for a 32-bit float")
    add("unclosed.csv", "\"a,1\n", "never closed")
    add("nan.json", '[[1, 2], ["nan", 3]]', "embeddings[1][0] is nan")
    add("ragged.json", "[[1, 2], [3]]", "ragged")
    add("bad.json", "[[1, 2]", "is not valid JSON")
    add("field.json", '{"embeddings": [[1]], "d_out": 3}', "unknown field 'd_out'")
    add("magic.npy", b"NUMPY not really", "does not start with the NumPy magic")
    add("header.npy", b"\x93NUMPY\x01\x00\x20\x00{'descr': '<f4', 'shape': (1, 1)}   \n",
        "bad header")
    if np is not None:
        def npy(name, array, *expect, fortran=False):
            path = os.path.join(d, name)
            np.save(path, np.asfortranarray(array) if fortran else array)
            cases.append((path, list(expect)))
        npy("ints.npy", np.arange(6).reshape(2, 3), "dtype '<i8'")
        npy("f16.npy", np.ones((2, 3), dtype=np.float16), "dtype '<f2'")
        npy("three-d.npy", np.ones((2, 3, 4), dtype=np.float32), "shape (2, 3, 4)", "2-D")
        npy("one-d.npy", np.ones(3, dtype=np.float32), "shape (3,)", "2-D")
        npy("fortran.npy", np.ones((3, 2), dtype=np.float32), "Fortran order", fortran=True)
        npy("nan.npy", np.array([[1, 2], [3, np.nan]], dtype=np.float32), "index [1, 1] is nan")
        npy("inf.npy", np.array([[1, np.inf]]), "index [0, 1] is inf")
        npy("tall.npy", np.ones((4097, 1), dtype=np.float32), "shape (4097, 1)", "at most 4096")
        path = os.path.join(d, "truncated.npy")
        np.save(path, np.ones((4, 3), dtype=np.float32))
        with open(path, "rb") as f:
            data = f.read()
        write(path, data[:-5])
        cases.append((path, ["is truncated"]))
    big = os.path.join(d, "big.csv")
    with open(big, "wb") as f:
        f.truncate(256 * 1024 * 1024 + 1)  # sparse: no disk space used
    cases.append((big, ["limited to 256 MB"]))
    cases.append((d, ["is a folder"]))
    return cases


def test_bad_embeddings(tmp):
    out = fresh_dir(tmp, "bad-emb-out")
    victim = write(os.path.join(out, "victim.csv"), "precious")
    for path, expect in bad_embedding_files(tmp):
        expect_error(["trace", "--embeddings", path], [path] + expect)
        expect_error(["export", "--format", "csv", "--out", out, "--embeddings", path],
                     [path] + expect, out, victim)
    # Rows that do not match the current tokens (a config that names 3 tokens).
    cfg = write(os.path.join(tmp, "three.json"), json.dumps(
        {"tokens": ["a", "b", "c"], "embeddings": [[1], [2], [3]]}))
    four = write(os.path.join(tmp, "four.json"), "[[1, 2], [3, 4], [5, 6], [7, 8]]")
    expect_error(["trace", "--config", cfg, "--embeddings", four],
                 [four, "has 4 rows but there are 3 tokens"])
    expect_error(["trace", "--preset", "book", "--embeddings", four],
                 [four, "has 4 rows but there are 6 tokens"])
    expect_error(["trace", "--embeddings", ""], "--embeddings needs a file path")


def test_bad_weights(tmp):
    d = fresh_dir(tmp, "bad-w")
    out = fresh_dir(tmp, "bad-w-out")
    victim = write(os.path.join(out, "victim.csv"), "precious")
    w = [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]]  # d_in 3 x d_out 2
    good = {"W_query": w, "W_key": w, "W_value": w}
    cases = [
        ("missing.json", {"W_query": w, "W_key": w}, "W_value is missing"),
        ("shape.json", dict(good, W_key=[[1, 2, 3], [4, 5, 6]]), "it looks transposed"),
        ("d_in.json", dict(good, W_value=[[1, 2]] * 4), "d_in 4 but the embeddings have d_in 3"),
        ("nan.json", dict(good, W_query=[[0.5, "nan"]] * 3), "W_query[0][1] is nan"),
        ("name.json", dict(good, W_qeury=w), "unknown weight name 'W_qeury'"),
        ("bias.json", dict(good, b_query=[1, 2]), "qkv_bias is false"),
        ("extra.json", dict(good, W_out=[[1, 2], [3, 4]]), "causal has no W_out"),
        ("list.json", [1, 2], "must be a JSON object"),
    ]
    for name, content, expect in cases:
        path = write(os.path.join(d, name), json.dumps(content))
        args = ["--variant", "causal", "--weights", path]
        expect_error(["trace", *args], [path, expect])
        expect_error(["export", "--format", "npy", "--out", out, *args], [path, expect], out, victim)
    wdir = fresh_dir(tmp, "w-empty")
    expect_error(["trace", "--variant", "causal", "--weights", wdir], [wdir, "without .npy files"])
    if np is not None:
        path = os.path.join(d, "weights.npy")
        np.save(path, np.ones((3, 2), dtype=np.float32))
        expect_error(["trace", "--variant", "causal", "--weights", path],
                     [path, "does not say which tensor"])
        path = os.path.join(d, "W_query.npy")
        np.save(path, np.ones((3, 2), dtype=np.int32))
        expect_error(["trace", "--variant", "causal", "--weights", path], [path, "dtype '<i4'"])
    expect_error(["trace", "--variant", "simple", "--weights", write(os.path.join(d, "s.json"),
                                                                     json.dumps(good))],
                 "has no trainable weights")


# ---------------------------------------------------------------------------
# Unwritable output


def test_unwritable_output(tmp):
    # A missing folder is created with its parents, and stderr says so.
    missing = os.path.join(tmp, "no-such-folder", "nested")
    r = subprocess.run([CLI, "export", "--format", "csv", "--out", missing],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"export --out {missing} failed: {r.stderr}"
    assert os.path.isdir(missing), f"export --out did not create {missing}"
    assert f"created the folder {missing}" in r.stderr, \
        f"export --out did not say it created {missing}: {r.stderr!r}"
    written = r.stdout.split()
    assert written and all(os.path.dirname(p) == missing for p in written), r.stdout
    plain = write(os.path.join(tmp, "plain-file"), "x")
    expect_error(["export", "--format", "csv", "--out", plain], [plain, "is not a folder"])
    expect_error(["export", "--format", "csv", "--out", os.path.join(plain, "sub")],
                 ["plain-file"])
    if os.geteuid() != 0:
        ro = fresh_dir(tmp, "read-only")
        write(os.path.join(ro, "victim.csv"), "precious")
        os.chmod(ro, 0o555)
        try:
            expect_error(["export", "--format", "csv", "--out", ro], ["permission denied"], ro,
                         os.path.join(ro, "victim.csv"))
        finally:
            os.chmod(ro, 0o755)
    else:
        SKIPPED.append("read-only folder case: running as root, which ignores permissions")


def test_failed_write_removes_what_the_export_wrote(tmp):
    # A file size limit makes a large write fail (EFBIG) after the small
    # stages are written: the export must take them back and report it.
    out = fresh_dir(tmp, "efbig")
    victim = write(os.path.join(out, "victim.csv"), "precious")
    cfg = write(os.path.join(tmp, "forty.json"), json.dumps(
        {"embeddings": [[(i * 7 + j) % 5 / 5 for j in range(5)] for i in range(40)],
         "variant": "causal"}))

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4000, 4000))

    proc = subprocess.run([CLI, "export", "--format", "npy", "--out", out, "--config", cfg],
                          capture_output=True, timeout=TIMEOUT_S, preexec_fn=limit)
    err = proc.stderr.decode()
    assert proc.returncode == 2, f"exit {proc.returncode}: {err!r}"
    assert proc.stdout == b"", proc.stdout
    assert err.startswith("error: cannot write ") and "too large" in err, err
    assert sorted(os.listdir(out)) == ["victim.csv"], sorted(os.listdir(out))
    with open(victim) as f:
        assert f.read() == "precious"


def test_export_usage_errors(tmp):
    out = fresh_dir(tmp, "usage")
    expect_error(["export", "--out", out], "--format")
    expect_error(["export", "--format", "png", "--out", out], "--format")
    expect_error(["export", "--format", "csv"], "--out")
    expect_error(["export", "--format", "csv", "--out", out, "--stage", "nope"],
                 ["unknown stage 'nope'", "weights"])
    expect_error(["export", "--format", "csv", "--out", out, "--variant", "causal", "--stage",
                  "weights", "--head", "2"], "has head 2")
    # Too large for SVG: refused before anything is written.
    big = write(os.path.join(tmp, "big.json"), json.dumps(
        {"embeddings": [[i % 3, 1] for i in range(600)]}))
    expect_error(["export", "--format", "svg", "--out", out, "--config", big],
                 ["SVG export is limited", "npy"])
    assert os.listdir(out) == []
    expect_error(["export", "--format", "csv", "--out", out, "--row-scale"],
                 ["--row-scale", "--format svg"])
    expect_error(["export", "--format", "csv", "--out", out, "--decimals", "2"],
                 ["--decimals", "--format svg"])
    expect_error(["export", "--format", "svg", "--out", out, "--decimals", "7"],
                 "--decimals (7) must be between 1 and 6")
    assert os.listdir(out) == []
    help_text, _ = run("export", "--help")
    for flag in ("--format", "--out", "--stage", "--head", "--embeddings", "--weights", "--row-scale"):
        assert flag in help_text, f"export --help does not list {flag}"
    help_text, _ = run("trace", "--help")
    assert "--embeddings" in help_text and "--weights" in help_text


TESTS = [test_npy_equals_trace_json, test_svg_has_cells_and_token_labels, test_svg_row_scale,
         test_svg_decimals,
         test_csv_round_trip,
         test_json_round_trip, test_stage_and_head_selection, test_naming_never_overwrites,
         test_sanitized_names, test_weights_files, test_explicit_weights_match_pytorch,
         test_bad_embeddings, test_bad_weights, test_unwritable_output,
         test_failed_write_removes_what_the_export_wrote, test_export_usage_errors]


def main():
    global CLI
    CLI = os.path.abspath(harness.cli_argument("export_test.py"))
    return harness.run_main("export", TESTS, tmp_prefix="attnscope-export-",
                            skipped_parts=SKIPPED, missing=np is None)


if __name__ == "__main__":
    sys.exit(main())
