#!/usr/bin/env python3
"""Checks that #include lines follow the layers of docs/ARCHITECTURE.md.

usage: include_layers.py   (run from the repository root; exits 1 on a breach)

Each layer may include the layers below it and never one above:

  core          the engine (no app code at all)
  app/figure    GUI-free figures: colour scales, layout, SVG (core only)
  app/icon      the app's icon as shapes (core, figure)
  app/run_flags the shared command-line flags (core, figure)
  app/gui/render    pixels: colouring, the texture cache, GL (not export/,
                    widgets/, panels/ or teach/)
  app/gui/export    files: PNG, CSV, ... written from what render returns
                    (not widgets/, panels/ or teach/)
  app/gui/widgets   the interactive heatmap (not panels/ or teach/)

Tests are not checked: a test may reach across layers.
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# folder -> include prefixes it must not use
FORBIDDEN = {
    "core": ["figure/", "render/", "export/", "widgets/", "panels/", "teach/", "run_flags/",
             "app_state.hpp", "imgui"],
    "app/figure": ["render/", "export/", "widgets/", "panels/", "teach/", "app_state.hpp",
                   "imgui"],
    "app/icon": ["render/", "export/", "widgets/", "panels/", "teach/", "app_state.hpp",
                 "imgui"],
    "app/run_flags": ["render/", "export/", "widgets/", "panels/", "teach/",
                      "app_state.hpp", "imgui"],
    "app/gui/render": ["export/", "widgets/", "panels/", "teach/"],
    "app/gui/export": ["widgets/", "panels/", "teach/"],
    "app/gui/widgets": ["panels/", "teach/"],
}


def main():
    breaches = 0
    for folder, banned in FORBIDDEN.items():
        for f in sorted(pathlib.Path(folder).rglob("*")):
            if f.suffix not in (".cpp", ".hpp", ".h", ".in") or "tests" in f.parts:
                continue
            for m in INCLUDE.finditer(f.read_text(encoding="utf-8", errors="replace")):
                target = m.group(1)
                hit = next((b for b in banned if target.startswith(b)), None)
                if hit:
                    line = f.read_text(encoding="utf-8", errors="replace").count("\n", 0, m.start()) + 1
                    print(f"error: {f}:{line}: {folder} includes \"{target}\", a layer above it; "
                          f"move what it needs down (docs/ARCHITECTURE.md, Layers)", file=sys.stderr)
                    breaches += 1
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
