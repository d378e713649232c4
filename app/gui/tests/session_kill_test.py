#!/usr/bin/env python3
"""SIGKILL during a session save: the file on disk is always a complete session.

session_kill_helper saves two different sessions of about the same size (A
and B: 256 random tokens each, ~250-300 KB, so a kill often lands mid-write
and leaves either one on disk about as often) alternately in a tight loop
through the app's own autosave path (Autosave's writer thread, session_text, core's atomic
write). This test starts it, kills it with SIGKILL at a random moment, and
checks, KILLS times (default 50, seed fixed, both overridable):

  - session.json parses as JSON with the session's fields, and the app's own
    restore (session_kill_helper check) reads it and finds exactly A or B;
  - at most one temporary file is left (the write that was cut short), and
    the next start removes it ("cleaned N" equals what the last kill left);
  - at the end, a clean run leaves no temporary file at all.

Environment: ATTNSCOPE_KILL_SEED (default 20240611), ATTNSCOPE_KILLS (default 50).
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xvfb_util import check, finish  # noqa: E402


def temporaries(folder):
    return sorted(n for n in os.listdir(folder) if n.startswith(".attnscope-") and n.endswith(".tmp"))


def start_loop(helper, file, writes=0):
    """Starts the save loop and waits for its first two saves (A, then B).
    Returns (process, cleaned count, ready, seconds the save of B took)."""
    proc = subprocess.Popen([helper, "loop", file] + ([str(writes)] if writes else []),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline().split()
    cleaned = int(first[1]) if len(first) == 2 and first[0] == "cleaned" else -1
    ready = proc.stdout.readline().strip() == "saved A"
    before = time.monotonic()
    ready = ready and proc.stdout.readline().strip() == "saved B"
    return proc, cleaned, ready, time.monotonic() - before


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--helper", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    seed = int(os.environ.get("ATTNSCOPE_KILL_SEED", "20240611"))
    kills = int(os.environ.get("ATTNSCOPE_KILLS", "50"))
    print(f"seed {seed} (ATTNSCOPE_KILL_SEED), {kills} kills (ATTNSCOPE_KILLS)", flush=True)
    rng = random.Random(seed)

    os.makedirs(args.work, exist_ok=True)
    for name in os.listdir(args.work):
        os.remove(os.path.join(args.work, name))
    file = os.path.join(args.work, "session.json")

    seen = {"A": 0, "B": 0}
    mid_write = 0      # kills that left a temporary file: the write was cut short
    left_before = 0    # temporaries the previous kill left
    bad = 0
    started = time.monotonic()
    for k in range(kills):
        proc, cleaned, ready, save_seconds = start_loop(args.helper, file)
        if not ready:
            proc.kill()
            err = proc.communicate()[1]
            check(False, f"kill {k}: the save loop started ({err.strip()})")
            bad += 1
            continue
        if cleaned != left_before:
            check(False, f"kill {k}: the start removed {cleaned} stale temporary file(s), "
                         f"expected {left_before}")
            bad += 1
        # A random moment within 0.3 s, or within four saves when a loaded
        # machine makes one save take longer: both A and B must get a chance.
        time.sleep(rng.uniform(0.0, 1.0) * max(0.3, 4 * save_seconds))
        proc.kill()  # SIGKILL: no handler, no flush, no destructor
        proc.communicate()

        temps = temporaries(args.work)
        mid_write += 1 if temps else 0
        left_before = len(temps)
        problems = []
        if len(temps) > 1:
            problems.append(f"{len(temps)} temporary files: {temps}")
        try:
            doc = json.load(open(file))
            if doc.get("attnscope_session") != 1 or not isinstance(doc.get("run"), dict) \
                    or not isinstance(doc.get("view"), dict):
                problems.append("the JSON is not a complete session")
        except (OSError, ValueError) as e:
            problems.append(f"session.json does not parse: {e}")
        r = subprocess.run([args.helper, "check", file], capture_output=True, text=True, timeout=60)
        which = r.stdout.strip()
        if r.returncode != 0 or which not in seen:
            problems.append(f"the app's restore: {r.stderr.strip() or which}")
        else:
            seen[which] += 1
        if problems:
            bad += 1
            check(False, f"kill {k}: " + "; ".join(problems))

    # A clean run of two writes: starts by removing what the last kill left.
    proc, cleaned, ready, _ = start_loop(args.helper, file, writes=2)
    code = proc.wait(timeout=60)
    check(ready and code == 0 and cleaned == left_before,
          f"a clean run removes the last kill's {left_before} temporary file(s) (removed {cleaned})")
    check(temporaries(args.work) == [], f"no temporary file remains ({temporaries(args.work)})")

    check(bad == 0, f"{kills} SIGKILLs: session.json was a complete session A or B every time "
                    f"({bad} bad)")
    check(seen["A"] > 0 and seen["B"] > 0,
          f"the kills landed at different moments: A {seen['A']} times, B {seen['B']} times")
    print(f"summary: seed={seed} kills={kills} complete_A={seen['A']} complete_B={seen['B']} "
          f"killed_mid_write={mid_write} seconds={time.monotonic() - started:.1f}", flush=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
