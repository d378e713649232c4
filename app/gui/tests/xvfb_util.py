"""Shared scaffolding of the app's Python tests (xvfb_test.py, export_xvfb_test.py,
monkey_test.py, session_kill_test.py): checks, a fresh work folder with its own
config and pictures folders, PNG reading, X11 waits and grabs, launching the app
and stopping it. Standard library only (plus xdotool for the X11 helpers).

Waits are for conditions with generous timeouts, never fixed sleeps that a
loaded machine (ctest -j2) can outrun.
"""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import time
import zlib

FAILURES = []


def check(ok, what):
    """Prints ok/FAIL and remembers failures; returns `ok`."""
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)
    return ok


def finish():
    """The test's exit status: 1 when any check failed."""
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", file=sys.stderr)
        return 1
    return 0


def fresh_work(work, pictures=False):
    """Empties `work` and returns (env, cfg): the environment with
    XDG_CONFIG_HOME (and XDG_PICTURES_DIR, HOME when asked) inside it, and the
    app's config folder ($XDG_CONFIG_HOME/attnscope, not created)."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    xdg = os.path.join(work, "config")
    # The app's own file dialogs: the tests drive them with xdotool, and a
    # zenity window (when one is installed) would take their keys.
    env = dict(os.environ, XDG_CONFIG_HOME=xdg, ATTNSCOPE_FILE_DIALOG="builtin")
    if pictures:
        env["XDG_PICTURES_DIR"] = os.path.join(work, "pictures")
        env["HOME"] = os.path.join(work, "home")
        os.makedirs(env["HOME"])
    return env, os.path.join(xdg, "attnscope")


# LeakSanitizer's own failure, not the app's: its exit-time tracer (a
# ptrace'd helper that stops every thread to scan for leaks) was seen to die
# with SIGSEGV once in a sanitized clean-clone run, after the app had done
# everything right. A run that ends so is run once more.
LSAN_TRACER_DIED = "LeakSanitizer has encountered a fatal error"


def run(cmd, env, timeout=120):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0 and LSAN_TRACER_DIED in r.stderr:
        print(f"note: LeakSanitizer's tracer died; running once more: {' '.join(cmd)}", flush=True)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    return r


# ---------------------------------------------------------------------------
# PNG

def png_chunks(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos = 8
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        yield data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n


def png_info(path):
    """(width, height, number of distinct byte values in the pixel data): a quick blank test."""
    w = h = 0
    idat = b""
    for kind, body in png_chunks(path):
        if kind == b"IHDR":
            w, h = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    return w, h, len(set(raw[::7]))


def read_png(path):
    """(width, height, list of RGB tuples of every pixel) for 8-bit RGB/RGBA PNGs."""
    idat, w, h, ctype = b"", 0, 0, 0
    for kind, body in png_chunks(path):
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


# ---------------------------------------------------------------------------
# Waiting, X11

def wait_until(condition, timeout, step=0.25):
    """Polls condition() until it holds or `timeout` seconds pass; its last value."""
    deadline = time.monotonic() + timeout
    while True:
        ok = condition()
        if ok or time.monotonic() > deadline:
            return ok
        time.sleep(step)


def read_status(path):
    """The app's last $ATTNSCOPE_STATUS_FILE as a dict (empty before the first frame)."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    return dict((line.split(" ", 1) + [""])[:2] for line in lines)


def status_number(status, key):
    try:
        return int(status.get(key, ""))
    except ValueError:
        return -1


def act(env, status_path, *xdotool_args, timeout=60):
    """One xdotool command (an input), then waits until the app drew two
    frames after the one that took the input in (the status file's
    `inputs` grew) and is not busy: its answer is on screen, a popup it
    opened is drawn, a field it clicked has the focus. Fixed sleeps are not
    enough for a slow app (a sanitized build beside other tests): the keys
    typed next reach a field that has no focus yet. False on timeout."""
    before = status_number(read_status(status_path), "inputs")
    xdotool(env, *xdotool_args)
    seen = {}

    def answered():
        s = read_status(status_path)
        frame = status_number(s, "frame")
        now = time.monotonic()
        if frame != seen.get("last"):
            seen["last"], seen["since"] = frame, now
        if "frame" not in seen and status_number(s, "inputs") > before:
            seen["frame"] = frame
        if "frame" not in seen or s.get("busy") != "0":
            return False
        # Two frames after the one seen first, or (when the app drew its
        # settling frames faster than this polls, and went idle) no new frame
        # for a while: the app draws three frames after every input.
        return frame >= seen["frame"] + 2 or now - seen["since"] > 1.0
    return wait_until(answered, timeout, step=0.02)


