#!/usr/bin/env python3
"""Checks that #include lines follow the rooms of docs/ARCHITECTURE.md.

usage: include_layers.py   (run from the repository root; exits 1 on a breach)

Every C++ file of core/ and app/ (tests aside: a test may reach across) is
in a room, and may include its own room and the rooms its row of the table
lists, nothing else of the project:

- The engine (core/) is in CORE_ROOMS: core/src/<room>/ and
  core/include/attnscope/<room>/. It never includes app code.
- The app (app/) is in APP_ROOMS: app/<room>/ or app/gui/<room>/. Every app
  room may use the engine's public headers ("attnscope/<room>/x.hpp"), and
  only the rooms marked with "imgui" may include Dear ImGui.

An include is named by its room ("state/app_state.hpp"), or by its bare
name when it sits in the including file's own folder.
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
    "hub": ["base", "formats"],  # the Hugging Face Hub: cache layout, downloads, sha256
    "model": ["base", "kernels", "formats", "text", "hub"],  # GPT-2 models: config, load, forward
    "analysis": ["base", "formats"],  # inspect, diagnose, thumbnails, memory
    "io": ["base", "formats", "text", "attention", "analysis"],  # run specs, sessions
    "book": ["base", "formats", "text", "attention", "analysis", "io"],  # teaching, code
}

# The app's rooms, lowest first: folder -> the other app rooms it may
# include ("imgui": Dear ImGui's headers too).
_STATE = ["figure", "run_flags", "platform", "render", "compute", "imgui"]
APP_ROOMS = {
    "app/figure": [],  # GUI-free figures: colour scales, layout, SVG
    "app/icon": ["figure"],  # the app's icon as shapes
    "app/run_flags": ["figure"],  # the flags the CLI and the app share
    "app/cli": ["figure", "run_flags"],  # attnscope-cli
    "app/gui/platform": ["imgui"],  # fonts, native dialogs, the keyboard queue, text editing
    "app/gui/compute": [],  # the worker thread and model jobs: core only
    "app/gui/render": ["figure", "platform", "imgui"],  # pixels; never the app's state
    "app/gui/state": _STATE,  # what the app holds: runs, model, view, session
    "app/gui/words": _STATE + ["state"],  # the stepper's texts
    "app/gui/export": _STATE + ["state", "words"],  # files: PNG, CSV, ... and dialogs
    "app/gui/widgets": _STATE + ["state", "words", "export"],  # the heatmap, chips
    "app/gui/teach": _STATE + ["state", "words", "export", "widgets"],  # Learn windows
    "app/gui/panels": _STATE + ["state", "words", "export", "widgets", "teach"],
    "app/gui/shell": _STATE + ["state", "words", "export", "widgets", "teach", "panels",
                               "icon"],  # main, the frame, launch options, autosave
}
IMGUI_HEADERS = {"imgui.h", "imgui_internal.h", "imgui_stdlib.h", "imgui_impl_glfw.h",
                 "imgui_impl_opengl3.h"}


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


def app_room_of(path):
    """The app room folder a file is in ("app/gui/state"), or None."""
    for depth in (3, 2):
        folder = "/".join(path.parts[:depth])
        if folder in APP_ROOMS and len(path.parts) > depth:
            return folder
    return None


def app_breach(f, folder, target):
    """Why `f` in room `folder` may not include `target`, or None."""
    allowed = APP_ROOMS[folder]
    if target in IMGUI_HEADERS:
        return None if "imgui" in allowed else f"{folder} may not use Dear ImGui"
    parts = target.split("/")
    if len(parts) == 1:
        if (f.parent / target).exists():
            return None
        return f"\"{target}\" is not in {f.parent}; name another room's header as <room>/{target}"
    if parts[0] == "attnscope":
        return None if included_room(target) in CORE_ROOMS else "not a public header of the engine"
    room = next((r for r in APP_ROOMS if r.rsplit("/", 1)[1] == parts[0]), None)
    if room is None:
        return f"\"{parts[0]}\" is not a room of the app (rooms: " + \
            ", ".join(r.rsplit("/", 1)[1] for r in APP_ROOMS) + ")"
    if room == folder or parts[0] in allowed:
        return None
    return (f"{folder} may use " + (", ".join(r for r in allowed if r != "imgui") or "no app room") +
            f", not {parts[0]} (APP_ROOMS in scripts/include_layers.py)")


def check_app():
    breaches = 0
    for f in sorted(pathlib.Path("app").rglob("*")):
        if f.suffix not in (".cpp", ".hpp", ".h", ".in") or "tests" in f.parts:
            continue
        folder = app_room_of(f)
        if folder is None:
            print(f"error: {f}: not in a room of the app; move it to one of "
                  f"{', '.join(APP_ROOMS)}", file=sys.stderr)
            breaches += 1
            continue
        text = f.read_text(encoding="utf-8", errors="replace")
        for m in INCLUDE.finditer(text):
            why = app_breach(f, folder, m.group(1))
            if why:
                line = text.count("\n", 0, m.start()) + 1
                print(f"error: {f}:{line}: includes \"{m.group(1)}\": {why}", file=sys.stderr)
                breaches += 1
    return breaches


def main():
    breaches = check_core() + check_app()
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
