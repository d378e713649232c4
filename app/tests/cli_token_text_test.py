#!/usr/bin/env python3
"""cli_token_text_test.py: tokens that stop inside a UTF-8 character, on the
way out of `attnscope-cli model generate/trace/export` (standard library only).

    python3 cli_token_text_test.py path/to/attnscope-cli

GPT-2's tokens are bytes, and one may hold part of a character (126 is the
byte C2 alone, 30266 is E6 9D, 109 is B1: the end of 東); its 256 one-byte
tokens spell any bytes at all. Every output must be valid UTF-8 all the same:

- `model generate`'s text (--format text and json) is the whole sequence's
  bytes decoded as tiktoken's decode does, Python's
  bytes.decode("utf-8", errors="replace"): a character split across two
  tokens comes out whole, a cut one as U+FFFD.
- `model trace` (json and text) lists single tokens as printable text, the
  bytes of a cut character as <0xHH>; its next tokens likewise.
- `model export` labels (CSV, JSON, SVG) are the trace's tokens; the SVG's
  subtitle quotes the run's text, decoded as a whole.
- A model folder whose name is not UTF-8 is named with U+FFFD in the trace.

Each output is read as bytes and decoded strictly, so that a stray byte
fails here by name instead of being repaired or refused on the way in.
"""

import html
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile
from xml.etree import ElementTree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from cli_model_run_test import tiny_gpt2, write_model  # noqa: E402

TIMEOUT_S = 60
ROOT = pathlib.Path(__file__).resolve().parents[2]

# Token id lists that end, start or are cut inside a character; the last
# two hold 東 whole across two tokens.
PARTIAL_IDS = ["126", "109", "30266", "15496,11,126", "30266,109", "30266,109,30266"]


def bytes_to_unicode():
    """OpenAI's encoder.py map from bytes to the characters its vocabulary spells them with."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def token_bytes_table():
    """id -> the token's bytes, from the vocabulary the CLI reads."""
    assets = pathlib.Path(os.environ.get("ATTNSCOPE_ASSETS") or ROOT / "assets")
    encoder = json.loads((assets / "gpt2" / "encoder.json").read_text(encoding="utf-8"))
    byte_of = {c: b for b, c in bytes_to_unicode().items()}
    return {i: bytes(byte_of[c] for c in token) for token, i in encoder.items()}


def printable(b):
    """attnscope's printable_token: whole characters kept, other bytes as <0xHH>."""
    out, i = "", 0
    while i < len(b):
        for n in (1, 2, 3, 4):
            try:
                out += b[i:i + n].decode("utf-8")
                i += n
                break
            except UnicodeDecodeError:
                continue
        else:
            out += f"<0x{b[i]:02X}>"
            i += 1
    return out


