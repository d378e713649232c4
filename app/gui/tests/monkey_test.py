#!/usr/bin/env python3
"""Monkey test: the real attnscope under Xvfb, fed random input for a while.

For SECONDS (default 20; ATTNSCOPE_MONKEY_SECONDS) with random.Random(SEED)
(default 20240611; ATTNSCOPE_MONKEY_SEED; printed so a failure can be
replayed) it sends the window random mouse moves, left/right/double clicks,
drags, wheel turns, key presses (arrows, Home/End, Esc, Tab, Enter,
Backspace, digits, letters, F1-F12), Ctrl/Shift combinations, typed text and
clicks into the View, Learn and Help menus and what they open.

It never sends Ctrl+Q or Alt+F4 and never closes the window; it also keeps the
pointer off the File menu's title (top-left corner, the app at 150% UI scale),
because File > Quit exits on purpose (and its dialogs write files).

Then it checks that the app is alive and still responds: Esc closes what the
monkey left open, Home and End move the stage (seen in the autosaved session
and in two screenshots taken with the app's own F12, which must differ and
not be blank), and Ctrl+Q exits with 0, with no OpenGL error or ImGui
assertion on stderr and a complete session file.

Then the same for a model: the app opened with --model on a tiny GPT-2
(written here) gets ATTNSCOPE_MONKEY_MODEL_SECONDS (default 20) of random
input, and must still be alive and exit 0 on Ctrl+Q without an assertion.

Every action is logged to <work>/actions.log. ATTNSCOPE_MONKEY_REPLAY=<a saved
actions.log> sends those actions again instead of random ones, checking after
each that the app still runs, and names the first action after which it did not.
"""
import argparse
import json
import os
import random
import string
import subprocess
import sys
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xvfb_util import (check, finish, fresh_work, launch, new_files, png_chunks,  # noqa: E402
                       png_info, stop, wait_for_window, wait_new_png, wait_screen_stable, wait_until,
                       window_geometry, write_tiny_gpt2, xdotool)

WIDTH, HEIGHT = 1280, 800
# The File menu's title (x0, y0, x1, y1), at any UI scale up to 200% (View >
# UI scale): the pointer never goes there. The app starts at 150%, where the
# View menu's title begins inside this box and ends outside it.
FILE_MENU = (0, 0, 100, 54)
UI_SCALE = "1.5"
KEYS = (["Right", "Left", "Up", "Down", "Home", "End", "Escape", "Tab", "Return", "BackSpace",
         "Delete", "space", "minus", "period", "Page_Up", "Page_Down"]
        + list(string.digits) + list("aeiouxyzqw"))
COMBOS = ["ctrl+z", "ctrl+y", "ctrl+a", "ctrl+c", "ctrl+v", "ctrl+x", "ctrl+s", "ctrl+o",
          "shift+Tab", "ctrl+Tab", "shift+Right", "ctrl+Left", "ctrl+Home", "alt+v", "ctrl+plus",
          "ctrl+minus", "shift+F10"]
FKEYS = [f"F{n}" for n in range(1, 13)]
TEXT = string.ascii_letters + string.digits + " .,-+eE"


