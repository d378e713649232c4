#!/usr/bin/env python3
"""Times attnscope's full trace against PyTorch's forward pass, side by side.

Run with Debian's Python (python3-torch 1.13 with OpenBLAS):

    /usr/bin/python3 bench/compare_torch.py [--cli build/app/cli/attnscope-cli]
                                            [--repeat 7] [--threads 2] [--quick]

For each configuration it runs `attnscope-cli bench` (which computes every
stage and keeps it) and the book's MultiHeadAttention forward in PyTorch
(computing only the output, under torch.no_grad()), one after the other in
this process's run, and prints both medians and their ratio. Nothing here
asserts a time: CI runs it with --quick only as a smoke test.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CLI = os.path.join(HERE, "..", "build", "app", "cli", "attnscope-cli")

# (tokens, d, heads): the GPT-2 layer at full and reduced context, and small ones.
FULL = [(1024, 768, 12), (256, 768, 12), (64, 768, 12), (6, 768, 12)]
QUICK = [(64, 64, 4), (6, 16, 2)]


def torch_module_class(torch):
    nn = torch.nn

    class MultiHeadAttention(nn.Module):  # the book's class, chapter 3
        def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
            super().__init__()
            assert d_out % num_heads == 0
            self.d_out = d_out
            self.num_heads = num_heads
            self.head_dim = d_out // num_heads
            self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.out_proj = nn.Linear(d_out, d_out)
            self.dropout = nn.Dropout(dropout)
            self.register_buffer(
                "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

        def forward(self, x):
            b, num_tokens, _ = x.shape
            keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
            queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
            values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
            attn_scores = queries @ keys.transpose(2, 3)
            attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
            attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
            attn_weights = self.dropout(attn_weights)
            context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)
            return self.out_proj(context)

    return MultiHeadAttention


def time_torch(torch, cls, tokens, d, heads, repeat):
    torch.manual_seed(123)
    x = torch.rand(1, tokens, d)
    module = cls(d, d, tokens, 0.1, heads)
    module.train()
    times = []
    with torch.no_grad():
        module(x)  # warm-up
        for _ in range(repeat):
            start = time.perf_counter()
            module(x)
            times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def time_attnscope(cli, tokens, d, heads, repeat, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run(
        [cli, "bench", "--variant", "multihead", "--tokens", str(tokens), "--d-in", str(d),
         "--d-out", str(d), "--heads", str(heads), "--dropout", "0.1", "--repeat", str(repeat)],
        capture_output=True, text=True, env=env, timeout=600)
    medians = re.findall(r"^median_ms=([0-9.]+)$", out.stdout, re.M)
    if out.returncode != 0 or not medians:
        raise SystemExit(f"compare_torch: {cli} bench failed at T = {tokens} (exit {out.returncode}): "
                         + (out.stderr.strip() or "it printed no median_ms= line"))
    median = float(medians[-1])
    rss = re.search(r"peak_rss_mb=([0-9.]+)", out.stdout)
    return median, float(rss.group(1)) if rss else float("nan")


def torch_worker(argv):
    """Child process: prints PyTorch's median forward time for one config."""
    import torch
    tokens, d, heads, repeat, threads = map(int, argv)
    torch.set_num_threads(threads)
    print(time_torch(torch, torch_module_class(torch), tokens, d, heads, repeat))
    return 0


def time_torch_in_child(tokens, d, heads, repeat, threads):
    # A separate process: PyTorch's idle OpenMP workers keep spinning for a
    # while in the process that used them, which would steal a core from
    # attnscope's run if both were timed from one process.
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--torch-worker", str(tokens), str(d),
         str(heads), str(repeat), str(threads)],
        capture_output=True, text=True, timeout=600, check=True).stdout
    return float(out.strip().splitlines()[-1])


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-worker":
        return torch_worker(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", default=DEFAULT_CLI)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="small sizes only (CI smoke test)")
    args = ap.parse_args()
    if not (os.path.isfile(args.cli) and os.access(args.cli, os.X_OK)):
        print(f"compare_torch: attnscope-cli not found at {os.path.normpath(args.cli)}. "
              "Build it first (`make build`), or pass the path of a built one with --cli.",
              file=sys.stderr)
        return 2
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print("compare_torch: skipped, PyTorch is not importable: "
              + (probe.stderr.strip().splitlines() or ["?"])[-1])
        return 77
    torch_version = probe.stdout.strip()
    configs = QUICK if args.quick else FULL
    blas = "OpenBLAS" if "openblas" in os.path.realpath(
        "/usr/lib/x86_64-linux-gnu/libblas.so.3").lower() else "the system's BLAS"
    print(f"PyTorch {torch_version} with {blas}, {args.threads} threads; "
          f"multihead, dropout 0.1, training; median of {args.repeat} runs after a warm-up")
    print(f"{'T':>6} {'d':>5} {'heads':>5} {'attnscope ms':>13} {'torch ms':>10} {'ratio':>7} "
          f"{'attnscope peak RSS MB':>22}")
    for tokens, d, heads in configs:
        ours, rss = time_attnscope(args.cli, tokens, d, heads, args.repeat, args.threads)
        theirs = time_torch_in_child(tokens, d, heads, args.repeat, args.threads)
        print(f"{tokens:>6} {d:>5} {heads:>5} {ours:>13.2f} {theirs:>10.2f} {ours / theirs:>7.2f} {rss:>22.1f}")
    print("ratio = attnscope / PyTorch (below 1 is faster); attnscope keeps every stage, "
          "PyTorch computes only the output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
