#!/usr/bin/env python3
"""Lists C++ functions longer than a limit; exits 1 when there is one.

usage: function_lengths.py [--max N] [--top K] PATH...

PATHs are files or folders (searched for .cpp/.hpp/.h). Folders named
`tests` are skipped: a test may be long. A function is a brace block at
namespace or class scope whose header ends like a function's (`)`, then
qualifiers such as const, noexcept, override or a trailing return type);
its length counts from the header's first line to the closing brace.
Initialisers and data tables (`= {`) are not functions, and neither is a
function whose line before it is a comment starting "Data table:" (one
that only builds a table). Comments and string literals are blanked first,
so braces inside them do not count.
"""
import argparse
import pathlib
import re
import sys

FUNCTION_TAIL = re.compile(
    r"\)\s*(?:const|noexcept(?:\([^()]*\))?|override|final|mutable|&|&&|\s|->\s*[\w:<>,\s*&]+)*$")
SCOPE_HEAD = re.compile(r"\b(namespace|class|struct|union|extern)\b[^()]*$")


def blank_comments_and_strings(text, keep_strings=False):
    """Same length and line breaks, with comments and literals as spaces
    (string literals kept as they are when keep_strings)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i)
            delim = text[i + 2:open_paren]
            j = text.find(")" + delim + '"', open_paren)
            j = n if j < 0 else j + len(delim) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text[i] in "\"'":
            # a digit separator (1'000) is not a character literal
            if text[i] == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum() \
                    and text[i - 1] not in "uUL":
                out.append(" ")
                i += 1
                continue
            quote, j = text[i], i + 1
            while j < n and text[j] != quote and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            keep = keep_strings and quote == '"'
            out.append(text[i:j] if keep else re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, last line) of each function defined in the file."""
    raw = path.read_text(encoding="utf-8", errors="replace")
    raw_lines = raw.split("\n")
    text = blank_comments_and_strings(raw)
    # preprocessor lines are not code headers
    text = re.sub(r"^[ \t]*#.*$", lambda m: " " * len(m.group(0)), text, flags=re.M)
    stack = []  # (kind, name, start line)
    header_start = 0
    found = []
    for i, c in enumerate(text):
        if c in ";{}":
            if c == "{":
                header = text[header_start:i].strip()
                parent = stack[-1][0] if stack else "scope"
                kind, name, start = "other", "", 0
                if parent == "scope":
                    if SCOPE_HEAD.search(header) and "=" not in header:
                        kind = "scope"
                    elif header and FUNCTION_TAIL.search(header) and not header.endswith("="):
                        kind = "function"
                        head = header.split("(")[0].split()
                        name = head[-1] if head else "?"
                        first = header_start + (len(text[header_start:i]) - len(text[header_start:i].lstrip()))
                        start = text.count("\n", 0, first) + 1
                stack.append((kind, name, start))
            elif c == "}" and stack:
                kind, name, start = stack.pop()
                table = start >= 2 and raw_lines[start - 2].strip().startswith("// Data table:")
                if kind == "function" and not table:
                    found.append((name, start, text.count("\n", 0, i) + 1))
            header_start = i + 1
    return found


def sources(paths):
    for p in map(pathlib.Path, paths):
        if p.is_file():
            yield p
            continue
        for f in sorted(p.rglob("*")):
            if f.suffix in (".cpp", ".hpp", ".h") and "tests" not in f.parts:
                yield f


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=int, default=120, help="longest allowed function, in lines")
    ap.add_argument("--top", type=int, default=0, help="also list the K longest functions")
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args()
    rows = []
    for f in sources(args.paths):
        for name, first, last in functions(f):
            rows.append((last - first + 1, f"{f}:{first}", name))
    rows.sort(reverse=True)
    for length, where, name in rows[: args.top]:
        print(f"{length:5d}  {where}  {name}")
    long = [r for r in rows if r[0] > args.max]
    for length, where, name in long:
        print(f"error: {where}: {name} is {length} lines, over {args.max}; split it into "
              f"functions with one job each", file=sys.stderr)
    return 1 if long else 0


if __name__ == "__main__":
    sys.exit(main())