def focus_field(env, wid, status_path, x, y, tries=3):
    """Clicks the text field at (x, y) in the window until the app says a
    text field has the keyboard (the status file's `typing`). On a loaded
    machine a click can reach the app before the frame that lays the field
    out there, and the keys typed next would go nowhere. False when no
    click took."""
    for attempt in range(tries):
        xdotool(env, "windowfocus", "--sync", wid)
        act(env, status_path, "mousemove", "--window", wid, str(x), str(y), "click", "1")
        if wait_until(lambda: read_status(status_path).get("typing") == "1", 5, step=0.05):
            if attempt:
                print(f"note: the field at ({x}, {y}) took {attempt + 1} clicks", flush=True)
            return True
    return False


def wait_for_window(env, timeout=60):
    """The X window id of the app's window (named "attnscope"), or None."""
    out = subprocess.run(["timeout", str(timeout), "xdotool", "search", "--sync", "--name", "^attnscope$"],
                         env=env, capture_output=True, text=True)
    ids = out.stdout.split()
    return ids[0] if ids else None


def wait_window_gone(env, timeout=30):
    """Waits until no window named "attnscope" is left (a killed app's window
    outlives the process until the X server has seen its connection close)."""
    def gone():
        r = subprocess.run(["xdotool", "search", "--name", "^attnscope$"], env=env,
                           capture_output=True, text=True)
        return not r.stdout.split()
    return wait_until(gone, timeout)


def quit_app(env, proc, wid, tries=3, wait_s=20):
    """Ctrl+Q to the app's window until the process ends (a key sent while the
    window is still taking focus can be lost); (returncode, stdout, stderr)."""
    for _ in range(tries):
        xdotool(env, "windowfocus", "--sync", wid)
        xdotool(env, "key", "ctrl+q")
        try:
            out, err = proc.communicate(timeout=wait_s)
            return proc.returncode, out, err
        except subprocess.TimeoutExpired:
            continue
    return stop(proc, timeout=1)


def xdotool(env, *args, timeout=30):
    return subprocess.run(["xdotool", *args], env=env, capture_output=True, text=True, timeout=timeout)


def window_geometry(env, wid):
    """(width, height) of the window as X sees it, or None."""
    r = xdotool(env, "getwindowgeometry", wid)
    for line in r.stdout.splitlines():
        line = line.strip()
        if line.startswith("Geometry:"):
            w, h = line.split()[1].split("x")
            return int(w), int(h)
    return None


def grab_bytes(env, grab, path):
    """The screen as PNG bytes (equal bytes: an identical screen), or None without a grabber."""
    if not grab:
        return None
    subprocess.run([grab, path], env=env, check=False)
    try:
        return open(path, "rb").read()
    except OSError:
        return None


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


def idle_cpu(pid, seconds=3.0, tries=3):
    """The least CPU share (0..1) the process used over up to `tries` windows of
    `seconds`, so that one stray wake-up on a loaded machine does not decide it."""
    used = 1.0
    for _ in range(tries):
        t0 = cpu_ticks(pid)
        time.sleep(seconds)
        used = min(used, (cpu_ticks(pid) - t0) / os.sysconf("SC_CLK_TCK") / seconds)
        if used < 0.05:
            break
    return used