class Monkey:
    def __init__(self, env, wid, rng, log):
        self.env, self.wid, self.rng, self.log = env, wid, rng, log
        self.replay = None  # the lines of an actions.log to send again
        self.actions = 0
        self.events = 0  # X input events: a click is a press and a release
        self.counts = {}

    def point(self):
        while True:
            x, y = self.rng.randrange(WIDTH), self.rng.randrange(HEIGHT)
            x0, y0, x1, y1 = FILE_MENU
            if not (x0 <= x < x1 and y0 <= y < y1):
                return x, y

    def send(self, kind, args, events):
        self.actions += 1
        self.events += events
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.log.write(f"{kind} {' '.join(args)}\n")
        xdotool(self.env, *args, timeout=60)

    def move_args(self, x, y):
        return ["mousemove", "--window", self.wid, str(x), str(y)]

    def step(self):
        if self.replay is not None:
            if self.actions >= len(self.replay):
                return False
            kind, *args = self.replay[self.actions].split()
            # The window id of the run that logged it follows every --window.
            args = [self.wid if k > 0 and args[k - 1] == "--window" else a for k, a in enumerate(args)]
            self.send(kind, args, 1)
            return True
        r = self.rng.random()
        x, y = self.point()
        if r < 0.14:
            self.send("move", self.move_args(x, y), 1)
        elif r < 0.32:
            self.send("click", self.move_args(x, y) + ["click", "1"], 3)
        elif r < 0.37:
            self.send("right-click", self.move_args(x, y) + ["click", "3"], 3)
        elif r < 0.40:
            self.send("double-click", self.move_args(x, y) + ["click", "--repeat", "2", "1"], 5)
        elif r < 0.49:
            path = []
            for _ in range(self.rng.randint(1, 4)):
                path += self.move_args(*self.point())
            self.send("drag", self.move_args(x, y) + ["mousedown", "1"] + path + ["mouseup", "1"],
                      3 + len(path) // 5)
        elif r < 0.56:
            button = self.rng.choice(["4", "5"])
            n = self.rng.randint(1, 6)
            self.send("wheel", self.move_args(x, y) + ["click", "--repeat", str(n), button], 1 + 2 * n)
        elif r < 0.76:
            self.send("key", ["key", self.rng.choice(KEYS)], 2)
        elif r < 0.81:
            self.send("combo", ["key", self.rng.choice(COMBOS)], 4)
        elif r < 0.84:
            self.send("f-key", ["key", self.rng.choice(FKEYS)], 2)
        elif r < 0.91:
            text = "".join(self.rng.choice(TEXT) for _ in range(self.rng.randint(1, 8)))
            self.send("type", ["type", "--delay", "5", text], 2 * len(text))
        else:
            # A menu (View, Learn, Help), then a click where its items or a
            # submenu are: colours, UI scale, Learn windows, shortcuts, About.
            mx = self.rng.randrange(FILE_MENU[2], 320)
            self.send("menu", self.move_args(mx, 10) + ["click", "1"], 3)
            ix = min(WIDTH - 1, mx + self.rng.randrange(-20, 320))
            iy = self.rng.randrange(FILE_MENU[3], 420)
            self.send("menu-item", self.move_args(max(ix, 0), iy) + ["click", "1"], 3)
        return True


def stage_of(session_path):
    try:
        return json.load(open(session_path)).get("view", {}).get("stage")
    except (OSError, ValueError):
        return None


def pixels_of(path):
    """The PNG's decompressed image data (equal bytes: equal pictures)."""
    return zlib.decompress(b"".join(body for kind, body in png_chunks(path) if kind == b"IDAT"))


def f12_screenshot(env, folder, what):
    """Presses F12 and returns the path of the one new screenshot, or None."""
    before = new_files(folder)
    xdotool(env, "key", "F12")
    shots = wait_new_png(folder, before, 30)
    if not check(len(shots) == 1, f"F12 saves a screenshot {what} ({shots})"):
        return None
    return os.path.join(folder, shots[0])


def model_phase(args, env, seed):
    """Random input to the app showing a model; True when it survived and quit cleanly."""
    seconds = float(os.environ.get("ATTNSCOPE_MONKEY_MODEL_SECONDS", "20"))
    model = os.path.join(args.work, "tiny-gpt2")
    write_tiny_gpt2(model)
    app = launch(args.app, ["--size", f"{WIDTH}x{HEIGHT}", "--scale", UI_SCALE, "--no-session",
                            "--model", model, "--text", "The cat sat on the mat."], env, args.work)
    wid = wait_for_window(env)
    if not check(wid is not None, "the app's window appears with a model"):
        stop(app, timeout=5)
        return False
    xdotool(env, "windowfocus", "--sync", wid)
    log = open(os.path.join(args.work, "model_actions.log"), "w")
    monkey = Monkey(env, wid, random.Random(seed + 1), log)
    started = time.monotonic()
    while time.monotonic() - started < seconds and app.poll() is None:
        monkey.step()
    log.close()
    alive = check(app.poll() is None, f"the app with a model is alive after {monkey.actions} random "
                                      f"actions (seed {seed + 1}; {args.work}/model_actions.log)")
    if not alive:
        _, _, err = stop(app, timeout=10)
        print(err[-3000:], file=sys.stderr)
        return False
    for _ in range(3):
        xdotool(env, "key", "Escape")
        time.sleep(0.2)
    xdotool(env, "key", "ctrl+q")
    code, _, err = stop(app, timeout=120)
    check(code == 0, f"Ctrl+Q exits with 0 after the model's monkey (got {code})")
    check("OpenGL error" not in err and "Assertion" not in err,
          f"no OpenGL error or assertion on stderr with a model ({err.strip()[-500:]})")
    return code == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True)
    ap.add_argument("--grab", default="")
    ap.add_argument("--wm", default="")
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    seed = int(os.environ.get("ATTNSCOPE_MONKEY_SEED", "20240611"))
    seconds = float(os.environ.get("ATTNSCOPE_MONKEY_SECONDS", "20"))
    print(f"monkey: seed {seed} (ATTNSCOPE_MONKEY_SEED), {seconds:g} s (ATTNSCOPE_MONKEY_SECONDS)",
          flush=True)

    # Read before the work folder is emptied: the log may be the last run's.
    replay = os.environ.get("ATTNSCOPE_MONKEY_REPLAY")
    replay_lines = open(replay).read().splitlines() if replay else None
    env, cfg = fresh_work(args.work, pictures=True)
    session_path = os.path.join(cfg, "session.json")
    shots = os.path.join(env["XDG_PICTURES_DIR"], "attnscope")
    app = launch(args.app, ["--size", f"{WIDTH}x{HEIGHT}", "--scale", UI_SCALE], env, args.work)
    wid = wait_for_window(env)
    if not check(wid is not None, "the app's window appears"):
        stop(app, timeout=5)
        return finish()
    check(window_geometry(env, wid) == (WIDTH, HEIGHT), f"the window is {WIDTH}x{HEIGHT}")
    xdotool(env, "windowfocus", "--sync", wid)
    wait_screen_stable(env, args.grab, os.path.join(args.work, "start.png"))

    rng = random.Random(seed)
    log = open(os.path.join(args.work, "actions.log"), "w")
    monkey = Monkey(env, wid, rng, log)
    monkey.replay = replay_lines
    if replay:
        print(f"monkey: replaying {len(replay_lines)} actions from {replay}", flush=True)
    started = time.monotonic()
    last_alive_check = started
    died = None
    while replay or time.monotonic() - started < seconds:
        if not monkey.step():
            break
        if replay:
            time.sleep(0.05)  # let the app take it in before asking whether it still runs
        if replay or time.monotonic() - last_alive_check > 2.0:
            last_alive_check = time.monotonic()
            if app.poll() is not None:
                died = app.returncode
                if replay:
                    print(f"monkey: the app ended after action {monkey.actions}: "
                          f"{replay_lines[monkey.actions - 1]}", flush=True)
                break
    elapsed = time.monotonic() - started
    log.close()
    if died is None and app.poll() is not None:
        died = app.returncode
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(monkey.counts.items()))
    print(f"monkey: {monkey.actions} actions ({monkey.events} X input events) in {elapsed:.1f} s: "
          f"{kinds}", flush=True)
    if not check(died is None, f"the app is alive after {monkey.actions} random actions "
                               f"(exit status {died}; seed {seed}; replay: "
                               f"ATTNSCOPE_MONKEY_REPLAY={args.work}/actions.log)"):
        _, _, err = stop(app, timeout=10)
        print(err[-3000:], file=sys.stderr)
        return finish()

    # Still responding? Close what the monkey left open, then move the stage.
    xdotool(env, "mousemove", "--window", wid, str(WIDTH // 2), str(HEIGHT - 5))
    for _ in range(3):
        xdotool(env, "key", "Escape")
        time.sleep(0.2)
    xdotool(env, "key", "Home")
    homed = wait_until(lambda: stage_of(session_path) == "inputs", 60)
    check(homed, f"Home moves the stage to 'inputs' (autosaved: {stage_of(session_path)})")
    wait_screen_stable(env, args.grab, os.path.join(args.work, "home.png"))
    first = f12_screenshot(env, shots, "after the monkey (Home)")
    xdotool(env, "key", "End")
    ended = wait_until(lambda: stage_of(session_path) not in (None, "inputs"), 60)
    check(ended, f"End moves the stage to the last one (autosaved: {stage_of(session_path)})")
    wait_screen_stable(env, args.grab, os.path.join(args.work, "end.png"))
    second = f12_screenshot(env, shots, "after End")
    for path in (first, second):
        if path:
            w, h, distinct = png_info(path)
            check((w, h) == (WIDTH, HEIGHT) and distinct > 20,
                  f"{os.path.basename(path)} is the {WIDTH}x{HEIGHT} window, not blank "
                  f"({w}x{h}, {distinct} distinct bytes)")
    if first and second:
        check(pixels_of(first) != pixels_of(second), "the two screenshots differ: the app still redraws")
        print(f"monkey: screenshots {first} {second}", flush=True)

    xdotool(env, "key", "ctrl+q")
    code, _, err = stop(app, timeout=120)
    check(code == 0, f"Ctrl+Q exits with 0 after the monkey (got {code})")
    check("OpenGL error" not in err and "Assertion" not in err,
          f"no OpenGL error or assertion on stderr ({err.strip()[-500:]})")
    try:
        doc = json.load(open(session_path))
        complete = doc.get("attnscope_session") == 1 and "run" in doc and "view" in doc
    except (OSError, ValueError):
        complete = False
    check(complete, "the session file is complete after the exit")
    print(f"summary: seed={seed} seconds={elapsed:.1f} actions={monkey.actions} "
          f"x_events={monkey.events} alive=yes exit={code}", flush=True)
    if not replay:
        model_phase(args, env, seed)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
