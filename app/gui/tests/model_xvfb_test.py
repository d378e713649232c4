#!/usr/bin/env python3
"""A trained model in the running app, driven as a learner would (run inside
xvfb-run; see CMakeLists.txt).

  1. A tiny GPT-2 folder (config.json + model.safetensors, written here
     with the standard library) opens with --model; a folder that is not a
     model gives exit 2 and the engine's message.
  2. The app is driven with xdotool: Source > Trained model and the
     folder's path typed into the Checkpoint field open it; the text box is typed into, a thumbnail
     of the model view is clicked (the one-head stepper opens), PgDn moves
     to the next layer, G appends the most likely token; the screen changes
     after each, and Ctrl+Q exits 0.
     Before the thumbnail click, Export view > PNG 1x writes the model view
     into the export folder.
  3. The saved session holds the typed text (grown by one token), the
     layer, the view and the model's path, never its weights.

Standard library only (xvfb_util.py).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xvfb_util import (act, check, finish, focus_field, fresh_work, grab_bytes, launch,  # noqa: E402
                       new_files,
                       png_info, quit_app, run, wait_for_window, wait_screen_stable, wait_until,
                       write_tiny_gpt2, xdotool)

def session(cfg):
    try:
        with open(os.path.join(cfg, "session.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True)
    ap.add_argument("--grab", default="")
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    env, cfg = fresh_work(args.work, pictures=True)
    exports = os.path.join(env["XDG_PICTURES_DIR"], "attnscope")
    model = os.path.join(args.work, "tiny-gpt2")
    write_tiny_gpt2(model)

    # 1. A folder that is not a model: the engine's message, exit 2.
    empty = os.path.join(args.work, "not-a-model")
    os.makedirs(empty)
    r = run([args.app, "--no-session", "--model", empty, "--screenshot",
             os.path.join(args.work, "no.png")], env)
    check(r.returncode == 2 and "error: --model" in r.stderr and "not-a-model" in r.stderr,
          f"a folder without a model exits 2 naming it ({r.stderr.strip()[:160]})")
    shot = os.path.join(args.work, "model.png")
    r = run([args.app, "--no-session", "--model", model, "--text", "Hello there", "--screenshot", shot],
            env)
    check(r.returncode == 0 and os.path.getsize(shot) > 10000, "--model --screenshot writes the window")

    # 2. The running app. It writes what each frame shows to the status file:
    # every input waits for the app's answer on screen before the next one.
    status = os.path.join(args.work, "status.txt")
    env["ATTNSCOPE_STATUS_FILE"] = status
    proc = launch(args.app, ["--size", "1600x1000"], env, args.work)
    wid = wait_for_window(env)
    check(wid is not None, "the window opens")
    if wid is None:
        proc.kill()
        return finish()
    grab_path = os.path.join(args.work, "grab.png")

    def stable_screen():
        """The screen once it stopped changing (None without a grabber)."""
        wait_screen_stable(env, args.grab, grab_path)
        return grab_bytes(env, args.grab, grab_path)

    xdotool(env, "windowfocus", "--sync", wid)
    stable_screen()
    # Source > Trained model (the combo atop the left column, its third
    # item), then the path into the Checkpoint field and Return.
    act(env, status, "mousemove", "--window", wid, "230", "57", "click", "1")
    act(env, status, "mousemove", "--window", wid, "150", "135", "click", "1")
    check(focus_field(env, wid, status, 180, 125), "a click puts the cursor in the Checkpoint field")
    xdotool(env, "type", "--delay", "5", model)
    act(env, status, "key", "Return")
    before = stable_screen()

    # The text box is the left column's first field under "Text" (about y
    # 230); Ctrl+End puts the cursor at the end of the text (End alone: at
    # the end of the visual line, and the box wraps its lines). Ctrl stays
    # down around End, as in model_typing_xvfb_test.py's empty_text.
    typed = " the cat sat on the mat. The cat"
    check(focus_field(env, wid, status, 180, 220), "a click puts the cursor in the text box")
    xdotool(env, "keydown", "ctrl", "key", "End", "keyup", "ctrl")
    act(env, status, "type", "--delay", "20", typed)
    after_typing = stable_screen()
    check(before is None or after_typing != before, "typing changes the screen")

    # Leave the text box (click an empty spot of the centre's header), then
    # Export view > PNG 1x (the button right of the view buttons, the first
    # item of its menu).
    act(env, status, "mousemove", "--window", wid, "1150", "47", "click", "1")
    act(env, status, "mousemove", "--window", wid, "760", "47", "click", "1")
    act(env, status, "mousemove", "--window", wid, "797", "66")
    xdotool(env, "click", "1")
    made = wait_until(lambda: [n for n in new_files(exports) if n.startswith("model_view_")], 20)
    check(bool(made), f"Export view > PNG 1x writes model_view_*.png ({made})")
    if made:
        w, h, distinct = png_info(os.path.join(exports, made[0]))
        check(w > 150 and h > 150 and distinct > 20, f"the model view PNG is a picture ({w}x{h})")
    # Then the model view's first thumbnail: layer 0, head 0.
    act(env, status, "mousemove", "--window", wid, "520", "160", "click", "1")
    act(env, status, "key", "Next")  # PgDn: the next layer
    act(env, status, "key", "g")  # the most likely next token, appended
    after_keys = stable_screen()
    check(after_keys is None or after_keys != after_typing, "the clicks and keys change the screen")

    code, _, err = quit_app(env, proc, wid)
    check(code == 0, f"Ctrl+Q exits 0 ({err.strip()[-200:]})")

    # 3. The session.
    doc = session(cfg)
    check(doc is not None, "a session was saved")
    source = (doc or {}).get("view", {}).get("source")
    check(source == "model", f"the session's source is the model ({source})")
    view = (doc or {}).get("view", {}).get("model", {})
    check(view.get("path") == model, "the session names the model's folder")
    text = view.get("text", "")
    check(typed in text and not text.endswith(typed) and text.index(typed) > 0,
          f"the typed text, grown by the appended token ({text!r})")
    check(view.get("view") == "head", f"the thumbnail click opened one head ({view.get('view')})")
    check(view.get("layer") == 1, f"PgDn moved to layer 1 ({view.get('layer')})")
    raw = open(os.path.join(cfg, "session.json")).read()
    check(len(raw) < 100000, f"the session holds no weights ({len(raw)} bytes)")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
