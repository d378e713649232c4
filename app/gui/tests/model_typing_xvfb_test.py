#!/usr/bin/env python3
"""A text typed into a model one token at a time, from 1 to 80 tokens, in the
running app (run inside xvfb-run; see CMakeLists.txt).

Every length matters: the engine's buffers depend on the number of tokens
and on the heads' width, and a model whose heads are 64 wide (every GPT-2)
once overflowed the heap for texts of 32 to 62 tokens, which the short texts
of the other tests never reached. Whether such an overflow kills the app
depends on the heap's layout: typed token by token, that one went unnoticed
and the app typed on to 80 tokens, while a 40-token text opened at once
aborted it. So with --malloc-check the app runs with glibc's malloc
checking, under which a write past a block's end aborts it at the next
allocation or free instead (AddressSanitizer builds find overflows
themselves and leave the option out).

  1. A random GPT-2-layout model with GPT-2's head width (n_embd 128, 2
     heads of 64, 2 layers, 128 positions, and GPT-2's whole vocabulary so
     that its tokenizer's ids are valid) is written into a temporary folder,
     F32 safetensors + config.json, by xvfb_util.py's writer.
  2. The app starts with ATTNSCOPE_STATUS_FILE set: after every frame it
     writes what that frame shows (the frame count, the text's tokens and
     bytes, the tokens of the run on screen, whether it is still busy, the
     error). The model opens as a learner opens one: Source > GPT-2
     checkpoint, the folder's path typed into the Checkpoint field, Return;
     the model view (every head of every layer) shows its default text.
  3. The text box is emptied (Ctrl+A, BackSpace), then TEXT is typed with
     xdotool one token at a time. After each token the app must still be
     running and must draw a new frame that shows the whole typed text's
     tokens, computed (not busy) and without an error.
  4. At 80 tokens the screen is grabbed into the work folder
     (typed_80_tokens.png, to look at) and must be a picture; Ctrl+Q exits
     0 with no OpenGL error.

Standard library only (xvfb_util.py).
"""
import argparse
import ctypes.util
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xvfb_util  # noqa: E402
from xvfb_util import (check, finish, fresh_work, grab_bytes, launch, png_info,  # noqa: E402
                       quit_app, wait_for_window, wait_until, xdotool)

# 80 tokens for GPT-2's tokenizer: every word with its leading space is one
# token of its vocabulary, and so is every "." and ",".
TEXT = ("The cat sat on the mat and the dog sat on the rug. The sun was warm and the room "
        "was quiet. A small bird came to the window and sang a song for the cat and the dog. "
        "The cat opened one eye and looked at the bird for a long time, but the dog did not "
        "move at all. Then the little bird flew away and the house was very still again.")
TOKENS = re.findall(r" ?[A-Za-z]+|[.,]", TEXT)
assert "".join(TOKENS) == TEXT and len(TOKENS) == 80

# GPT-2's head width: n_embd / n_head = 64.
EMBD, HEADS, LAYERS, POSITIONS = 128, 2, 2, 128

# Generous for a loaded machine (ctest -j2 beside a build); a healthy app
# shows a token within a fraction of a second.
LOAD_TIMEOUT_S = 90
TOKEN_TIMEOUT_S = 30


def write_model(folder):
    """xvfb_util.write_tiny_gpt2 at GPT-2's head width. That writer takes its
    sizes from its module's constants: set them for this call only."""
    sizes = {"EMBD": EMBD, "HEADS": HEADS, "LAYERS": LAYERS, "POSITIONS": POSITIONS}
    saved = {name: getattr(xvfb_util, name) for name in sizes}
    try:
        for name, value in sizes.items():
            setattr(xvfb_util, name, value)
        xvfb_util.write_tiny_gpt2(folder)
    finally:
        for name, value in saved.items():
            setattr(xvfb_util, name, value)


def open_model(env, wid, model):
    """Source > GPT-2 checkpoint (the combo atop the left column, its third
    item), then the folder's path into the Checkpoint field and Return (the
    places model_xvfb_test.py uses, for the same 1600x1000 window)."""
    xdotool(env, "windowfocus", "--sync", wid)
    xdotool(env, "mousemove", "--window", wid, "230", "57", "click", "1")
    time.sleep(0.5)
    xdotool(env, "mousemove", "--window", wid, "150", "135", "click", "1")
    time.sleep(0.5)
    xdotool(env, "mousemove", "--window", wid, "180", "125", "click", "1")
    time.sleep(0.3)
    xdotool(env, "type", "--delay", "5", model)
    xdotool(env, "key", "Return")


