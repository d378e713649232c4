#!/usr/bin/env python3
"""Get a model in the running app, driven as a learner would (run inside
xvfb-run; see CMakeLists.txt). A local stand-in for the Hugging Face Hub
(app/tests/hub_server.py) serves a tiny GPT-2 as openai-community/gpt2.

  1. File > Get a model from the Hub... opens the window; the first row's
     Get starts a pull whose weights arrive one byte every 0.1 s; Cancel
     stops it within two seconds, leaving a partial blob and no snapshot.
     While it ran, the UI thread's frames stayed under 16.7 ms (median).
  2. Get again (the server at full speed now) resumes with a Range request,
     ends with the cache laid out as huggingface_hub lays it out, and the
     row's button becomes Open, which opens the model (the status file
     names the snapshot, the source is the model, its tokens are shown).

Standard library only (xvfb_util.py, hub_server.py).
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests"))
from xvfb_util import (act, check, finish, fresh_work, launch, quit_app, read_status,  # noqa: E402
                       wait_for_window, wait_until, write_tiny_gpt2, xdotool)
from hub_server import COMMIT, HubServer, Repo  # noqa: E402

REPO = "openai-community/gpt2"
# Where the window's controls are at 1600 x 1000 (the window opens centred).
FILE_MENU = ("22", "10")
GET_ITEM = ("115", "89")      # File > Get a model from the Hub... (under Open model...)
FIRST_ROW = ("1066", "250")   # the first model's Get (or Open, once it is in the cache)
CANCEL = ("1100", "737")      # beside the total progress bar


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    env, _ = fresh_work(args.work)
    model = os.path.join(args.work, "tiny-gpt2")
    write_tiny_gpt2(model)
    # A short path: the window names the cache in a line that must not wrap
    # (the clicks below go to fixed places).
    cache = tempfile.mkdtemp(prefix="hub-")
    server = HubServer()
    files = {}
    for name in sorted(os.listdir(model)):
        with open(os.path.join(model, name), "rb") as f:
            files[name] = f.read()  # bytes: the server can slow them down
    server.repos[REPO] = Repo(files)
    server.faults = {"slow": "model.safetensors"}
    env["HF_ENDPOINT"] = f"http://127.0.0.1:{server.server_address[1]}"
    env["HF_HUB_CACHE"] = cache
    env.pop("HF_HUB_OFFLINE", None)
    env.pop("HF_TOKEN", None)
    status = os.path.join(args.work, "status.txt")
    env["ATTNSCOPE_STATUS_FILE"] = status
    proc = launch(args.app, ["--no-session", "--size", "1600x1000"], env, args.work)
    wid = wait_for_window(env)
    check(wid is not None, "the window opens")
    if wid is None:
        proc.kill()
        server.stop()
        return finish()
    xdotool(env, "windowfocus", "--sync", wid)
    # The first frames settle the layout: clicks wait for them.
    wait_until(lambda: int(read_status(status).get("frame", "0") or 0) >= 3
               and read_status(status).get("busy") == "0", 60)

    def click(at):
        return act(env, status, "mousemove", "--window", wid, at[0], at[1], "click", "1")

    def pull_is(state):
        return read_status(status).get("pull") == state

    # 1. A slow pull, cancelled.
    # A click the app took before it had laid out its frame is tried again.
    for _ in range(3):
        click(FILE_MENU)
        click(GET_ITEM)
        if wait_until(lambda: read_status(status).get("get_window") == "1", 10):
            break
    check(read_status(status).get("get_window") == "1", "File > Get a model opens the window")
    for _ in range(3):
        click(FIRST_ROW)
        if wait_until(lambda: read_status(status).get("pull") != "idle", 5):
            break
    check(wait_until(lambda: pull_is("running"), 20),
          f"Get starts a pull (pull: {read_status(status).get('pull')})")
    ui_ms = []
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        value = read_status(status).get("ui_ms")
        if value:
            ui_ms.append(float(value))
        time.sleep(0.1)
    median = statistics.median(ui_ms) if ui_ms else -1
    check(0 <= median < 16.7, f"the UI thread's frames stay under 16.7 ms while it pulls "
                              f"(median {median:.2f} ms of {len(ui_ms)} reads)")
    xdotool(env, "mousemove", "--window", wid, CANCEL[0], CANCEL[1], "click", "1")
    started = time.monotonic()
    stopped = wait_until(lambda: pull_is("cancelled"), 10, step=0.05)
    took = time.monotonic() - started
    check(stopped and took < 2.0, f"Cancel stops the pull within two seconds ({took:.2f} s)")
    storage = os.path.join(cache, "models--openai-community--gpt2")
    blobs = os.listdir(os.path.join(storage, "blobs")) if os.path.isdir(storage) else []
    check(any(b.endswith(".incomplete") for b in blobs),
          f"the partial weights stay as blobs/<etag>.incomplete ({blobs})")
    check(not os.path.exists(os.path.join(storage, "refs", "main")),
          "a cancelled pull leaves no ref that looks complete")

    # 2. Resumed at full speed, then opened.
    server.faults = {}
    server.requests.clear()
    click(FIRST_ROW)
    check(wait_until(lambda: pull_is("done"), 60), "Get again finishes the pull")
    ranged = [h for m, p, h in server.requests if p.startswith("/cdn/") and m == "GET"
              and any(k.lower() == "range" for k in h)]
    check(bool(ranged), "the second pull asked for the rest with a Range request")
    snapshot = os.path.join(storage, "snapshots", COMMIT)
    link = os.path.join(snapshot, "model.safetensors")
    check(os.path.islink(link) and os.readlink(link).startswith("../../blobs/"),
          "snapshots/<commit>/model.safetensors is a relative link into blobs/")
    ref = os.path.join(storage, "refs", "main")
    check(os.path.exists(ref) and open(ref).read().strip() == COMMIT, "refs/main names the commit")
    click(FIRST_ROW)  # now the row's Open
    opened = wait_until(lambda: read_status(status).get("model", "").endswith(COMMIT)
                        and read_status(status).get("source") == "model"
                        and int(read_status(status).get("shown_tokens", "0") or 0) > 0, 60)
    check(opened, f"Open shows the pulled model ({read_status(status).get('model')})")
    code, _, err = quit_app(env, proc, wid)
    check(code == 0, f"Ctrl+Q exits 0 ({err.strip()[-200:]})")
    server.stop()
    shutil.rmtree(cache, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
