#!/usr/bin/env python3
"""hub_pull_test.py: `attnscope-cli model pull` against a stand-in Hub
(hub_server.py on 127.0.0.1; standard library only).

    python3 hub_pull_test.py path/to/attnscope-cli

Checks that a pull lays out the cache as huggingface_hub does (blobs named
by ETag, relative symlinks, refs/main, nothing from subfolders) and the
model then opens; that a dropped connection resumes with a Range request
and ends with the right sha256; that a corrupted body (an LFS file's
sha256, a small file's git blob sha1), 401, 403, 404, 500, a redirect loop,
a file list naming ../x, and Ctrl+C on a slow server each end with one
clear line and nothing in the cache that looks complete; that a blob whose
lock another pull holds (huggingface_hub's .locks/, flock) is waited for;
offline mode; that a second pull transfers nothing; that a pulled model
opens by its repo id (org/name[@revision]) and a folder of that name wins
over it; that a tree laid out by hand as the Python tools lay it out is
found and opened; HF_TOKEN; refused repo ids.
"""

import fcntl
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from cli_model_run_test import safetensors, tiny_gpt2  # noqa: E402
from hub_server import COMMIT, HubServer, Repo, git_blob_sha1  # noqa: E402

CLI = None
SERVER = None
REPO = "org/tiny"
TIMEOUT_S = 60

CONFIG = json.dumps({"model_type": "gpt2", "n_layer": 2, "n_head": 2, "n_embd": 8,
                     "n_positions": 16}).encode()
WEIGHTS = safetensors(tiny_gpt2(random.Random(7)))
FILES = {
    "config.json": CONFIG,
    "model.safetensors": WEIGHTS,
    "generation_config.json": b'{"bos_token_id": 50256}',
    "tokenizer_config.json": b'{"model_max_length": 16}',
    "pytorch_model.bin": b"never fetched",
    "flax_model.msgpack": b"never fetched",
    "onnx/model.onnx": b"never fetched",
    "sub/model.safetensors": b"never fetched: attnscope reads the top level",
    "README.md": b"# tiny",
}
WANTED = ["config.json", "generation_config.json", "model.safetensors", "tokenizer_config.json"]


def etag(name):
    data = FILES[name]
    return hashlib.sha256(data).hexdigest() if name.endswith(".safetensors") else \
        git_blob_sha1(data)


