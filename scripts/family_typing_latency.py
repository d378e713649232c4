#!/usr/bin/env python3
"""How long the app takes from a key typed into a model's text to the new
attention on screen.

    python3 scripts/family_typing_latency.py build/app/gui/attnscope MODEL_FOLDER

Starts the app under its own Xvfb (display :78) on MODEL_FOLDER with a
36-word text, waits for the first run, clicks into the text box, goes to
its end and types eight letters one at a time. For each, it times from the
key press to the first frame whose status (ATTNSCOPE_STATUS_FILE) shows the
longer text computed: not busy, and every typed token shown. Prints each
latency and the median. Needs Xvfb and xdotool; the Text box is where it is
in a 1600 x 1000 window.
"""
import os
import subprocess
import sys
import tempfile
import time

TEXT = ("the quick brown fox jumps over the lazy dog and then runs away into the quiet green "
        "forest where birds sing all day long while the river flows gently past old stones and "
        "tall trees")
TEXT_BOX = ("200", "372")


def read(status):
    try:
        with open(status) as f:
            return dict(line.split(" ", 1) for line in f.read().splitlines() if " " in line)
    except OSError:
        return {}


def wait(status, done, seconds):
    start = time.time()
    while time.time() - start < seconds:
        if done(read(status)):
            return True
        time.sleep(0.005)
    return False


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    app, model = sys.argv[1], sys.argv[2]
    work = tempfile.mkdtemp(prefix="attnscope-typing-")
    status = os.path.join(work, "status.txt")
    env = dict(os.environ, DISPLAY=":78", ATTNSCOPE_STATUS_FILE=status, HOME=work)
    xvfb = subprocess.Popen(["Xvfb", ":78", "-screen", "0", "1600x1000x24"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    proc = subprocess.Popen([app, "--no-session", "--model", model, "--text", TEXT], env=env)
    try:
        if not wait(status, lambda s: s.get("busy") == "0" and s.get("shown_tokens", "0") != "0",
                    300):
            print("the model did not open", file=sys.stderr)
            return 1
        subprocess.run(["xdotool", "mousemove", *TEXT_BOX, "click", "1"], env=env, check=True)
        time.sleep(1)
        subprocess.run(["xdotool", "key", "ctrl+End"], env=env, check=True)
        time.sleep(1.5)
        latencies = []
        for letter in "abcdefgh":
            before = read(status).get("text_bytes")
            start = time.time()
            subprocess.run(["xdotool", "type", letter], env=env, check=True)
            shown = wait(status, lambda s: s.get("text_bytes") != before and s.get("busy") == "0"
                         and s.get("shown_tokens") == s.get("tokens"), 20)
            latencies.append((time.time() - start) * 1000 if shown else float("inf"))
            time.sleep(0.5)
        print("tokens", read(status).get("tokens"), "latency ms",
              [round(x) for x in latencies], "median", round(sorted(latencies)[4]))
        return 0
    finally:
        proc.terminate()
        xvfb.terminate()


if __name__ == "__main__":
    sys.exit(main())
