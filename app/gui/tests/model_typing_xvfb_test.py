#!/usr/bin/env python3
"""A text typed into a model one token at a time, from 1 to 80 tokens, in the
running app, with a relaunch halfway (run inside xvfb-run; see CMakeLists.txt).

Every length matters: the engine's buffers depend on the number of tokens
and on the heads' width, and a model whose heads are 64 wide (every GPT-2)
once overflowed the heap for texts of 32 to 62 tokens, which the short texts
of the other tests never reached. Typing alone may not show such a bug: the
engine keeps per-thread scratch buffers that only grow, and the app's first
run of a model also runs the 101-token sequence of the induction scores,
which sized them for any shorter text before the first key was typed. A
launch that reopens a session's 40-token text runs that text first, and
that crashed the app every time. So:

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
     xdotool one token at a time up to 40 tokens. After each token the app
     must still be running and must draw a new frame that shows the whole
     typed text's tokens, computed (not busy) and without an error. Ctrl+Q
     exits 0 and saves the session.
  4. The app starts again and must show the session's model and 40 tokens.
     Ctrl+End in the text box, and the rest of TEXT is typed as in 3, up to 80
     tokens.
  5. At 80 tokens the screen is grabbed into the work folder
     (typed_80_tokens.png, to look at) and must be a picture; Ctrl+Q exits
     0 with no OpenGL error.

Standard library only (xvfb_util.py).
"""
import argparse
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xvfb_util  # noqa: E402
from xvfb_util import (act, check, finish, focus_field, fresh_work, grab_bytes, launch,  # noqa: E402
                       png_info, quit_app, read_status, wait_until, wait_window_gone, xdotool)
from xvfb_util import status_number as number  # noqa: E402

# 80 tokens for GPT-2's tokenizer: every word with its leading space is one
# token of its vocabulary, and so is every "." and ",".
TEXT = ("The cat sat on the mat and the dog sat on the rug. The sun was warm and the room "
        "was quiet. A small bird came to the window and sang a song for the cat and the dog. "
        "The cat opened one eye and looked at the bird for a long time, but the dog did not "
        "move at all. Then the little bird flew away and the house was very still again.")
TOKENS = re.findall(r" ?[A-Za-z]+|[.,]", TEXT)
assert "".join(TOKENS) == TEXT and len(TOKENS) == 80
# Where the app is closed and started again: in the middle of 32..62.
RELAUNCH_AT = 40

# GPT-2's head width: n_embd / n_head = 64.
EMBD, HEADS, LAYERS, POSITIONS = 128, 2, 2, 128

# Generous for a loaded machine (ctest -j2 beside a build); a healthy app
# shows a token within a fraction of a second.
LOAD_TIMEOUT_S = 180  # a sanitized app beside other tests on 2 cores
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


def open_model(env, wid, model, status_path):
    """Source > Trained model (the combo atop the left column, its third
    item), then the folder's path into the Checkpoint field and Return (the
    places model_xvfb_test.py uses, for the same 1600x1000 window). Each
    click waits for the app's answer on screen before the next input."""
    xdotool(env, "windowfocus", "--sync", wid)
    act(env, status_path, "mousemove", "--window", wid, "230", "57", "click", "1")
    act(env, status_path, "mousemove", "--window", wid, "150", "135", "click", "1")
    check(focus_field(env, wid, status_path, 180, 125),
          "a click puts the cursor in the Checkpoint field")
    xdotool(env, "type", "--delay", "5", model)
    xdotool(env, "key", "Return")


def click_text_box(env, wid, status_path):
    """Clicks into the model's text box (the left column's first field under
    "Text", one line of text at the top of it); the field has focus once the
    app drew the click."""
    check(focus_field(env, wid, status_path, 180, 220), "a click puts the cursor in the text box")


def empty_text(env, wid, status_path):
    """Selects all of the text box's text and deletes it. Ctrl goes down
    before A and up after it, as a person presses it: `xdotool key ctrl+a`
    releases Ctrl before A, and when both releases reach the app in one
    batch the frame that sees A down no longer sees Ctrl."""
    click_text_box(env, wid, status_path)
    xdotool(env, "keydown", "ctrl", "key", "a", "keyup", "ctrl", "key", "BackSpace")


