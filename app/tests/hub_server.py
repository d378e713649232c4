#!/usr/bin/env python3
"""hub_server.py: a stand-in for the Hugging Face Hub on 127.0.0.1, for tests.

    python3 hub_server.py FOLDER [--repo org/name]   # serves FOLDER's files; prints the port

Imported by hub_pull_test.py and scripts/hub_throughput.py, which start a
HubServer in a thread, add repos and choose faults per test. It answers as
the Hub does (huggingface_hub's file_download.py reads these):

  GET  /api/models/{repo}/revision/{rev}  {"id", "sha": commit, "siblings": [{"rfilename"}]}
  HEAD/GET /{repo}/resolve/{rev}/{file}
       a small file: 200, ETag "<git blob sha1>", X-Repo-Commit, the body
       an LFS file (*.safetensors, or any in `lfs`): 302 to /cdn/<sha256>
       (absolute URL, as the CDN is another host), X-Linked-Etag "<sha256>",
       X-Linked-Size, X-Repo-Commit, and an ETag of the redirect itself
  GET  /cdn/{sha256}  the bytes; "Range: bytes=N-" gives 206 + Content-Range

Faults (HubServer.faults, a dict; per test):
  "status": (code, "api" | "resolve", X-Error-Code or None)
  "drop": {file: n, "times": k}  send n bytes of the body, then close (k times; default always)
  "corrupt": file                one byte of the body changed
  "slow": file                   the body one byte every 0.1 s
  "loop": file                   its CDN URL redirects in a circle
  "names": [extra sibling names] e.g. "../x"
Every request is recorded in HubServer.requests as (method, path, headers).
Standard library only.
"""