def env_for(tmp, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update({"HF_HUB_CACHE": os.path.join(tmp, "hub"), "HF_HOME": os.path.join(tmp, "home"),
                "XDG_DATA_HOME": os.path.join(tmp, "data")})
    env.update(extra)
    return env


def fresh(tmp, name):
    folder = os.path.join(tmp, name)
    os.makedirs(folder)
    SERVER.reset()
    return folder


def pull(tmp, *args, env=None, repo=REPO):
    return subprocess.run([CLI, "model", "pull", repo, "--endpoint", SERVER.endpoint, *args],
                          capture_output=True, text=True, timeout=TIMEOUT_S,
                          env=env or env_for(tmp))


def tree(root):
    """Every path under root: files with their bytes' sha256, links with their target."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(folder, n)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = "-> " + os.readlink(p)
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    out[rel] = hashlib.sha256(f.read()).hexdigest()[:16]
            else:
                out[rel] = "dir"
    return out


def expected_tree():
    """The tree huggingface_hub's snapshot_download writes for the wanted files."""
    t = {"blobs": "dir", "snapshots": "dir", "refs": "dir", f"snapshots/{COMMIT}": "dir",
         "refs/main": hashlib.sha256(COMMIT.encode()).hexdigest()[:16]}
    for n in WANTED:
        t[f"blobs/{etag(n)}"] = hashlib.sha256(FILES[n]).hexdigest()[:16]
        t[f"snapshots/{COMMIT}/{n}"] = f"-> ../../blobs/{etag(n)}"
    return t


def storage(tmp):
    return os.path.join(tmp, "hub", "models--org--tiny")


def expect_failure(p, needle):
    """Exit 2, nothing on stdout, the last line of stderr the one "error: " line."""
    lines = p.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert p.returncode == 2 and not p.stdout and errors == lines[-1:] and \
        needle in lines[-1], \
        f"want exit 2 and one error line with {needle!r}, got {p.returncode} " \
        f"{p.stdout!r} {p.stderr!r}"


def expect_nothing_complete(tmp):
    st = storage(tmp)
    assert not os.path.exists(os.path.join(st, "refs")), f"refs written: {tree(st)}"
    assert not os.path.exists(os.path.join(st, "snapshots")), f"snapshot made: {tree(st)}"


def cdn_ranges():
    """The Range headers of the requests for LFS bodies (the CDN's)."""
    return [r[2].get("Range") for r in SERVER.body_requests()
            if r[1].startswith("/cdn/") and r[2].get("Range")]


def trace(model, env=None, cwd=None):
    return subprocess.run([CLI, "model", "trace", model, "--text", "Hello, world!"],
                          capture_output=True, text=True, timeout=TIMEOUT_S, env=env, cwd=cwd)


def trace_ok(model, env=None):
    p = trace(model, env)
    assert p.returncode == 0, f"model trace {model}: {p.stderr}"
    out = json.loads(p.stdout)
    assert out["ids"] == [15496, 11, 995, 0]
    return out


# ---------------------------------------------------------------------------


def fresh_pull_lays_out_the_cache_as_huggingface_hub_and_opens(tmp):
    tmp = fresh(tmp, "fresh")
    p = pull(tmp)
    assert p.returncode == 0, p.stderr
    snapshot = p.stdout.strip()
    assert snapshot == os.path.join(storage(tmp), "snapshots", COMMIT), snapshot
    got, want = tree(storage(tmp)), expected_tree()
    assert got == want, f"tree differs:\n got {sorted(got.items())}\nwant {sorted(want.items())}"
    with open(os.path.join(storage(tmp), "refs", "main")) as f:
        assert f.read() == COMMIT
    fetched = [r[1] for r in SERVER.body_requests()]
    assert not any(n in "".join(fetched) for n in (".bin", ".msgpack", ".onnx", "README")), fetched
    asked = [r[1] for r in SERVER.requests]
    assert not any("/sub/" in a or "/onnx/" in a for a in asked), asked  # the top level only
    for n in WANTED:  # piped: one plain line per file
        assert f"{n}: fetched" in p.stderr, p.stderr
    trace_ok(snapshot)
    listed = subprocess.run([CLI, "model", "list"], capture_output=True, text=True,
                            env=env_for(tmp), timeout=TIMEOUT_S)
    models = json.loads(listed.stdout)["models"]
    assert [(m["repo"], m["revision"], m["commit"], m["path"]) for m in models] == \
        [(REPO, "main", COMMIT, snapshot)], models
    assert models[0]["bytes"] == sum(len(FILES[n]) for n in WANTED), models


def second_pull_transfers_nothing(tmp):
    tmp = fresh(tmp, "second")
    assert pull(tmp).returncode == 0
    before = tree(storage(tmp))
    SERVER.reset()
    p = pull(tmp)
    assert p.returncode == 0, p.stderr
    assert SERVER.body_requests() == [], SERVER.body_requests()
    heads = [r for r in SERVER.requests if r[0] == "HEAD"]
    assert heads == [], heads
    assert tree(storage(tmp)) == before


def dropped_connection_resumes_on_the_next_pull(tmp):
    tmp = fresh(tmp, "drop")
    SERVER.faults["drop"] = {"model.safetensors": 200_000}
    p = pull(tmp)
    expect_failure(p, "pull again to resume")
    expect_nothing_complete(tmp)
    partial = os.path.join(storage(tmp), "blobs", etag("model.safetensors") + ".incomplete")
    have = os.path.getsize(partial)
    assert 0 < have < len(WEIGHTS), have
    SERVER.reset()
    p = pull(tmp)
    assert p.returncode == 0, p.stderr
    ranges = cdn_ranges()
    assert ranges == [f"bytes={have}-"], ranges
    blob = os.path.join(storage(tmp), "blobs", etag("model.safetensors"))
    with open(blob, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == etag("model.safetensors")
    assert not os.path.exists(partial)
    assert tree(storage(tmp)) == expected_tree()


def a_drop_that_moved_is_resumed_within_the_pull(tmp):
    tmp = fresh(tmp, "drop-once")
    SERVER.faults["drop"] = {"model.safetensors": 300_000, "times": 1}
    p = pull(tmp)
    assert p.returncode == 0, p.stderr
    ranges = cdn_ranges()
    assert ranges == ["bytes=300000-"], ranges
    assert tree(storage(tmp)) == expected_tree()


def corrupted_body_is_refused_and_leaves_no_blob(tmp):
    tmp = fresh(tmp, "corrupt")
    SERVER.faults["corrupt"] = "model.safetensors"
    expect_failure(pull(tmp), "sha256")
    blobs = os.listdir(os.path.join(storage(tmp), "blobs"))
    assert not any(b.startswith(etag("model.safetensors")) for b in blobs), blobs
    expect_nothing_complete(tmp)


def a_corrupted_small_file_is_refused_by_its_git_blob_sha1(tmp):
    tmp = fresh(tmp, "corrupt-small")
    SERVER.faults["corrupt"] = "config.json"  # same length: only the hash can tell
    expect_failure(pull(tmp), "git blob sha1")
    blobs = os.listdir(os.path.join(storage(tmp), "blobs"))
    assert not any(b.startswith(etag("config.json")) for b in blobs), blobs
    expect_nothing_complete(tmp)


def errors_are_one_clear_line(tmp):
    cases = [
        ((401, "resolve", None), "accept the licence at https://huggingface.co/org/tiny and set HF_TOKEN"),
        ((403, "resolve", "GatedRepo"), "accept the licence at https://huggingface.co/org/tiny and set HF_TOKEN"),
        ((404, "api", "RepoNotFound"), "no such model"),
        ((404, "api", "RevisionNotFound"), "has no revision 'main'"),
        ((500, "resolve", None), "try again later"),
        ((500, "api", None), "try again later"),
    ]
    for i, (status, needle) in enumerate(cases):
        case = fresh(tmp, f"status-{i}")
        SERVER.faults["status"] = status
        expect_failure(pull(case), needle)
        expect_nothing_complete(case)
    case = fresh(tmp, "loop")
    SERVER.faults["loop"] = "model.safetensors"
    expect_failure(pull(case), "redirect loop")
    expect_nothing_complete(case)
    case = fresh(tmp, "evil-names")
    SERVER.faults["names"] = ["../x"]
    expect_failure(pull(case), "'../x'")
    assert not os.path.exists(os.path.join(case, "x")) and not os.path.exists(storage(case))
    case = fresh(tmp, "unknown")
    expect_failure(pull(case, repo="org/nothing"), "no such model")
    expect_failure(pull(case, repo="../etc"), "not a Hub model id")
    expect_failure(pull(case, repo="org/tiny@../x"), "revision")
    SERVER.repos["org/bin-only"] = Repo({"config.json": CONFIG, "pytorch_model.bin": b"x"})
    expect_failure(pull(case, repo="org/bin-only"), "no .safetensors weights")


def ctrl_c_on_a_slow_server_stops_within_a_second_and_resumes(tmp):
    tmp = fresh(tmp, "slow")
    SERVER.faults["slow"] = "model.safetensors"
    proc = subprocess.Popen([CLI, "model", "pull", REPO, "--endpoint", SERVER.endpoint],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env_for(tmp))
    partial = os.path.join(storage(tmp), "blobs", etag("model.safetensors") + ".incomplete")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (os.path.exists(partial) and
                                               os.path.getsize(partial) >= 3):
        time.sleep(0.05)
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    took = time.monotonic() - start
    assert proc.returncode == 130 and "pull again to resume" in err, (proc.returncode, err)
    assert took < 1.5, f"Ctrl+C took {took:.2f} s"
    have = os.path.getsize(partial)
    assert have >= 3, have
    expect_nothing_complete(tmp)
    SERVER.reset()
    p = pull(tmp)
    assert p.returncode == 0, p.stderr
    ranges = cdn_ranges()
    assert ranges == [f"bytes={have}-"], ranges
    assert tree(storage(tmp)) == expected_tree()


def a_blob_locked_by_another_pull_is_waited_for(tmp):
    """The lock huggingface_hub takes (filelock: flock on .locks/.../ETAG.lock),
    held here as a Python download would hold it: the pull waits, touching
    no partial file; Ctrl+C ends the wait within a second; once it is
    released a pull goes on."""
    tmp = fresh(tmp, "locked")
    folder = os.path.join(tmp, "hub", ".locks", "models--org--tiny")
    os.makedirs(folder)
    partial = os.path.join(storage(tmp), "blobs", etag("model.safetensors") + ".incomplete")
    with open(os.path.join(folder, etag("model.safetensors") + ".lock"), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)

        def start():
            return subprocess.Popen([CLI, "model", "pull", REPO, "--endpoint", SERVER.endpoint],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env=env_for(tmp))

        def wait_for_the_lock(proc):
            config = os.path.join(storage(tmp), "blobs", etag("config.json"))
            deadline = time.monotonic() + 10  # config.json comes first, unlocked
            while time.monotonic() < deadline and not os.path.exists(config):
                time.sleep(0.02)
            time.sleep(0.3)
            assert proc.poll() is None, proc.communicate()
            assert not os.path.exists(partial), "wrote the blob another pull holds"

        proc = start()
        wait_for_the_lock(proc)
        start_s = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
        assert proc.returncode == 130 and time.monotonic() - start_s < 1.5, (proc.returncode, err)
        assert "model.safetensors: waiting for another pull" in err, err
        proc = start()
        wait_for_the_lock(proc)
        fcntl.flock(held, fcntl.LOCK_UN)
        out, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 0, err
    assert tree(storage(tmp)) == expected_tree()


def offline_mode_uses_only_the_cache(tmp):
    tmp = fresh(tmp, "offline")
    expect_failure(pull(tmp, env=env_for(tmp, HF_HUB_OFFLINE="1")), "HF_HUB_OFFLINE")
    assert SERVER.requests == [], SERVER.requests
    assert pull(tmp).returncode == 0
    SERVER.reset()
    p = pull(tmp, env=env_for(tmp, HF_HUB_OFFLINE="1"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == os.path.join(storage(tmp), "snapshots", COMMIT)
    assert SERVER.requests == [], SERVER.requests


def token_is_sent_as_bearer(tmp):
    tmp = fresh(tmp, "token")
    assert pull(tmp, env=env_for(tmp, HF_TOKEN="hf_abc")).returncode == 0
    auth = {r[2].get("Authorization") for r in SERVER.requests if r[1].startswith("/api/")}
    assert auth == {"Bearer hf_abc"}, auth
    case = fresh(tmp, "token-file")
    os.makedirs(os.path.join(case, "home"))
    with open(os.path.join(case, "home", "token"), "w") as f:
        f.write("hf_from_file\n")
    assert pull(case).returncode == 0
    auth = {r[2].get("Authorization") for r in SERVER.requests if r[1].startswith("/api/")}
    assert auth == {"Bearer hf_from_file"}, auth


def a_pulled_model_opens_by_its_repo_id_and_a_path_wins(tmp):
    tmp = fresh(tmp, "by-id")
    env = env_for(tmp)
    expect_failure(trace(REPO, env), "attnscope-cli model pull org/tiny")
    assert pull(tmp).returncode == 0
    for ref in (REPO, REPO + "@main", f"{REPO}@{COMMIT}"):
        assert trace_ok(ref, env)["model"] == ref
    expect_failure(trace(REPO + "@v2", env), "attnscope-cli model pull org/tiny@v2")
    info = subprocess.run([CLI, "model", "info", REPO], capture_output=True, text=True,
                          env=env, timeout=TIMEOUT_S)
    assert info.returncode == 0 and json.loads(info.stdout)["config"]["n_layer"] == 2, info.stderr
    os.makedirs(os.path.join(tmp, "org", "tiny"))  # a folder of that name, without a model
    expect_failure(trace(REPO, env, cwd=tmp), "no model.safetensors")


def a_tree_laid_out_by_the_python_tools_is_found_and_opened(tmp):
    tmp = fresh(tmp, "by-hand")
    st = os.path.join(tmp, "hub", "models--someone--gpt2-tiny")
    commit = "fedcba9876543210fedcba9876543210fedcba98"
    snap = os.path.join(st, "snapshots", commit)
    os.makedirs(os.path.join(st, "blobs"))
    os.makedirs(snap)
    os.makedirs(os.path.join(st, "refs"))
    for n in ("config.json", "model.safetensors"):
        with open(os.path.join(st, "blobs", etag(n)), "wb") as f:
            f.write(FILES[n])
        os.symlink(f"../../blobs/{etag(n)}", os.path.join(snap, n))
    with open(os.path.join(st, "refs", "main"), "w") as f:
        f.write(commit)
    listed = subprocess.run([CLI, "model", "list"], capture_output=True, text=True,
                            env=env_for(tmp), timeout=TIMEOUT_S)
    models = json.loads(listed.stdout)["models"]
    assert [(m["repo"], m["revision"], m["commit"], m["path"]) for m in models] == \
        [("someone/gpt2-tiny", "main", commit, snap)], models
    trace_ok(snap)
    p = pull(tmp, env=env_for(tmp, HF_HUB_OFFLINE="1"), repo="someone/gpt2-tiny")
    assert p.returncode == 0 and p.stdout.strip() == snap, p.stderr


TESTS = [
    fresh_pull_lays_out_the_cache_as_huggingface_hub_and_opens,
    second_pull_transfers_nothing,
    dropped_connection_resumes_on_the_next_pull,
    a_drop_that_moved_is_resumed_within_the_pull,
    corrupted_body_is_refused_and_leaves_no_blob,
    a_corrupted_small_file_is_refused_by_its_git_blob_sha1,
    errors_are_one_clear_line,
    ctrl_c_on_a_slow_server_stops_within_a_second_and_resumes,
    a_blob_locked_by_another_pull_is_waited_for,
    offline_mode_uses_only_the_cache,
    token_is_sent_as_bearer,
    a_pulled_model_opens_by_its_repo_id_and_a_path_wins,
    a_tree_laid_out_by_the_python_tools_is_found_and_opened,
]


def main():
    global CLI, SERVER
    CLI = os.path.abspath(harness.cli_argument("hub_pull_test.py"))
    SERVER = HubServer()
    SERVER.repos[REPO] = Repo(FILES)
    try:
        start = time.monotonic()
        for t in TESTS:
            name = t.__name__

            def timed(tmp, t=t, name=name):
                t0 = time.monotonic()
                try:
                    t(tmp)
                finally:
                    if os.environ.get("HUB_TEST_TIMES"):
                        print(f"{time.monotonic() - t0:6.2f} s {name}")
            TESTS[TESTS.index(t)] = (name, timed)
        status = harness.run_main("hub_pull", TESTS, tmp_prefix="attnscope-hub-", show_passes=True)
        print(f"hub_pull: {time.monotonic() - start:.1f} s")
        return status
    finally:
        SERVER.stop()


if __name__ == "__main__":
    sys.exit(main())