def type_token(env, token):
    xdotool(env, "type", "--delay", "10", token)


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


def shows(status, n, after_frame=-1):
    """The status is of a frame after `after_frame` that shows TOKENS[:n]
    whole: the text, its tokens, their run, nothing left to compute."""
    return (number(status, "frame") > after_frame and status.get("source") == "model"
            and number(status, "text_bytes") == len("".join(TOKENS[:n]).encode())
            and number(status, "tokens") == n and number(status, "shown_tokens") == n
            and status.get("busy") == "0")


def died(code):
    """How an exit code reads: -6 is SIGABRT (a shell says 134)."""
    return f"signal {-code}, a shell's {128 - code}" if code < 0 else f"status {code}"


def alive_and_showing(proc, status_path, n, after_frame, what, timeout):
    """Waits for a frame that shows n tokens; a check that says what the app
    did instead (ended, or showed something else). True when it did."""
    status, code = wait_status(proc, status_path, lambda s: shows(s, n, after_frame), timeout)
    if code is not None:
        err = proc.stderr.read() if proc.stderr else ""
        return check(False, f"the app is still running {what}: it ended with {died(code)} "
                            f"({err.strip()[-300:]!r})")
    if not shows(status, n, after_frame):
        return check(False, f"a frame shows {n} tokens {what} within {timeout} s "
                            f"(last status: {status})")
    if status.get("error"):
        return check(False, f"{n} tokens run without an error ({status['error']!r})")
    return True


def type_tokens(proc, env, status_path, first, last):
    """Types TOKENS[first:last] one by one; after each, waits for a frame
    that shows the typed text's tokens. False at the first that fails."""
    slowest = (0.0, 0)
    for n in range(first + 1, last + 1):
        token = TOKENS[n - 1]
        before = number(read_status(status_path), "frame")
        started = time.monotonic()
        type_token(env, token)
        if not alive_and_showing(proc, status_path, n, before, f"after token {n} ({token!r})",
                                 TOKEN_TIMEOUT_S):
            return False
        slowest = max(slowest, (time.monotonic() - started, n))
        if n % 10 == 0:
            print(f"     {n} tokens shown", flush=True)
    print(f"     tokens {first + 1} to {last}: the slowest took {slowest[0]:.2f} s "
          f"(token {slowest[1]})", flush=True)
    return check(True, f"every length from {first + 1} to {last} tokens is drawn")


def start(args, env, status_path, what):
    """The app in a 1600x1000 window and the window's id, or None when the
    app ended first or no window opened (a failed check says which)."""
    if os.path.exists(status_path):
        os.remove(status_path)  # the last launch's frames
    proc = launch(args.app, ["--size", "1600x1000"], env, args.work)
    window = []

    def opened():
        if proc.poll() is not None:
            return True
        r = xdotool(env, "search", "--name", "^attnscope$")
        window[:] = r.stdout.split()[:1]
        return bool(window)
    wait_until(opened, LOAD_TIMEOUT_S)
    if proc.poll() is not None:
        _, err = proc.communicate()
        check(False, f"the app runs {what}: it ended with {died(proc.returncode)} "
                     f"({err.strip()[-300:]!r})")
        return proc, None
    if not check(bool(window), f"the window opens {what}"):
        proc.kill()
        return proc, None
    return proc, window[0]