def empty_text(env, wid):
    """Clicks into the model's text box (the left column's first field under
    "Text"), selects all of its text and deletes it. Ctrl goes down before A
    and up after it, as a person presses it: `xdotool key ctrl+a` releases
    Ctrl before A, and when both releases reach the app in one batch the
    frame that sees A down no longer sees Ctrl."""
    xdotool(env, "mousemove", "--window", wid, "180", "220", "click", "1")
    time.sleep(0.3)  # the field takes focus in the next frame
    xdotool(env, "keydown", "ctrl", "key", "a", "keyup", "ctrl", "key", "BackSpace")


def type_token(env, token):
    xdotool(env, "type", "--delay", "10", token)


def malloc_check_env(env):
    """`env` for the app with glibc's malloc checking on (its debugging
    library preloaded, MALLOC_CHECK_=3: report and abort), or None where
    glibc has no such library (before 2.34, or another libc)."""
    lib = ctypes.util.find_library("c_malloc_debug")
    if not lib:
        return None
    preload = " ".join(p for p in (lib, env.get("LD_PRELOAD", "")) if p)
    return dict(env, LD_PRELOAD=preload, MALLOC_CHECK_="3")


def read_status(path):
    """The app's last status as a dict (empty before the first frame)."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    return dict((line.split(" ", 1) + [""])[:2] for line in lines)


def number(status, key):
    try:
        return int(status.get(key, ""))
    except ValueError:
        return -1


def wait_status(proc, path, wanted, timeout):
    """Waits until the app's status satisfies wanted(status) or the app
    ends; (status, exit code or None)."""
    status = {}

    def done():
        nonlocal status
        if proc.poll() is not None:
            return True
        status = read_status(path)
        return bool(status) and wanted(status)
    wait_until(done, timeout, step=0.02)
    return status, proc.poll()


def died(code):
    """How an exit code reads: -6 is SIGABRT (a shell says 134)."""
    return f"signal {-code}, a shell's {128 - code}" if code < 0 else f"status {code}"


def type_every_length(proc, env, status_path):
    """Types TOKENS one by one; after each, waits for a frame that shows
    the typed text's tokens. Returns the number of lengths shown."""
    typed = ""
    slowest = (0.0, 0)
    for n, token in enumerate(TOKENS, 1):
        before = number(read_status(status_path), "frame")
        typed += token
        started = time.monotonic()
        type_token(env, token)

        def shows(s, n=n, size=len(typed.encode()), before=before):
            return (number(s, "frame") > before and number(s, "text_bytes") == size
                    and number(s, "tokens") == n and number(s, "shown_tokens") == n
                    and s.get("busy") == "0")
        status, code = wait_status(proc, status_path, shows, TOKEN_TIMEOUT_S)
        if code is not None:
            check(False, f"the app is still running after token {n} ({token!r}): it ended "
                         f"with {died(code)}")
            return n - 1
        if not shows(status):
            check(False, f"a frame shows {n} tokens after {token!r} within {TOKEN_TIMEOUT_S} s "
                         f"(last status: {status})")
            return n - 1
        if status.get("error"):
            check(False, f"{n} tokens run without an error ({status['error']!r})")
            return n - 1
        slowest = max(slowest, (time.monotonic() - started, n))
        if n % 10 == 0:
            print(f"     {n} tokens shown (frame {status['frame']})", flush=True)
    print(f"     the slowest token took {slowest[0]:.2f} s (token {slowest[1]})", flush=True)
    return len(TOKENS)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True)
    ap.add_argument("--grab", default="")
    ap.add_argument("--work", required=True)
    ap.add_argument("--malloc-check", action="store_true",
                    help="run the app with glibc's malloc checking (not for AddressSanitizer "
                         "builds: their runtime must be the first library loaded)")
    args = ap.parse_args()
    env, _ = fresh_work(args.work)
    status_path = os.path.join(args.work, "status.txt")
    env["ATTNSCOPE_STATUS_FILE"] = status_path
    # Only the app's environment: xdotool and the grabber run without it.
    app_env = env
    if args.malloc_check:
        app_env = malloc_check_env(env)
        if app_env is None:
            print("note: glibc's libc_malloc_debug.so.0 is not here: the app runs without "
                  "malloc checking, and a heap overflow may go unnoticed", flush=True)
            app_env = env
        else:
            print(f"     the app runs with LD_PRELOAD={app_env['LD_PRELOAD']} MALLOC_CHECK_=3",
                  flush=True)
    t0 = time.monotonic()

    with tempfile.TemporaryDirectory(prefix="attnscope-gpt2-64-") as tmp:
        model = os.path.join(tmp, "gpt2-head-64")
        write_model(model)
        print(f"     model written in {time.monotonic() - t0:.1f} s", flush=True)

        proc = launch(args.app, ["--size", "1600x1000"], app_env, args.work)
        wid = wait_for_window(env)
        check(wid is not None, "the window opens")
        # Clicks go in once the first run is on screen and the layout settled.
        first, code = wait_status(proc, status_path, lambda s: s.get("busy") == "0", 60)
        if wid is None or not check(bool(first) and code is None,
                                    "the app writes its status file ($ATTNSCOPE_STATUS_FILE)"):
            proc.kill()
            return finish()
        time.sleep(0.5)

        # 1. The model, in the model view, on its default text.
        open_model(env, wid, model)
        status, code = wait_status(
            proc, status_path, lambda s: s.get("source") == "model" and s.get("busy") == "0"
            and number(s, "shown_tokens") > 0, LOAD_TIMEOUT_S)
        if not check(code is None and status.get("source") == "model"
                     and number(status, "shown_tokens") == number(status, "tokens") > 0,
                     f"the model opens and shows its text (status {status}, exit {code})"):
            proc.kill()
            return finish()

        # 2. An empty text box: no token, the app says why nothing runs.
        empty_text(env, wid)
        status, code = wait_status(proc, status_path,
                                   lambda s: number(s, "text_bytes") == 0 and s.get("busy") == "0",
                                   TOKEN_TIMEOUT_S)
        if not check(code is None and number(status, "text_bytes") == 0
                     and number(status, "tokens") == 0 and bool(status.get("error")),
                     f"Ctrl+A, BackSpace empties the text box (status {status})"):
            proc.kill()
            return finish()

        # 3. One token at a time.
        t1 = time.monotonic()
        shown = type_every_length(proc, env, status_path)
        check(shown == len(TOKENS), f"every length from 1 to {len(TOKENS)} tokens is drawn "
                                    f"({shown} were, in {time.monotonic() - t1:.1f} s)")
        if proc.poll() is not None:
            _, err = proc.communicate()
            print("     the app's stderr:\n       " + err.strip()[-600:].replace("\n", "\n       "))
            return finish()

        # 4. The window at 80 tokens, then Ctrl+Q. The pointer leaves the
        # text box first (for an empty spot of the menu bar), or the box's
        # tooltip would cover the model view in the picture.
        before = number(read_status(status_path), "frame")
        xdotool(env, "mousemove", "--window", wid, "800", "12")
        wait_status(proc, status_path,
                    lambda s: number(s, "frame") > before and s.get("busy") == "0", 10)
        if args.grab:
            shot = os.path.join(args.work, f"typed_{len(TOKENS)}_tokens.png")
            grab_bytes(env, args.grab, shot)
            w, h, distinct = png_info(shot) if os.path.exists(shot) else (0, 0, 0)
            check(w == 1600 and h == 1000 and distinct > 20,
                  f"the screen at {len(TOKENS)} tokens is a picture ({w}x{h}, {shot})")
        else:
            print("note: no x11_grab; the screen at 80 tokens is not saved", flush=True)
        code, _, err = quit_app(env, proc, wid)
        check(code == 0, f"Ctrl+Q exits 0 ({err.strip()[-200:]})")
        check("OpenGL error" not in err, "no OpenGL error on stderr")
    print(f"     {time.monotonic() - t0:.1f} s in all", flush=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