import argparse
import hashlib
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    """files: name -> bytes or a path on disk. LFS: *.safetensors and `lfs`."""

    def __init__(self, files, commit=COMMIT, lfs=()):
        self.files, self.commit, self.lfs_names = dict(files), commit, set(lfs)
        self._sha = {}

    def is_lfs(self, name):
        return name.endswith(".safetensors") or name in self.lfs_names

    def size(self, name):
        body = self.files[name]
        return len(body) if isinstance(body, bytes) else os.path.getsize(body)

    def sha256(self, name):
        if name not in self._sha:
            body = self.files[name]
            h = hashlib.sha256()
            if isinstance(body, bytes):
                h.update(body)
            else:
                with open(body, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
            self._sha[name] = h.hexdigest()
        return self._sha[name]

    def etag(self, name):
        if self.is_lfs(name):
            return self.sha256(name)
        body = self.files[name]
        if not isinstance(body, bytes):
            with open(body, "rb") as f:
                body = f.read()
        return git_blob_sha1(body)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # http.server writes the headers and the body apart; with Nagle's
    # algorithm on, a small body then waits for the client's delayed ACK
    # (40 ms on Linux), which no real Hub or CDN adds to a small file.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.route(head=True)

    def do_GET(self):
        self.route(head=False)

    # -- routing ------------------------------------------------------------

    def route(self, head):
        srv = self.server
        with srv.lock:
            srv.requests.append((self.command, self.path, dict(self.headers.items())))
        path = self.path.split("?")[0]
        try:
            if path.startswith("/api/models/"):
                return self.api(path[len("/api/models/"):])
            if path.startswith("/cdn/"):
                return self.cdn(path[len("/cdn/"):], head)
            if path.startswith("/loop/"):
                n = int(path[len("/loop/"):])
                return self.redirect(f"/loop/{(n + 1) % 2}", {})
            if "/resolve/" in path:
                repo, rest = path[1:].split("/resolve/", 1)
                rev, name = rest.split("/", 1)
                return self.resolve(repo, rev, name, head)
        except (BrokenPipeError, ConnectionResetError):
            return
        self.answer(404, b"not found", {"X-Error-Code": "EntryNotFound"})

    def fault(self, key):
        return self.server.faults.get(key)

    def answer(self, code, body=b"", headers=None, head=False):
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def redirect(self, location, headers):
        h = dict(headers)
        h["Location"] = location
        self.answer(302, b"", h)

    def api(self, rest):
        repo_name, _, rev = rest.partition("/revision/")
        status = self.fault("status")
        if status and status[1] == "api":
            return self.answer(status[0], b'{"error": "x"}',
                               {"X-Error-Code": status[2]} if status[2] else {})
        repo = self.server.repos.get(repo_name)
        if repo is None:
            return self.answer(401, b'{"error": "Repository not found"}',
                               {"X-Error-Code": "RepoNotFound"})
        names = list(repo.files) + list(self.fault("names") or [])
        doc = {"id": repo_name, "sha": repo.commit,
               "siblings": [{"rfilename": n} for n in names]}
        self.answer(200, json.dumps(doc).encode(), {"Content-Type": "application/json"})

    def resolve(self, repo_name, rev, name, head):
        from urllib.parse import unquote
        name = unquote(name)
        status = self.fault("status")
        if status and status[1] == "resolve":
            return self.answer(status[0], b"refused",
                               {"X-Error-Code": status[2]} if status[2] else {}, head)
        repo = self.server.repos.get(repo_name)
        if repo is None or name not in repo.files or rev not in (repo.commit, "main"):
            return self.answer(404, b"no", {"X-Error-Code": "EntryNotFound"}, head)
        common = {"X-Repo-Commit": repo.commit}
        if repo.is_lfs(name):
            sha = repo.sha256(name)
            target = f"/loop/0" if self.fault("loop") == name else f"/cdn/{sha}"
            common.update({"X-Linked-Etag": f'"{sha}"', "X-Linked-Size": str(repo.size(name)),
                           "ETag": 'W/"redirect-etag"'})
            return self.redirect(f"http://127.0.0.1:{self.server.server_address[1]}{target}",
                                 common)
        common["ETag"] = f'"{repo.etag(name)}"'
        self.body(repo, name, common, head)

    def cdn(self, sha, head):
        for repo in self.server.repos.values():
            for name in repo.files:
                if repo.is_lfs(name) and repo.sha256(name) == sha:
                    return self.body(repo, name, {"ETag": f'"{sha}"'}, head)
        self.answer(404, b"no such blob", {}, head)

    # -- bodies, with the faults -------------------------------------------

    def body(self, repo, name, headers, head):
        size = repo.size(name)
        start = 0
        rng = self.headers.get("Range")
        h = dict(headers)
        h["Accept-Ranges"] = "bytes"
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= size:
                return self.answer(416, b"", {"Content-Range": f"bytes */{size}"}, head)
            code = 206
            h["Content-Range"] = f"bytes {start}-{size - 1}/{size}"
        else:
            code = 200
        self.send_response(code)
        for k, v in h.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(size - start))
        self.end_headers()
        if head:
            return
        self.send_bytes(repo, name, start, size)

    def send_bytes(self, repo, name, start, size):
        data = repo.files[name]
        drop = self.fault("drop")
        limit = size
        if drop and name in drop:
            with self.server.lock:
                times = drop.get("times")
                if times is None or times > 0:
                    limit = min(size, start + drop[name])
                    if times is not None:
                        drop["times"] = times - 1
        if isinstance(data, bytes):
            chunk = bytearray(data[start:limit])
            if self.fault("corrupt") == name and chunk:
                chunk[len(chunk) // 2] ^= 0xFF
            if self.fault("slow") == name:
                for i in range(len(chunk)):
                    self.wfile.write(chunk[i:i + 1])
                    self.wfile.flush()
                    time.sleep(0.1)
            else:
                self.wfile.write(chunk)
        else:
            self.wfile.flush()
            with open(data, "rb") as f:
                offset = start
                while offset < limit:
                    sent = os.sendfile(self.connection.fileno(), f.fileno(), offset,
                                       min(limit - offset, 1 << 30))
                    if sent == 0:
                        break
                    offset += sent
        if limit < size:
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)


class HubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.repos, self.faults, self.requests = {}, {}, []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def reset(self):
        with self.lock:
            self.faults, self.requests = {}, []

    def body_requests(self):
        """GETs of file bodies (resolve of a small file, or the CDN)."""
        with self.lock:
            return [r for r in self.requests if r[0] == "GET" and
                    ("/resolve/" in r[1] or r[1].startswith("/cdn/"))]

    def stop(self):
        self.shutdown()
        self.server_close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="the files to serve as one repo")
    parser.add_argument("--repo", default="org/model")
    args = parser.parse_args()
    files = {n: os.path.join(args.folder, n) for n in sorted(os.listdir(args.folder))
             if os.path.isfile(os.path.join(args.folder, n))}
    server = HubServer()
    server.repos[args.repo] = Repo(files)
    print(server.server_address[1], flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