def first_half(args, env, status_path, model):
    """Steps 2 and 3 of the docstring; True when all went well."""
    proc, wid = start(args, env, status_path, "at its first launch")
    if wid is None:
        return False
    # Clicks go in once the first run is on screen and the layout settled.
    first, code = wait_status(proc, status_path, lambda s: s.get("busy") == "0", 60)
    if not check(bool(first) and code is None,
                 "the app writes its status file ($ATTNSCOPE_STATUS_FILE)"):
        proc.kill()
        return False
    time.sleep(0.5)

    open_model(env, wid, model, status_path)
    status, code = wait_status(
        proc, status_path, lambda s: s.get("source") == "model" and s.get("busy") == "0"
        and number(s, "shown_tokens") > 0, LOAD_TIMEOUT_S)
    if not check(code is None and status.get("source") == "model"
                 and number(status, "shown_tokens") == number(status, "tokens") > 0,
                 f"the model opens and shows its text (status {status}, exit {code})"):
        # What the screen showed instead, to look at.
        grab_bytes(env, args.grab, os.path.join(args.work, "model_not_open.png"))
        proc.kill()
        return False

    # An empty text box: no token, the app says why nothing runs.
    empty_text(env, wid, status_path)
    status, code = wait_status(proc, status_path,
                               lambda s: number(s, "text_bytes") == 0 and s.get("busy") == "0",
                               TOKEN_TIMEOUT_S)
    if not check(code is None and number(status, "text_bytes") == 0
                 and number(status, "tokens") == 0 and bool(status.get("error")),
                 f"Ctrl+A, BackSpace empties the text box (status {status})"):
        proc.kill()
        return False

    if not type_tokens(proc, env, status_path, 0, RELAUNCH_AT):
        proc.kill()
        return False
    code, _, err = quit_app(env, proc, wid)
    wait_window_gone(env)
    return check(code == 0, f"Ctrl+Q exits 0 at {RELAUNCH_AT} tokens ({err.strip()[-200:]})")


def second_half(args, env, status_path):
    """Steps 4 and 5 of the docstring."""
    what = f"when it reopens the session's {RELAUNCH_AT} tokens"
    proc, wid = start(args, env, status_path, what)
    if wid is None:
        return
    if not alive_and_showing(proc, status_path, RELAUNCH_AT, -1, what, LOAD_TIMEOUT_S):
        proc.kill()
        return
    check(True, f"the session reopens the model with its {RELAUNCH_AT} tokens")
    click_text_box(env, wid, status_path)
    # Ctrl+End: the end of the text (End alone ends the visual line, and
    # 40 tokens wrap over several).
    xdotool(env, "keydown", "ctrl", "key", "End", "keyup", "ctrl")
    if not type_tokens(proc, env, status_path, RELAUNCH_AT, len(TOKENS)):
        proc.kill()
        return

    # The pointer leaves the text box first (for an empty spot of the menu
    # bar), or the box's tooltip would cover the model view in the picture;
    # the app draws three frames after an event, the last one without it.
    before = number(read_status(status_path), "frame")
    xdotool(env, "mousemove", "--window", wid, "800", "12")
    wait_status(proc, status_path,
                lambda s: number(s, "frame") >= before + 3 and s.get("busy") == "0", 10)
    if args.grab:
        shot = os.path.join(args.work, f"typed_{len(TOKENS)}_tokens.png")
        grab_bytes(env, args.grab, shot)
        w, h, distinct = png_info(shot) if os.path.exists(shot) else (0, 0, 0)
        check(w == 1600 and h == 1000 and distinct > 20,
              f"the screen at {len(TOKENS)} tokens is a picture ({w}x{h}, {shot})")
    else:
        print(f"note: no x11_grab; the screen at {len(TOKENS)} tokens is not saved", flush=True)
    code, _, err = quit_app(env, proc, wid)
    check(code == 0, f"Ctrl+Q exits 0 ({err.strip()[-200:]})")
    check("OpenGL error" not in err, "no OpenGL error on stderr")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True)
    ap.add_argument("--grab", default="")
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    env, _ = fresh_work(args.work)
    status_path = os.path.join(args.work, "status.txt")
    env["ATTNSCOPE_STATUS_FILE"] = status_path
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="attnscope-gpt2-64-") as tmp:
        model = os.path.join(tmp, "gpt2-head-64")
        write_model(model)
        print(f"     model written in {time.monotonic() - t0:.1f} s", flush=True)
        if first_half(args, env, status_path, model):
            second_half(args, env, status_path)
    print(f"     {time.monotonic() - t0:.1f} s in all", flush=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