def run(cli, *args):
    """Exit code, stdout as bytes, stderr (as text, for messages)."""
    p = subprocess.run([cli, *args], capture_output=True, timeout=TIMEOUT_S)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def strict(raw, what, failures):
    """raw decoded as strict UTF-8, or None (and a failure naming the first bad byte)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        around = raw[max(e.start - 20, 0):e.end + 20]
        failures.append(f"{what}: not valid UTF-8 at byte {e.start}: {around!r}")
        return None


def byte_sequences(table):
    """Id lists of GPT-2's one-byte tokens spelling ill-formed UTF-8: each case
    of Python's replace decoding (cut 2-, 3- and 4-byte characters, lone
    continuation bytes, overlong forms, surrogates, F5..FF), then random bytes."""
    id_of_byte = {b[0]: i for i, b in table.items() if len(b) == 1}
    cases = [b"a\xc3", b"\xe6\x9d", b"\xf0\x9f\x98", b"\x80\xbf", b"\xc0\xaf",
             b"\xe0\x80\xaf", b"\xf0\x80\x80\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
             b"\xf5\xf8\xfe\xff", b"\xe6\x9dx\xb1", b"\xc3\xa9\xe2\x82\xac\xe2\x82"]
    rng = random.Random(11)
    for _ in range(20):
        cases.append(bytes(rng.choice((rng.randrange(256), rng.randrange(0x80, 0xC0)))
                           for _ in range(rng.randrange(1, 13))))
    return [",".join(str(id_of_byte[x]) for x in case) for case in cases]


def check_generate(cli, model, table, failures):
    for ids in PARTIAL_IDS + byte_sequences(table):
        given = [int(x) for x in ids.split(",")]
        what = f"generate --ids {ids} --tokens 1 --format json"
        code, out, err = run(cli, "model", "generate", model, "--ids", ids, "--tokens", "1",
                             "--format", "json")
        text = strict(out, what, failures) if code == 0 else None
        if code != 0:
            failures.append(f"{what}: exit {code}: {err}")
        if text is None:
            continue
        doc = json.loads(text)
        if doc["ids"][:len(given)] != given or doc["ids"] != given + doc["new_ids"] or \
                len(doc["new_ids"]) != 1:
            failures.append(f"{what}: ids {doc['ids']} new_ids {doc['new_ids']}")
            continue
        want = b"".join(table[i] for i in doc["ids"]).decode("utf-8", errors="replace")
        if doc["text"] != want:
            failures.append(f"{what}: text {doc['text']!r}, Python's replace decoding "
                            f"gives {want!r}")
        what = f"generate --ids {ids} --tokens 1 --format text"
        code, out, err = run(cli, "model", "generate", model, "--ids", ids, "--tokens", "1")
        shown = strict(out, what, failures) if code == 0 else None
        if code != 0 or (shown is not None and shown != want + "\n"):
            failures.append(f"{what}: exit {code} {out!r} {err}, want {want!r}")
    # The oracle's own premise: 東 split over 30266 and 109 decodes whole.
    if (table[30266] + table[109]).decode("utf-8", errors="replace") != "東":
        failures.append("30266, 109 is not 東 in the vocabulary")


def check_trace(cli, model, table, failures):
    ids = "15496,126,30266,109,30266"
    given = [int(x) for x in ids.split(",")]
    what = f"trace --ids {ids}"
    code, out, err = run(cli, "model", "trace", model, "--ids", ids, "--layers", "0")
    text = strict(out, what, failures) if code == 0 else None
    if code != 0:
        failures.append(f"{what}: exit {code}: {err}")
    if text is not None:
        doc = json.loads(text)
        if doc["tokens"] != [printable(table[i]) for i in given] or \
                doc["tokens"][1:] != ["<0xC2>", "<0xE6><0x9D>", "<0xB1>", "<0xE6><0x9D>"]:
            failures.append(f"{what}: tokens {doc['tokens']}")
        for n in doc["next_token"]:
            if n["token"] != printable(table[n["id"]]):
                failures.append(f"{what}: next token {n}")
    code, out, err = run(cli, "model", "trace", model, "--ids", ids, "--layers", "0",
                         "--format", "text")
    shown = strict(out, what + " --format text", failures) if code == 0 else None
    if code != 0 or (shown is not None and "<0xC2>" not in shown):
        failures.append(f"{what} --format text: exit {code} {err} {out[:300]!r}")


def check_export(cli, model, table, tmp, failures):
    ids = [30266, 126, 109]  # E6 9D | C2 | B1: a cut 東, then ± across two tokens
    whole = b"".join(table[i] for i in ids).decode("utf-8", errors="replace")
    for fmt in ("csv", "json", "svg"):
        out_dir = os.path.join(tmp, "export-" + fmt)
        os.mkdir(out_dir)
        what = f"export --format {fmt}"
        code, out, err = run(cli, "model", "export", model, "--ids", ",".join(map(str, ids)),
                             "--layers", "0", "--heads", "0", "--stages", "weights", "--format",
                             fmt, "--out", out_dir)
        paths = out.decode("utf-8", "replace").split()
        if code != 0 or not paths:
            failures.append(f"{what}: exit {code}: {err}")
            continue
        for path in paths:
            name = os.path.basename(path)
            body = strict(pathlib.Path(path).read_bytes(), f"{what}: {name}", failures)
            if body is None:
                continue
            if fmt == "svg":
                # The subtitle quotes the run's text, decoded as a whole.
                root = ElementTree.fromstring(body)
                sub = [e.text for e in root.iter() if e.get("class") == "subtitle"]
                if sub != [f'tiny, 3 tokens: "{whole}"']:
                    failures.append(f"{what}: {name}: subtitle {sub}, want the text {whole!r}")
                body = html.unescape(body)
            if "<0xE6><0x9D>" not in body or "<0xC2>" not in body:
                failures.append(f"{what}: {name} has no <0xE6><0x9D> and <0xC2> labels")


def check_folder_name(cli, model, failures):
    """A model folder whose name is not UTF-8: the name is written with U+FFFD."""
    odd = os.fsencode(model) + b"-\xff\xfe"
    os.rename(os.fsencode(model), odd)
    try:
        what = "trace of a folder named " + repr(os.path.basename(odd))
        p = subprocess.run([os.fsencode(cli), b"model", b"trace", odd, b"--ids", b"15496,126",
                            b"--layers", b"0"], capture_output=True, timeout=TIMEOUT_S)
        text = strict(p.stdout, what, failures) if p.returncode == 0 else None
        if p.returncode != 0:
            failures.append(f"{what}: exit {p.returncode}: {p.stderr.decode('utf-8', 'replace')}")
        want = os.path.basename(odd).decode("utf-8", errors="replace")
        if text is not None and json.loads(text).get("model") != want:
            failures.append(f"{what}: model {json.loads(text).get('model')!r}, want {want!r}")
    finally:
        os.rename(odd, os.fsencode(model))


def main():
    cli = harness.cli_argument("cli_token_text_test.py")
    failures = []
    table = token_bytes_table()
    with tempfile.TemporaryDirectory() as tmp:
        model = write_model(os.path.join(tmp, "tiny"), tiny_gpt2(random.Random(5)))
        check_generate(cli, model, table, failures)
        check_trace(cli, model, table, failures)
        check_export(cli, model, table, tmp, failures)
        check_folder_name(cli, model, failures)
    return harness.report_failures("cli_token_text", failures)


if __name__ == "__main__":
    sys.exit(main())
