#!/usr/bin/env python3
"""Finds stage ids spelt as string literals in C++ code; exits 1 when there is one.

usage: stage_literals.py PATH...

The stage catalogue (core/include/attnscope/base/stages.hpp) gives every stage id
a constant, stage_id::weights, so that a misspelt id does not compile. A
literal such as "weights" in code (not in a comment) is either such an id
and should be the constant, or a different thing that happens to share the
spelling (a JSON key, a step name, an ImGui id); say so with a comment
containing "not a stage" on that line, or put the lines between the comments
`// stage-literals: off (why)` and `// stage-literals: on` (which survive
reformatting). Folders named `tests`, and the catalogue's own files, are not
searched.
"""
import pathlib
import re
import sys

from function_lengths import blank_comments_and_strings

CATALOGUE = pathlib.Path("core/include/attnscope/base/stages.hpp")


def stage_ids():
    """The ids the catalogue gives a constant: inline constexpr char weights[] = "weights";"""
    ids = re.findall(r'inline constexpr char (\w+)\[\] = "\1";', CATALOGUE.read_text(encoding="utf-8"))
    if not ids:
        sys.exit(f"error: found no stage_id constants in {CATALOGUE}; has its form changed?")
    return ids


def main():
    literal = re.compile(r'"(' + "|".join(stage_ids()) + r')"')
    found = 0
    for arg in sys.argv[1:]:
        root = pathlib.Path(arg)
        files = [root] if root.is_file() else sorted(root.rglob("*"))
        for f in files:
            if f.suffix not in (".cpp", ".hpp", ".h") or "tests" in f.parts or f.stem == "stages":
                continue
            text = f.read_text(encoding="utf-8", errors="replace")
            code = blank_comments_and_strings(text, keep_strings=True).split("\n")
            off = False
            for n, (line, code_line) in enumerate(zip(text.split("\n"), code), 1):
                if "// stage-literals: off" in line:
                    off = True
                elif "// stage-literals: on" in line:
                    off = False
                if off or "not a stage" in line:
                    continue
                for m in literal.finditer(code_line):
                    print(f"error: {f}:{n}: stage id {m.group(0)} spelt as a literal; use "
                          f"stage_id::{m.group(1)} (attnscope/stages.hpp), or say "
                          f"'// not a stage id' on the line (see this script's help)",
                          file=sys.stderr)
                    found += 1
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
