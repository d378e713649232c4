#!/usr/bin/env python3
"""Checks that #include lines follow the layers of docs/ARCHITECTURE.md.

usage: include_layers.py   (run from the repository root; exits 1 on a breach)

The engine (core/) is in rooms: every file is in core/src/<room>/ or
core/include/attnscope/<room>/, and may include its own room and the rooms
CORE_ROOMS lists for it, nothing else of the project (no app code at all).

The app's layers may include the layers below them and never one above:

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

# The engine's rooms, lowest first: room -> the other rooms it may include.
CORE_ROOMS = {
    "base": [],  # matrix, config, rng, the stage catalogue, traces, ParseError
    "kernels": ["base"],  # the GEMM kernel, CPU sharing
    "formats": ["base"],  # csv, npy, json, safetensors, pth, checkpoints, files
    "text": ["base", "formats"],  # the tokenizer and its Unicode tables
    "attention": ["base", "kernels", "text"],  # chapter 3: embeddings, the four variants
    "model": ["base", "kernels", "formats", "text"],  # GPT-2 models: config, load, forward
    "analysis": ["base", "formats"],  # inspect, diagnose, thumbnails, memory
    "io": ["base", "formats", "text", "attention", "analysis"],  # run specs, sessions
    "book": ["base", "formats", "text", "attention", "analysis", "io"],  # teaching, code
}

# app folder -> include prefixes it must not use
FORBIDDEN = {
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


def room_of(path):
    """The core room a core file is in, or None for a file outside any room."""
    parts = path.parts
    for base in (("core", "src"), ("core", "include", "attnscope")):
        if parts[:len(base)] == base and len(parts) > len(base) + 1:
            return parts[len(base)]
    return None


def included_room(target):
    """The core room an include names ("attnscope/<room>/x.hpp" or "<room>/x.hpp")."""
    parts = target.split("/")
    if parts[0] == "attnscope" and len(parts) > 2:
        return parts[1]
    return parts[0] if len(parts) > 1 and parts[0] in CORE_ROOMS else None


def check_core():
    breaches = 0
    for f in sorted(pathlib.Path("core").rglob("*")):
        if f.suffix not in (".cpp", ".hpp", ".h", ".in") or "tests" in f.parts:
            continue
        room = room_of(f)
        if room not in CORE_ROOMS:
            print(f"error: {f}: not in a room of the engine; move it to core/src/<room>/ or "
                  f"core/include/attnscope/<room>/ (rooms: {', '.join(CORE_ROOMS)})", file=sys.stderr)
            breaches += 1
            continue
        text = f.read_text(encoding="utf-8", errors="replace")
        for m in INCLUDE.finditer(text):
            target = m.group(1)
            other = included_room(target)
            line = text.count("\n", 0, m.start()) + 1
            if other is None and "/" not in target:
                print(f"error: {f}:{line}: includes \"{target}\" without its room; "
                      f"write \"<room>/{target}\"", file=sys.stderr)
                breaches += 1
            elif other is None or other not in CORE_ROOMS:
                print(f"error: {f}:{line}: room {room} includes \"{target}\", "
                      f"which is not a header of an engine room", file=sys.stderr)
                breaches += 1
            elif other != room and other not in CORE_ROOMS[room]:
                allowed = ", ".join(CORE_ROOMS[room]) or "none"
                print(f"error: {f}:{line}: room {room} includes \"{target}\" from room {other}; "
                      f"{room} may use {allowed} (CORE_ROOMS in scripts/include_layers.py)", file=sys.stderr)
                breaches += 1
    return breaches


def main():
    breaches = check_core()
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
