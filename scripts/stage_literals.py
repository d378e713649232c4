#!/usr/bin/env python3
"""Finds stage ids spelt as string literals in C++ code; exits 1 when there is one.

usage: stage_literals.py PATH...

The stage catalogue (core/include/attnscope/stages.hpp) gives every stage id
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

ids = "inputs W_query W_key W_value b_query b_key b_value queries keys values scores mask masked_scores scaled_scores weights dropout_mask dropped_weights context concat W_out b_out output".split()
lit = re.compile(r'"(' + '|'.join(ids) + r')"')
def code_spans(line, in_block):
    # yields (start,end) of code regions in line outside comments and other string literals
    out=[]; i=0; n=len(line); start=0
    while i<n:
        if in_block:
            j=line.find('*/',i)
            if j<0: return out, True
            i=j+2; start=i; in_block=False; continue
        c=line[i]
        if line.startswith('//',i):
            out.append((start,i)); return out, False
        if line.startswith('/*',i):
            out.append((start,i)); in_block=True; i+=2; continue
        if c=="'":
            j=i+1
            while j<n and line[j]!="'":
                j+= 2 if line[j]=='\\' else 1
            i=j+1; continue
        if c=='"':
            j=i+1
            while j<n and line[j]!='"':
                j+= 2 if line[j]=='\\' else 1
            i=j+1; continue
        i+=1
    out.append((start,n)); return out, in_block


def main():
    found = 0
    for arg in sys.argv[1:]:
        root = pathlib.Path(arg)
        files = [root] if root.is_file() else sorted(root.rglob("*"))
        for f in files:
            if f.suffix not in (".cpp", ".hpp", ".h") or "tests" in f.parts or f.stem == "stages":
                continue
            blk = False
            off = False
            for n, line in enumerate(f.read_text(encoding="utf-8", errors="replace").split("\n"), 1):
                if "// stage-literals: off" in line:
                    off = True
                elif "// stage-literals: on" in line:
                    off = False
                spans, blk_next = code_spans(line, blk)
                for m in lit.finditer(line):
                    if off or "not a stage" in line:
                        continue
                    if any(a <= m.start() < b for a, b in spans):
                        print(f"error: {f}:{n}: stage id {m.group(0)} spelt as a literal; use "
                              f"stage_id::{m.group(1)} (attnscope/stages.hpp), or say "
                              f"'// not a stage id' on the line (see this script's help)", file=sys.stderr)
                        found += 1
                blk = blk_next
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
