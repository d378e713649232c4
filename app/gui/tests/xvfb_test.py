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


def run(cmd, env, timeout=60):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def wait_for_window(env, timeout=15):
    out = subprocess.run(["timeout", str(timeout), "xdotool", "search", "--sync", "--name", "^attnscope$"],
                         env=env, capture_output=True, text=True)
    ids = out.stdout.split()
    return ids[0] if ids else None


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
            time.sleep(1.0)
            before = os.path.join(args.work, "before.png")
            after = os.path.join(args.work, "after.png")
            if args.grab:
                subprocess.run([args.grab, before], env=env, check=False)
            subprocess.run(["xdotool", "mousemove", "640", "60"], env=env)
            subprocess.run(["xdotool", "windowfocus", "--sync", wid], env=env)
            for _ in range(3):
                subprocess.run(["xdotool", "key", "Right"], env=env)
                time.sleep(0.25)
            time.sleep(0.5)
            if args.grab:
                subprocess.run([args.grab, after], env=env, check=False)
                _, _, a = read_png(before)
                _, _, b = read_png(after)
                changed = sum(1 for p, q in zip(a, b) if p != q)
                check(changed > 5000, f"Right x3 changes the screen ({changed} pixels differ)")
            # 3. An idle window: measure CPU over 3 seconds.
            t0 = cpu_ticks(app.pid)
            time.sleep(3.0)
            used = (cpu_ticks(app.pid) - t0) / os.sysconf("SC_CLK_TCK") / 3.0
            check(used < 0.05, f"an idle window uses almost no CPU ({used * 100:.1f}%)")
            subprocess.run(["xdotool", "key", "ctrl+q"], env=env)
        out, err = app.communicate(timeout=20)
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
        time.sleep(0.8)
        subprocess.run(["xdotool", "mousemove", "640", "60"], env=env)
        subprocess.run(["xdotool", "windowfocus", "--sync", wid], env=env)
        subprocess.run(["xdotool", "key", "Left"], env=env)
        time.sleep(0.4)
        subprocess.run(["xdotool", "key", "ctrl+q"], env=env)
    try:
        app.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        app.kill()
        app.communicate()
    view = json.load(open(session_path)).get("view", {})
    check(app.returncode == 0 and view.get("stage") == "softmax",
          f"the next launch restored 'context' (one Left gives 'softmax', got {view.get('stage')})")
    window = view.get("ui", {}).get("window")
    check(window == [1280, 800], f"the window size is remembered (got {window})")

    # 4. No display; bad flags.
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

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
