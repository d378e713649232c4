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

Waits are for conditions (the screen stopped changing, the key's effect is on
screen) with generous timeouts, never fixed sleeps that a loaded machine
(ctest -j2) can outrun.

Standard library only: PNGs are decoded here with zlib.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

FAILURES = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)
    return ok


def read_png(path):
    """(width, height, list of RGB tuples of every pixel) for 8-bit RGB/RGBA PNGs."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w, h, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                raise ValueError("unsupported PNG format")
        elif kind == b"IDAT":
            idat += body
    bpp = 4 if ctype == 6 else 3
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    pixels = [tuple(r[x * bpp:x * bpp + 3]) for r in rows for x in range(w)]
    return w, h, pixels


def run(cmd, env, timeout=120):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def wait_for_window(env, timeout=60):
    out = subprocess.run(["timeout", str(timeout), "xdotool", "search", "--sync", "--name", "^attnscope$"],
                         env=env, capture_output=True, text=True)
    ids = out.stdout.split()
    return ids[0] if ids else None


def grab_bytes(env, grab, path):
    """The screen as PNG bytes (equal bytes: an identical screen), or None without a grabber."""
    if not grab:
        return None
    subprocess.run([grab, path], env=env, check=False)
    try:
        return open(path, "rb").read()
    except OSError:
        return None


def wait_until(condition, timeout, step=0.25):
    """Polls condition() until it holds or `timeout` seconds pass; its last value."""
    deadline = time.monotonic() + timeout
    while True:
        ok = condition()
        if ok or time.monotonic() > deadline:
            return ok
        time.sleep(step)


def wait_screen_stable(env, grab, path, timeout=30, fallback=1.0):
    """Waits until two grabs 0.3 s apart are identical: the app drew its last
    frame (the trace is on screen, nothing moves). On a loaded machine that
    takes as long as it takes, up to `timeout`; without a grabber, a fixed sleep."""
    if not grab:
        time.sleep(fallback)
        return True
    last = [grab_bytes(env, grab, path)]

    def same():
        time.sleep(0.3)
        now = grab_bytes(env, grab, path)
        ok = now is not None and now == last[0]
        last[0] = now
        return ok
    return wait_until(same, timeout, step=0.0)


def cpu_ticks(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True)
    ap.add_argument("--grab", default="")
    ap.add_argument("--work", required=True)
    args = ap.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    xdg = os.path.join(args.work, "config")
    cfg = os.path.join(xdg, "attnscope")
    env = dict(os.environ, XDG_CONFIG_HOME=xdg)

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
    app = subprocess.Popen([args.app], env=env, cwd=args.work, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        wid = wait_for_window(env)
        if check(wid is not None, "a plain launch opens a window named attnscope"):
            before = os.path.join(args.work, "before.png")
            after = os.path.join(args.work, "after.png")
            subprocess.run(["xdotool", "mousemove", "640", "60"], env=env)
            subprocess.run(["xdotool", "windowfocus", "--sync", wid], env=env)
            # The first trace computes on the engine's thread: wait until it is on screen.
            wait_screen_stable(env, args.grab, before)
            before_bytes = grab_bytes(env, args.grab, before)
            for _ in range(3):
                subprocess.run(["xdotool", "key", "Right"], env=env)
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
            # 3. An idle window: measure CPU over 3 seconds (the screen is still
            # by now). The least of up to three windows, so that one stray
            # wake-up on a loaded machine does not decide it.
            used = 1.0
            for _ in range(3):
                t0 = cpu_ticks(app.pid)
                time.sleep(3.0)
                used = min(used, (cpu_ticks(app.pid) - t0) / os.sysconf("SC_CLK_TCK") / 3.0)
                if used < 0.05:
                    break
            check(used < 0.05, f"an idle window uses almost no CPU ({used * 100:.1f}%)")
            subprocess.run(["xdotool", "key", "ctrl+q"], env=env)
        out, err = app.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        app.kill()
        out, err = app.communicate()
    check(app.returncode == 0, f"Ctrl+Q exits with 0 (got {app.returncode}; {err.strip()})")
    check("could not be restored" in err and os.path.exists(os.path.join(cfg, "session.json.bak")),
          "the corrupt session was set aside as session.json.bak with a warning")
    session_path = os.path.join(cfg, "session.json")
    if check(os.path.exists(session_path), "the session is written on exit"):
        s = json.load(open(session_path))
        stage = s.get("view", {}).get("stage")
        check(stage == "context", f"the saved stage is 'context' after Right x3 (got {stage})")
    check(os.path.exists(os.path.join(cfg, "imgui.ini")), "imgui.ini lives in the config dir")
    check(not os.path.exists(os.path.join(args.work, "imgui.ini")), "no imgui.ini in the working directory")

    # 3. The next launch restores the session (and saves it again on exit).
    app = subprocess.Popen([args.app, "--size", "1280x800"], env=env, cwd=args.work,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wid = wait_for_window(env)
    if wid:
        subprocess.run(["xdotool", "mousemove", "640", "60"], env=env)
        subprocess.run(["xdotool", "windowfocus", "--sync", wid], env=env)
        shot = os.path.join(args.work, "restored.png")
        wait_screen_stable(env, args.grab, shot)
        restored = grab_bytes(env, args.grab, shot)
        subprocess.run(["xdotool", "key", "Left"], env=env)
        if args.grab:  # the step moved on screen before Ctrl+Q saves it
            wait_until(lambda: grab_bytes(env, args.grab, shot) != restored, 30)
        else:
            time.sleep(1.0)
        subprocess.run(["xdotool", "key", "ctrl+q"], env=env)
    try:
        app.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        app.kill()
        app.communicate()
    view = json.load(open(session_path)).get("view", {})
    check(app.returncode == 0 and view.get("stage") == "softmax",
          f"the next launch restored 'context' (one Left gives 'softmax', got {view.get('stage')})")
    window = view.get("ui", {}).get("window")
    check(window == [1280, 800], f"the window size is remembered (got {window})")

    # 4. No display; bad flags.
    session_before_bench = open(os.path.join(cfg, "session.json")).read()
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
          and any(l.startswith("first_frame_ms=") for l in lines)
          and any(l.startswith("peak_rss_mb=") for l in lines)
          and "T=64 d_in=8" in r.stdout,
          f"--bench-frames 5 prints the frames and a summary ({r.returncode}: {r.stderr.strip()})")
    check(open(os.path.join(cfg, "session.json")).read() == session_before_bench,
          "--bench-frames leaves the saved session untouched")
    r = run([args.app, "--random", "5000,8"], env)
    check(r.returncode == 2 and "--random" in r.stderr, "--random beyond 4096 tokens: exit 2")

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
