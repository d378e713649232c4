#!/usr/bin/env python3
"""hub_throughput.py: `attnscope-cli model pull` against `curl` over loopback.

    python3 scripts/hub_throughput.py path/to/attnscope-cli [--mb 500] [--runs 3]

Writes a MB-sized model.safetensors (random bytes) and a config.json into a
temporary folder, serves them with app/tests/hub_server.py (sendfile, so the
server is not the bottleneck), and times, alternately in the same run:
`curl -o FILE` of the file's CDN URL, and a whole `model pull` into an empty
cache (listing, HEADs, the transfer, the sha256 check, the links). Prints
each run and the ratio of the best times, curl / pull (1.0: as fast as
curl). Not run by CI at 500 MB (docs/PERFORMANCE.md); `--mb 20` is quick.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "app", "tests"))
from hub_server import HubServer, Repo  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cli")
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="attnscope-throughput-") as tmp:
        src = os.path.join(tmp, "model.safetensors")
        with open(src, "wb") as f:
            for _ in range(args.mb):
                f.write(os.urandom(1 << 20))
        server = HubServer()
        repo = Repo({"config.json": b'{"model_type": "gpt2"}', "model.safetensors": src})
        server.repos["org/big"] = repo
        url = f"{server.endpoint}/cdn/{repo.sha256('model.safetensors')}"
        size = args.mb * (1 << 20)
        curl_s, pull_s = [], []
        for run in range(args.runs):
            out = os.path.join(tmp, "curl.out")
            t0 = time.monotonic()
            subprocess.run(["curl", "-s", "-f", "-o", out, url], check=True)
            curl_s.append(time.monotonic() - t0)
            os.remove(out)
            cache = os.path.join(tmp, "cache")
            env = dict(os.environ, HF_HUB_CACHE=cache)
            t0 = time.monotonic()
            subprocess.run([args.cli, "model", "pull", "org/big", "--endpoint", server.endpoint],
                           check=True, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            pull_s.append(time.monotonic() - t0)
            shutil.rmtree(cache)
            print(f"run {run + 1}: curl {size / curl_s[-1] / 1e6:7.0f} MB/s "
                  f"({curl_s[-1]:.2f} s)   pull {size / pull_s[-1] / 1e6:7.0f} MB/s "
                  f"({pull_s[-1]:.2f} s)", flush=True)
        server.stop()
        ratio = min(curl_s) / min(pull_s)
        print(f"{args.mb} MB: best curl {size / min(curl_s) / 1e6:.0f} MB/s, best pull "
              f"{size / min(pull_s) / 1e6:.0f} MB/s; pull / curl throughput = {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