def launch(app, args, env, cwd):
    """Starts the app (a path relative to this process's folder is fine) in `cwd`."""
    return subprocess.Popen([os.path.abspath(app), *args], env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def stop(proc, timeout=60):
    """Waits for the process to end (killing it after `timeout`); (returncode, stdout, stderr)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return proc.returncode, out, err


def new_files(folder, before=()):
    """The names in `folder` (missing: none) that are not in `before`, sorted."""
    names = os.listdir(folder) if os.path.isdir(folder) else []
    return sorted(n for n in names if n not in before)


def wait_new_png(folder, before, timeout_s):
    """Waits until a new .png is in `folder` and returns every new name. The
    app writes a temporary file and renames it: seeing only that .tmp means
    the write is still going, not that it went wrong."""
    wait_until(lambda: any(n.endswith(".png") for n in new_files(folder, before)), timeout_s)
    return new_files(folder, before)


def colour_pixels(env, grab, path, rgb, tolerance=2):
    """How many pixels of the screen are within `tolerance` of `rgb` (a grab
    into a .ppm file); None without a grabber."""
    if not grab:
        return None
    subprocess.run([grab, path], env=env, check=False)
    data = open(path, "rb").read()
    # "P6\n<w> <h>\n255\n" then RGB triples.
    header_end = 0
    for _ in range(3):
        header_end = data.index(b"\n", header_end) + 1
    px = data[header_end:]
    r0, g0, b0 = rgb
    return sum(1 for r, g, b in zip(px[0::3], px[1::3], px[2::3])
               if abs(r - r0) <= tolerance and abs(g - g0) <= tolerance and abs(b - b0) <= tolerance)


class WindowManager:
    """x11_wm run, for as long as the `with` block lasts (minimise, restore)."""

    def __init__(self, wm, env):
        self.proc = subprocess.Popen([wm, "run"], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.ready = self.proc.stdout.readline().strip() == "ready"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.communicate()
        return False


def window_state(env, wid):
    """"Normal", "Iconic" or None: the WM_STATE property as a window manager set it."""
    r = subprocess.run(["xprop", "-id", wid, "WM_STATE"], env=env, capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if "window state:" in line:
            return line.split(":", 1)[1].strip()
    return None


def visible(env, wid):
    """True when the window is mapped (xdotool's --onlyvisible search lists it)."""
    r = xdotool(env, "search", "--onlyvisible", "--name", "^attnscope$")
    return wid in r.stdout.split()


# A tiny GPT-2 for the tests that open a model (model_xvfb_test.py, monkey_test.py).
LAYERS, HEADS, EMBD, POSITIONS, VOCAB = 2, 2, 8, 32, 50257


def write_tiny_gpt2(folder, seed=3):
    """A Hugging Face GPT-2 folder with random weights: config.json and
    model.safetensors (an 8-byte header length, the JSON header, raw F32)."""
    os.makedirs(folder, exist_ok=True)
    config = {"model_type": "gpt2", "n_layer": LAYERS, "n_head": HEADS, "n_embd": EMBD,
              "n_positions": POSITIONS, "vocab_size": VOCAB, "layer_norm_epsilon": 1e-5,
              "activation_function": "gelu_new"}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    rng = random.Random(seed)
    shapes = {"wte.weight": (VOCAB, EMBD), "wpe.weight": (POSITIONS, EMBD),
              "ln_f.weight": (EMBD,), "ln_f.bias": (EMBD,)}
    for layer in range(LAYERS):
        p = f"h.{layer}."
        shapes.update({p + "ln_1.weight": (EMBD,), p + "ln_1.bias": (EMBD,),
                       p + "attn.c_attn.weight": (EMBD, 3 * EMBD), p + "attn.c_attn.bias": (3 * EMBD,),
                       p + "attn.c_proj.weight": (EMBD, EMBD), p + "attn.c_proj.bias": (EMBD,),
                       p + "ln_2.weight": (EMBD,), p + "ln_2.bias": (EMBD,),
                       p + "mlp.c_fc.weight": (EMBD, 4 * EMBD), p + "mlp.c_fc.bias": (4 * EMBD,),
                       p + "mlp.c_proj.weight": (4 * EMBD, EMBD), p + "mlp.c_proj.bias": (EMBD,)})
    header, blobs, offset = {}, [], 0
    for name, shape in shapes.items():
        n = 1
        for s in shape:
            n *= s
        if name.endswith(".weight") and len(shape) == 1:
            values = [1.0] * n  # LayerNorm gains
        elif name.endswith(".bias"):
            values = [0.0] * n
        else:
            values = [rng.gauss(0.0, 0.5) for _ in range(n)]
        blob = struct.pack(f"<{n}f", *values)
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
