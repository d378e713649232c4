#!/usr/bin/env python3
"""The real attnscope binary under Xvfb (run inside xvfb-run; see CMakeLists.txt).

  1. --screenshot for every variant: exit 0, a PNG of the window's size with
     many distinct colours, and the saved session left untouched.
  2. A plain launch driven with xdotool: Right arrow x3 moves the stage (seen
     in a screen grab and in the saved session), Ctrl+Q exits cleanly and
     writes the session and imgui.ini to $XDG_CONFIG_HOME/attnscope/.
  3. The next launch restores that session; a corrupt session is set aside
     as session.json.bak; an idle window uses (almost) no CPU.
  4. No display: one line saying a graphical session is needed, exit 1.
  5. --bench-frames prints per-frame timings and exits 0; --random's range.
  6. No lost work: a change is autosaved shortly after it is made (not at
     exit); SIGKILL the app, relaunch: the change is restored.
  7. A session from a newer attnscope: kept as .bak-1 beside an earlier .bak,
     a banner in the window and a warning naming the file, the defaults.
  8. An autosave that cannot write: one warning and a banner, no crash, exit 0.
  9. Resize to 1x1, 50x30, 8000x6000 and back, minimise (no frames drawn, no
     CPU), restore: the window draws again, F12 saves a full screenshot, no
     OpenGL error, Ctrl+Q exits 0. The window manager's close button: exit 0.

Waits are for conditions (the screen stopped changing, the key's effect is on
screen, the file has the change) with generous timeouts, never fixed sleeps
that a loaded machine (ctest -j2) can outrun.

Standard library only (xvfb_util.py): PNGs are decoded with zlib.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xvfb_util import (WindowManager, check, colour_pixels, cpu_ticks, finish,  # noqa: E402
                       fresh_work, grab_bytes, idle_cpu, launch, new_files, png_info, wait_new_png, quit_app,
                       read_png, run, stop, visible, wait_for_window, wait_window_gone, wait_screen_stable,
                       wait_until, window_geometry, window_state, xdotool)

# The warning banner's background (ui.cpp: ImVec4(0.45, 0.28, 0.05)).
BANNER_RGB = (115, 71, 13)


def session_view(path):
    try:
        return json.load(open(path)).get("view", {})
    except (OSError, ValueError):
        return {}


def focus(env, wid):
    xdotool(env, "mousemove", "640", "60")
    xdotool(env, "windowfocus", "--sync", wid)


def screenshots_and_first_launches(args, env, cfg):
    """Sections 1 to 5 (see the module's docstring)."""
    # 1. Screenshots of every variant, with a session present that must stay untouched.
    os.makedirs(cfg)
    sentinel = '{"sentinel": true}'
    open(os.path.join(cfg, "session.json"), "w").write(sentinel)
    variants = [("simple", []), ("self_attention_v1", []), ("self_attention_v2", ["--qkv-bias"]),
                ("causal", ["--dropout", "0.5"]), ("multihead_wrapper", ["--heads", "3"]),
                ("multihead", ["--d-out", "4", "--heads", "2"])]
    for variant, extra in variants:
        png = os.path.join(args.work, f"shot-{variant}.png")
        r = run([args.app, "--variant", variant, *extra, "--stage", "softmax", "--cell", "2,1",
                 "--size", "1280x800", "--screenshot", png], env)
        check(r.returncode == 0, f"--screenshot {variant} exits 0 ({r.stderr.strip()})")
        if not check(os.path.exists(png), f"--screenshot {variant} writes {png}"):
            continue
        w, h, pixels = read_png(png)
        check((w, h) == (1280, 800), f"{variant} screenshot is 1280x800 (got {w}x{h})")
        colours = len(set(pixels))
        check(colours > 300, f"{variant} screenshot is not blank ({colours} distinct colours)")
    check(open(os.path.join(cfg, "session.json")).read() == sentinel,
          "--screenshot leaves the saved session untouched")
    check(not os.path.exists(os.path.join(cfg, "imgui.ini")), "--screenshot writes no imgui.ini")

    # 2. Real keys on a plain launch: the corrupt session from step 1 is set aside.
    app = launch(args.app, [], env, args.work)
    wid = wait_for_window(env)
    if check(wid is not None, "a plain launch opens a window named attnscope"):
        before = os.path.join(args.work, "before.png")
        after = os.path.join(args.work, "after.png")
        focus(env, wid)
        # The first trace computes on the engine's thread: wait until it is on screen.
        wait_screen_stable(env, args.grab, before)
        before_bytes = grab_bytes(env, args.grab, before)
        for _ in range(3):
            xdotool(env, "key", "Right")
            time.sleep(0.25)
        if args.grab:  # however long a loaded machine takes to draw it
            wait_until(lambda: grab_bytes(env, args.grab, after) != before_bytes, 30)
            wait_screen_stable(env, args.grab, after)
        else:
            time.sleep(1.0)
            _, _, a = read_png(before)
            _, _, b = read_png(after)
            changed = sum(1 for p, q in zip(a, b) if p != q)
            check(changed > 5000, f"Right x3 changes the screen ({changed} pixels differ)")
        # 3. An idle window: measure CPU (the screen is still by now).
        used = idle_cpu(app.pid)
        check(used < 0.05, f"an idle window uses almost no CPU ({used * 100:.1f}%)")
        xdotool(env, "key", "ctrl+q")
    code, _, err = stop(app)
    check(code == 0, f"Ctrl+Q exits with 0 (got {code}; {err.strip()})")
    check("could not be restored" in err and os.path.exists(os.path.join(cfg, "session.json.bak")),
          "the corrupt session was set aside as session.json.bak with a warning")
    session_path = os.path.join(cfg, "session.json")
    if check(os.path.exists(session_path), "the session is written"):
        stage = session_view(session_path).get("stage")
        check(stage == "context", f"the saved stage is 'context' after Right x3 (got {stage})")
    check(os.path.exists(os.path.join(cfg, "imgui.ini")), "imgui.ini lives in the config dir")
    check(not os.path.exists(os.path.join(args.work, "imgui.ini")), "no imgui.ini in the working directory")

    # 3. The next launch restores the session (and saves it again on exit).
    wait_window_gone(env)
    app = launch(args.app, ["--size", "1280x800"], env, args.work)
    wid = wait_for_window(env)
    if wid:
        focus(env, wid)
        shot = os.path.join(args.work, "restored.png")
        wait_screen_stable(env, args.grab, shot)
        restored = grab_bytes(env, args.grab, shot)
        xdotool(env, "key", "Left")
        if args.grab:  # the step moved on screen before Ctrl+Q saves it
            wait_until(lambda: grab_bytes(env, args.grab, shot) != restored, 30)
        else:
            time.sleep(1.0)
        code, _, _ = quit_app(env, app, wid)
    else:
        code, _, _ = stop(app)
    view = session_view(session_path)
    check(code == 0 and view.get("stage") == "softmax",
          f"the next launch restored 'context' (one Left gives 'softmax', got {view.get('stage')})")
    window = view.get("ui", {}).get("window")
    check(window == [1280, 800], f"the window size is remembered (got {window})")

    # 4. No display; bad flags.
    session_before_bench = open(session_path).read()
    noenv = {k: v for k, v in env.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    r = run([args.app, "--no-session"], noenv)
    check(r.returncode == 1 and "graphical session" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
          f"no display: one line and exit 1 (got {r.returncode}: {r.stderr.strip()})")
    r = run([args.app, "--variant", "nope"], env)
    check(r.returncode == 2 and r.stderr.startswith("error: unknown variant"), "a bad --variant: exit 2")
    r = run([args.app, "--version"], env)
    check(r.returncode == 0 and r.stdout.startswith("attnscope "), "--version")
    r = run([args.app, "--help"], env)
    check(r.returncode == 0 and "--screenshot" in r.stdout, "--help")

    # 5. --bench-frames: frames timed on a random run (the engine on its thread), then exit 0.
    r = run([args.app, "--random", "64,8", "--variant", "multihead", "--d-out", "8", "--heads", "2",
             "--stage", "softmax", "--bench-frames", "5"], env)
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and "frames=" in r.stdout and "with_trace=5" in r.stdout
          and any(line.startswith("first_frame_ms=") for line in lines)
          and any(line.startswith("peak_rss_mb=") for line in lines)
          and "T=64 d_in=8" in r.stdout,
          f"--bench-frames 5 prints the frames and a summary ({r.returncode}: {r.stderr.strip()})")
    check(open(session_path).read() == session_before_bench,
          "--bench-frames leaves the saved session untouched")
    r = run([args.app, "--random", "5000,8"], env)
    check(r.returncode == 2 and "--random" in r.stderr, "--random beyond 4096 tokens: exit 2")


def autosave_survives_sigkill(args, env, cfg):
    """6. A change reaches session.json shortly after it is made; SIGKILL; relaunch restores it."""
    session_path = os.path.join(cfg, "session.json")
    app = launch(args.app, ["--size", "1280x800"], env, args.work)
    wid = wait_for_window(env)
    if not check(wid is not None, "autosave: the app's window appears"):
        stop(app, timeout=5)
        return
    focus(env, wid)
    shot = os.path.join(args.work, "autosave.png")
    wait_screen_stable(env, args.grab, shot)
    # The launch itself saves the run it shows (shortly after it starts).
    check(wait_until(lambda: session_view(session_path).get("stage") == "inputs", 30),
          "the first session is saved without any input or exit")
    # inputs -> scores -> softmax (simple attention): two presses in one
    # xdotool call, which arrive in one poll; both must count (keyboard_queue.hpp).
    pressed = time.monotonic()
    xdotool(env, "key", "Right", "Right")
    saved = wait_until(lambda: session_view(session_path).get("stage") == "softmax", 30, step=0.05)
    latency = time.monotonic() - pressed
    check(saved, f"Right x2 is autosaved while the app runs ({latency:.2f} s after the last key; "
                 "debounce 0.75 s)")
    check(latency >= 0.5, f"... not before the debounce ({latency:.2f} s >= 0.5 s)")
    os.kill(app.pid, signal.SIGKILL)
    code, _, _ = stop(app)
    check(code == -signal.SIGKILL, f"the app was SIGKILLed ({code})")
    temps = [n for n in os.listdir(cfg) if n.startswith(".attnscope-")]
    check(wait_window_gone(env), "the killed app's window is gone")

    app = launch(args.app, ["--size", "1280x800"], env, args.work)
    wid = wait_for_window(env)
    if wid:
        focus(env, wid)
        wait_screen_stable(env, args.grab, os.path.join(args.work, "autosave2.png"))
        code, _, err = quit_app(env, app, wid)
    else:
        code, _, err = stop(app)
    check(code == 0 and "could not be restored" not in err, f"the relaunch exits 0 ({code}: {err.strip()})")
    stage = session_view(session_path).get("stage")
    check(stage == "softmax", f"the relaunch restored the change made before SIGKILL (stage {stage})")
    left = [n for n in os.listdir(cfg) if n.startswith(".attnscope-")]
    check(left == [], f"no temporary file remains after the relaunch (after the kill: {temps}; now: {left})")


def newer_session_kept(args, env, cfg):
    """7. A session format from the future: kept whole beside an earlier .bak, the user told."""
    os.makedirs(cfg, exist_ok=True)
    session_path = os.path.join(cfg, "session.json")
    open(os.path.join(cfg, "session.json.bak"), "w").write("an earlier backup")
    doc = {"attnscope_session": 2, "run": {"tokens": ["a", "b"], "embeddings": [[1, 2], [3, 4]],
                                           "attention_2": {"rotary": True}},
           "view": {"stage": "softmax"}}
    future = json.dumps(doc, indent=1) + "\n"
    open(session_path, "w").write(future)
    app = launch(args.app, ["--size", "1280x800"], env, args.work)
    wid = wait_for_window(env)
    banner = 0
    if wid:
        focus(env, wid)
        grab = os.path.join(args.work, "newer.ppm")
        wait_screen_stable(env, args.grab, os.path.join(args.work, "newer.png"))
        banner = colour_pixels(env, args.grab, grab, BANNER_RGB)
        xdotool(env, "key", "ctrl+q")
    code, _, err = stop(app)
    check(code == 0, f"a newer session: the app starts and Ctrl+Q exits 0 ({code})")
    bak1 = session_path + ".bak-1"
    check("was saved by a newer attnscope (session format 2; this attnscope reads format 1)" in err
          and session_path in err and bak1 in err,
          f"a warning names the file, the versions and where it went: {err.strip()[:300]}")
    if banner is not None:
        check(banner > 5000, f"the warning is on screen as a banner ({banner} banner pixels)")
    check(os.path.exists(bak1) and open(bak1).read() == future,
          "the newer session is kept byte for byte as session.json.bak-1")
    check(open(session_path + ".bak").read() == "an earlier backup", "the earlier .bak is untouched")
    view = session_view(session_path)
    tokens = json.load(open(session_path)).get("run", {}).get("tokens", [])
    check(view.get("stage") == "inputs" and len(tokens) == 6,
          f"the app started from the defaults (stage {view.get('stage')}, {len(tokens)} tokens)")


def failing_autosave(args):
    """8. The config folder's name is taken by a file: saving fails, the app goes on."""
    work = os.path.join(args.work, "readonly")
    os.makedirs(work, exist_ok=True)
    xdg = os.path.join(work, "config")
    os.makedirs(xdg, exist_ok=True)
    open(os.path.join(xdg, "attnscope"), "w").write("a file where the folder should be")
    env = dict(os.environ, XDG_CONFIG_HOME=xdg)
    app = launch(args.app, ["--size", "1280x800"], env, work)
    wid = wait_for_window(env)
    banner = 0
    if wid:
        focus(env, wid)
        shot = os.path.join(work, "s.png")
        wait_screen_stable(env, args.grab, shot)
        for _ in range(2):  # two changes, each past the debounce: two failed saves
            xdotool(env, "key", "Right")
            time.sleep(1.5)
        wait_screen_stable(env, args.grab, shot)
        banner = colour_pixels(env, args.grab, os.path.join(work, "s.ppm"), BANNER_RGB)
        check(app.poll() is None, "saving fails, the app runs on")
        xdotool(env, "key", "ctrl+q")
    code, _, err = stop(app)
    warnings = err.count("The session could not be saved")
    check(code == 0, f"Ctrl+Q exits 0 although nothing could be saved ({code})")
    check(warnings == 1, f"the failure is told once, not per attempt ({warnings} warnings): {err.strip()[:300]}")
    check("the session was not saved" in err, "the exit save's failure is reported too")
    if banner is not None:
        check(banner > 5000, f"the failure is on screen as a banner ({banner} banner pixels)")


def resize_and_minimise(args, env):
    """9. Sizes from 1x1 to 8000x6000, minimise and restore, then the window still works."""
    if not args.wm:
        check(False, "x11_wm was not built: minimise cannot be tested")
        return
    pictures = os.path.join(args.work, "pictures")
    app_env = dict(env, XDG_PICTURES_DIR=pictures)
    with WindowManager(args.wm, env) as wm:
        if not check(wm.ready, "x11_wm manages the display"):
            return
        cfg = os.path.join(args.work, "resize-config", "attnscope")
        app_env["XDG_CONFIG_HOME"] = os.path.dirname(cfg)
        session_path = os.path.join(cfg, "session.json")
        app = launch(args.app, ["--size", "1280x800", "--stage", "softmax"], app_env, args.work)
        wid = wait_for_window(env)
        if not check(wid is not None, "resize: the app's window appears"):
            stop(app, timeout=5)
            return
        shot = os.path.join(args.work, "resize.png")
        wait_screen_stable(env, args.grab, shot)
        for w, h in [(1, 1), (50, 30), (8000, 6000), (320, 240), (3000, 200), (1, 900),
                     (1280, 800)]:
            xdotool(env, "windowsize", wid, str(w), str(h))
            got = wait_until(lambda: window_geometry(env, wid) == (w, h), 20)
            time.sleep(0.3)
            wait_screen_stable(env, args.grab, shot)
            check(app.poll() is None and got,
                  f"resized to {w}x{h}: the app runs ({window_geometry(env, wid)})")
        # Keys sent to the window reach the app (the control for the minimised case).
        xdotool(env, "key", "--window", wid, "Left")
        check(wait_until(lambda: session_view(session_path).get("stage") == "scores", 30),
              f"a key sent to the window moves the stage (saved: {session_view(session_path).get('stage')})")
        xdotool(env, "windowminimize", wid)
        iconic = wait_until(lambda: window_state(env, wid) == "Iconic" and not visible(env, wid), 20)
        check(iconic, "the window is minimised (WM_STATE Iconic, unmapped)")
        # Minimised, the app draws no frame at all: 60 keys sent to it wake it
        # up but change nothing (a frame would step the stage to the end).
        t0 = cpu_ticks(app.pid)
        started = time.monotonic()
        xdotool(env, "key", "--window", wid, "--delay", "20", *(["Right"] * 60), timeout=60)
        time.sleep(1.5)
        used = (cpu_ticks(app.pid) - t0) / os.sysconf("SC_CLK_TCK") / (time.monotonic() - started)
        check(app.poll() is None, "minimised: the app runs")
        check(used < 0.15, f"minimised: 60 keys draw no frames ({used * 100:.1f}% CPU)")
        xdotool(env, "windowactivate", "--sync", wid)
        shown = wait_until(lambda: window_state(env, wid) == "Normal" and visible(env, wid), 20)
        check(shown, "restored from minimised")
        restored = os.path.join(args.work, "restored-after-minimise.png")
        wait_screen_stable(env, args.grab, restored)
        if args.grab:
            _, _, distinct = png_info(restored)
            check(distinct > 20, f"the restored window draws ({distinct} distinct bytes on screen)")
        folder = os.path.join(pictures, "attnscope")
        before = new_files(folder)
        xdotool(env, "key", "F12")
        shots = wait_new_png(folder, before, 30)
        if check(len(shots) == 1 and shots[0].endswith(".png"),
                 f"F12 after the resizes and the minimise saves a screenshot ({shots})"):
            path = os.path.join(folder, shots[0])
            w, h, distinct = png_info(path)
            check((w, h) == (1280, 800) and distinct > 20,
                  f"the screenshot is the whole 1280x800 window, not blank ({w}x{h}, {distinct})")
            print(f"screenshot after resize/minimise: {path}", flush=True)
        xdotool(env, "key", "ctrl+q")
        code, _, err = stop(app)
        check(code == 0, f"Ctrl+Q after the resizes exits 0 ({code}: {err.strip()[:300]})")
        check("OpenGL error" not in err, f"no OpenGL error in any frame ({err.strip()[:300]})")
        stage = session_view(session_path).get("stage")
        check(stage == "scores", f"the keys sent while minimised did nothing (stage {stage})")

        # The window manager's close button (WM_DELETE_WINDOW): a clean exit that saves.
        cfg_env = dict(env, XDG_CONFIG_HOME=os.path.join(args.work, "close-config"))
        app = launch(args.app, ["--size", "1000x700", "--stage", "softmax"], cfg_env, args.work)
        wid = wait_for_window(env)
        if wid:
            wait_screen_stable(env, args.grab, shot)
            subprocess.run([args.wm, "close", wid], env=env, check=False)
        code, _, err = stop(app)
        saved = session_view(os.path.join(args.work, "close-config", "attnscope", "session.json"))
        check(code == 0 and saved.get("stage") == "softmax",
              f"closing the window exits 0 and saves the session ({code}, {saved.get('stage')})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True)
    ap.add_argument("--grab", default="")
    ap.add_argument("--wm", default="")
    ap.add_argument("--work", required=True)
    args = ap.parse_args()

    env, cfg = fresh_work(args.work)
    screenshots_and_first_launches(args, env, cfg)
    env6 = dict(env, XDG_CONFIG_HOME=os.path.join(args.work, "kill-config"))
    autosave_survives_sigkill(args, env6, os.path.join(args.work, "kill-config", "attnscope"))
    env7 = dict(env, XDG_CONFIG_HOME=os.path.join(args.work, "newer-config"))
    newer_session_kept(args, env7, os.path.join(args.work, "newer-config", "attnscope"))
    failing_autosave(args)
    resize_and_minimise(args, env)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
