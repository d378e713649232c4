#!/usr/bin/env python3
"""attnscope's exports end to end under Xvfb (run inside xvfb-run; see CMakeLists.txt).

  1. --export-png DIR: one PNG per stage (every head), paths printed in trace
     order, named by the export rule; at --scale 2 every image is exactly twice
     its 1x size; images are not blank.
  2. --export-png into a missing folder creates it (with its parents) and
     says so; into a path that is a file, or with a bad --scale: exit 2, one
     "error: " line naming the problem, nothing written.
  3. A running app: F12 writes a screenshot of the window into
     $XDG_PICTURES_DIR/attnscope; Ctrl+Q exits cleanly.

Standard library only (xvfb_util.py).
"""
import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xvfb_util import check, finish, fresh_work, png_info, wait_for_window  # noqa: E402


# <stage>[_h<head>]_<variant>_<YYYYmmdd-HHMMSS>[-n].png, for this test's variant.
NAME = re.compile(r"^(?P<stage>[A-Za-z_]+?)(_h(?P<head>\d+))?_multihead_\d{8}-\d{6}(-\d+)?\.png$")


def export(app, out, *flags, env=None):
    return subprocess.run([app, "--export-png", out, *flags], capture_output=True, text=True,
                          timeout=120, env=env)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    env, _ = fresh_work(args.work)

    # 1. --export-png at 1x and 2x.
    sizes = {}
    for scale in (1, 2):
        out = os.path.join(args.work, f"png{scale}")
        os.makedirs(out)
        p = export(args.app, out, "--preset", "book", "--variant", "multihead", "--heads", "2",
                   "--d-out", "4", "--scale", str(scale), env=env)
        check(p.returncode == 0, f"--export-png --scale {scale} exits 0 ({p.stderr.strip()[:200]})")
        paths = p.stdout.split()
        check(sorted(os.path.join(out, f) for f in os.listdir(out)) == sorted(paths),
              f"every printed path exists and nothing else was written ({len(paths)} files)")
        names = [os.path.basename(x) for x in paths]
        check(all(NAME.match(n) for n in names), f"names follow the export rule: {names[:3]}...")
        check(any("_h1_" in n for n in names) and any(n.startswith("weights_h0") for n in names),
              "every head of per-head stages is exported")
        for path in paths:
            w, h, distinct = png_info(path)
            key = NAME.match(os.path.basename(path))
            sizes.setdefault((key["stage"], key["head"]), {})[scale] = (w, h)
            if distinct < 20:
                check(False, f"{path} is not blank ({distinct} distinct bytes)")
    doubled = [k for k, v in sizes.items() if v.get(2) == (2 * v[1][0], 2 * v[1][1])]
    check(len(doubled) == len(sizes) and len(sizes) > 20,
          f"every 2x PNG is exactly twice its 1x size ({len(doubled)} of {len(sizes)})")

    # 2. A missing folder is created (and said so); a path that is a file, and
    # bad scales: exit 2, one line, nothing written.
    missing = os.path.join(args.work, "missing", "nested")
    p = export(args.app, missing, "--preset", "book", env=env)
    made = sorted(os.listdir(missing)) if os.path.isdir(missing) else []
    check(p.returncode == 0 and f"created the folder {missing}" in p.stderr
          and len(made) == len(p.stdout.split()) > 0,
          f"a missing folder is created with its parents: {p.stderr.strip()[:200]}")
    plain = os.path.join(args.work, "plain-file")
    with open(plain, "w") as f:
        f.write("x")
    p = export(args.app, plain, "--preset", "book", env=env)
    check(p.returncode == 2 and p.stderr.startswith("error: ") and "not a folder" in p.stderr,
          f"a file in place of the folder is refused: {p.stderr.strip()}")
    p = export(args.app, os.path.join(args.work, "png1"), "--scale", "5", env=env)
    check(p.returncode == 2 and "--scale" in p.stderr, f"--scale 5 is refused: {p.stderr.strip()}")

    # 3. F12 in a running app.
    pics = os.path.join(args.work, "pictures")
    app_env = dict(env, XDG_PICTURES_DIR=pics)
    proc = subprocess.Popen([args.app, "--no-session", "--size", "1000x700"], env=app_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wid = wait_for_window(app_env)
        check(wid is not None, "the app's window appears")
        time.sleep(1.0)
        subprocess.run(["xdotool", "windowactivate", "--sync", wid], capture_output=True)
        subprocess.run(["xdotool", "key", "--window", wid, "F12"])
        # A sanitized build on a busy machine can take seconds per frame: wait
        # up to 60 s for the file, then a moment more to see that only one came.
        folder = os.path.join(pics, "attnscope")
        shots = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            shots = os.listdir(folder) if os.path.isdir(folder) else []
            if any(f.endswith(".png") for f in shots):
                break
            time.sleep(0.1)
        time.sleep(0.5)
        shots = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
        if check(len(shots) == 1 and shots[0].startswith("screenshot_") and shots[0].endswith(".png"),
                 f"F12 writes one screenshot into $XDG_PICTURES_DIR/attnscope: {shots}"):
            w, h, distinct = png_info(os.path.join(pics, "attnscope", shots[0]))
            check((w, h) == (1000, 700) and distinct > 20, f"the screenshot is the window ({w}x{h})")
        subprocess.run(["xdotool", "key", "--window", wid, "ctrl+q"])
        proc.wait(timeout=20)
        check(proc.returncode == 0, f"Ctrl+Q exits cleanly ({proc.returncode})")
    finally:
        if proc.poll() is None:
            proc.kill()

    return finish()


if __name__ == "__main__":
    sys.exit(main())
