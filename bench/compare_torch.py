#!/usr/bin/env python3
"""Times attnscope's full trace against PyTorch's forward pass, side by side.

Run with Debian's Python (python3-torch 1.13 with OpenBLAS):

    /usr/bin/python3 bench/compare_torch.py [--cli build/app/cli/attnscope-cli]
                                            [--repeat 7] [--threads 2] [--quick]
    /usr/bin/python3 bench/compare_torch.py --model [--repeat 3] [--model-threads 1,2]
                                            [--quick] [--busy [N]]
    /usr/bin/python3 bench/compare_torch.py --modern [--repeat 7] [--quick]
    /usr/bin/python3 bench/compare_torch.py --family [--cache DIR] [--repeat 1] [--tokens 1024]
                                            [--only qwen3-0.6b,...] [--quick]

For each configuration it runs `attnscope-cli bench` (which computes every
stage and keeps it) and the book's MultiHeadAttention forward in PyTorch
(app/tests/book_classes.py, the class torch_oracle.py checks against;
computing only the output, under torch.no_grad()), one after the other in
this process's run, and prints both medians and their ratio. Nothing here
asserts a time: CI runs it with --quick only as a smoke test.

--model times a whole GPT-2 instead: it writes a random GPT-2 small (124M:
12 layers, 12 heads, d 768, 50,257 tokens, 1,024 positions) as an F32
config.json + model.safetensors folder in a temporary directory (~500 MB;
--quick: a 2-layer d 64 model), then at T = 256 and 1024 (--quick: 16, 64)
times `attnscope-cli model bench DIR --tokens T --repeat N` (its last
`median_ms=` line) against the same math in PyTorch (model_fixtures.py's
Hugging Face-layout forward under torch.no_grad(), keeping every head's
attention map, computing only the last position's logits), each side at
the faster of --model-threads (1 and 2: on a shared 2-core machine one
thread is often faster). It also prints the FMA floor: the FLOPs the
engine says it did (its `gflop=`; causal, so about half the dense T x T
products) over this machine's FMA rate: the `fma_gflops=` that `model
bench` measures in the same process right after its runs, or, from an
engine that does not print one, a loop of 12 independent FMA chains per
thread (AVX2 and AVX-512 where the CPU has them, the faster one) compiled
here with the system C compiler.

--modern times the classes after chapter 3 (gqa with 4 K/V heads, swa with
a window of 256, mla with a latent of 96) at T = 1024, d = 768, 12 heads
against the book's bonus classes (core/tests/modern_oracle.py), and one
cached step at the last position (`bench --cache-step`) against a full
forward in eval mode.

--family times today's open decoders at their real shapes: it writes
random BF16 checkpoints (Hugging Face layout, as the real files are) of
Qwen3 0.6B, Llama 3.2 1B and Gemma 3 270M (~1.1, 2.3 and 0.5 GiB; into
--cache DIR when given, reused while their config.json is unchanged, else a
temporary directory; --quick: the same structures at toy sizes, T = 64),
then at T = 1024 times `attnscope-cli model bench DIR` (the forward and
every layer's and head's attention weights, at its default threads) against
core/tests/family_oracle.py's reference classes in float32 (eval, no_grad,
every layer's maps kept, the last position's logits) at PyTorch's faster of
--model-threads. It prints the ratio, the forward's FLOPs over the FMA rate
`model bench` measures (its floor) and the engine's peak RSS.

--model --busy [N] times a desktop with other work running: at T = 256
(--quick: 16, 64), quiet and then beside N (1) processes that each keep a
core busy, it times `model bench` with its default settings and with
OMP_NUM_THREADS=1, and PyTorch (its faster of --model-threads), all under
the same load, and prints default / one thread and default / PyTorch.
"""
import argparse
import importlib
import json
import math
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CLI = os.path.join(HERE, "..", "build", "app", "cli", "attnscope-cli")

# (tokens, d, heads): the GPT-2 layer at full and reduced context, and small ones.
FULL = [(1024, 768, 12), (256, 768, 12), (64, 768, 12), (6, 768, 12)]
QUICK = [(64, 64, 4), (6, 16, 2)]


def app_tests_module(name):
    """Imports app/tests/<name>.py: book_classes (the book's chapter-3 classes,
    the copy torch_oracle.py checks the engine against) or model_fixtures.
    Both import torch: call this only once PyTorch is known to import."""
    sys.path.insert(0, os.path.join(HERE, "..", "app", "tests"))
    return importlib.import_module(name)


def time_module(torch, make, tokens, d, repeat):
    """Median ms of module(x) in training mode, x = torch.rand(1, T, d) after
    torch.manual_seed(123), the module made by make() after that draw."""
    torch.manual_seed(123)
    x = torch.rand(1, tokens, d)
    module = make()
    module.train()
    times = []
    with torch.no_grad():
        module(x)  # warm-up
        for _ in range(repeat):
            start = time.perf_counter()
            module(x)
            times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def time_torch(torch, cls, tokens, d, heads, repeat):
    return time_module(torch, lambda: cls(d, d, tokens, 0.1, heads), tokens, d, repeat)


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
    book = app_tests_module("book_classes")
    print(time_torch(torch, book.MultiHeadAttention, tokens, d, heads, repeat))
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


# ---------------------------------------------------------------------------
# --modern: the classes after chapter 3

# (variant, its flags, the bonus class and its keyword arguments): the size
# is the GPT-2 layer's, T = 1024, d = 768, 12 heads (--quick: 64, 64, 4).
MODERN = [
    ("gqa", ["--kv-groups", "4"], "GroupedQueryAttention", {"num_kv_groups": 4}),
    ("swa", ["--window", "256"], "MultiHeadAttentionWithSWA", {"sliding_window_size": 256}),
    ("mla", ["--latent-dim", "96"], "MultiHeadLatentAttention", {"latent_dim": 96}),
]
QUICK_MODERN = {"gqa": {"num_kv_groups": 2}, "swa": {"sliding_window_size": 16},
                "mla": {"latent_dim": 8}}


def modern_oracle():
    sys.path.insert(0, os.path.join(HERE, "..", "core", "tests"))
    return importlib.import_module("modern_oracle")


def modern_torch_worker(argv):
    """Child process: PyTorch's median forward of one bonus class."""
    import torch
    name, tokens, d, heads, repeat, threads = argv[0], *map(int, argv[1:6])
    kwargs = json.loads(argv[6])
    torch.set_num_threads(threads)
    cls = getattr(modern_oracle(), name)
    print(time_module(torch, lambda: cls(d, d, 0.1, heads, **kwargs), tokens, d, repeat))
    return 0


def modern_bench(cli, args, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run([cli, "bench", *args], capture_output=True, text=True, env=env,
                         timeout=600)
    medians = re.findall(r"^median_ms=([0-9.]+)$", out.stdout, re.M)
    if out.returncode != 0 or not medians:
        raise SystemExit(f"compare_torch: {cli} bench {' '.join(args)} failed "
                         f"(exit {out.returncode}): " + out.stderr.strip())
    return float(medians[-1])


def modern_main(args):
    tokens, d, heads = (64, 64, 4) if args.quick else (1024, 768, 12)
    print(f"the classes after chapter 3 at T = {tokens}, d = {d}, {heads} heads, dropout 0.1, "
          f"training; median of {args.repeat} runs; PyTorch at its faster of 1 and 2 threads")
    print(f"{'class':<34} {'attnscope ms':>13} {'torch ms':>10} {'ratio':>7} "
          f"{'cached step ms':>15} {'step / full':>12}")
    for variant, flags, name, kwargs in MODERN:
        if args.quick:
            kwargs = QUICK_MODERN[variant]
            flags = [flags[0], str(next(iter(kwargs.values())))]
        size = ["--variant", variant, "--tokens", str(tokens), "--d-in", str(d), "--d-out", str(d),
                "--heads", str(heads), *flags]
        ours = modern_bench(args.cli, size + ["--repeat", str(args.repeat)], args.threads)
        full_eval = modern_bench(args.cli, size + ["--repeat", str(args.repeat), "--eval"],
                                 args.threads)
        step = modern_bench(args.cli, size + ["--repeat", str(4 * args.repeat + 1),
                                              "--cache-step", str(tokens - 1)], args.threads)
        theirs = min(float(subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--modern-torch-worker", name, str(tokens),
             str(d), str(heads), str(args.repeat), str(t), json.dumps(kwargs)],
            capture_output=True, text=True, timeout=600, check=True).stdout.strip().splitlines()[-1])
            for t in (1, 2))
        label = f"{variant} ({name.replace('Attention', '')})"
        print(f"{label:<34} {ours:>13.2f} {theirs:>10.2f} {ours / theirs:>7.2f} {step:>15.3f} "
              f"{step / full_eval:>12.4f}")
    print("ratio = attnscope (every stage kept) / PyTorch (the output only); step / full = one "
          "cached step at the last position over a full forward in eval mode")
    return 0


# ---------------------------------------------------------------------------
# --model: a whole GPT-2

MODEL_TOKENS = [256, 1024]
QUICK_MODEL = {"n_layer": 2, "n_head": 4, "n_embd": 64, "n_positions": 128}
QUICK_MODEL_TOKENS = [16, 64]


def fixtures_module():
    return app_tests_module("model_fixtures")


def model_flops(cfg, tokens):
    """FLOPs of one forward (a multiply-add is 2): per block Q/K/V (2·T·d·3d),
    the dense T x T scores and context of every head (2 · 2·T²·d), the output
    projection (2·T·d²) and the MLP (2 · 2·T·d·n_inner); then the last
    position's logits (2·d·vocab). Causal engines may skip the hidden half of
    the T x T products; this counts them, as a dense forward does."""
    d, t = cfg["n_embd"], tokens
    inner = cfg["n_inner"] or 4 * d
    block = 2 * t * d * 3 * d + 2 * 2 * t * t * d + 2 * t * d * d + 2 * 2 * t * d * inner
    return cfg["n_layer"] * block + 2 * d * cfg["vocab_size"]


def model_torch_worker(argv):
    """Child process: PyTorch's median forward time (ms) for one GPT-2 folder."""
    import torch
    folder, tokens, repeat, threads = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    torch.set_num_threads(threads)
    mf = fixtures_module()
    with open(os.path.join(folder, "config.json")) as f:
        doc = json.load(f)
    cfg = {k: doc[k] for k in mf.TINY}
    w = mf.hf_weights_from_files(mf.read_safetensors(os.path.join(folder, "model.safetensors")))
    ids = torch.randint(0, cfg["vocab_size"], (tokens,), generator=torch.Generator().manual_seed(7)).tolist()
    times = []
    with torch.no_grad():
        mf.hf_forward(w, cfg, ids, record="attention")  # warm-up
        for _ in range(repeat):
            start = time.perf_counter()
            stages, _ = mf.hf_forward(w, cfg, ids, record="attention")  # every head's map kept
            times.append((time.perf_counter() - start) * 1000.0)
            del stages
    print(statistics.median(times))
    return 0


def time_model_torch(folder, tokens, repeat, threads):
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--model-torch-worker", folder, str(tokens),
         str(repeat), str(threads)],
        capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"compare_torch: the PyTorch worker failed at T = {tokens}: "
                         + out.stderr.strip()[-2000:])
    return float(out.stdout.strip().splitlines()[-1])


def time_model_attnscope(cli, folder, tokens, repeat, threads):
    """(median ms, GFLOP it says it did, the FMA rate it measured) of `model bench`;
    the last two are None when it does not print them (gflop=, fma_gflops=).
    threads None: the default settings (no OMP_NUM_THREADS)."""
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    out = subprocess.run([cli, "model", "bench", folder, "--tokens", str(tokens), "--repeat", str(repeat)],
                         capture_output=True, text=True, env=env, timeout=3600)
    medians = re.findall(r"^median_ms=([0-9.eE+-]+)\s*$", out.stdout, re.M)
    if out.returncode != 0 or not medians:
        raise SystemExit(f"compare_torch: {cli} model bench failed at T = {tokens} "
                         f"(exit {out.returncode}): "
                         + (out.stderr.strip() or "it printed no median_ms= line"))
    gflop = re.findall(r"\bgflop=([0-9.eE+-]+)", out.stdout)
    fma = re.findall(r"\bfma_gflops=([0-9.eE+-]+)", out.stdout)
    return (float(medians[-1]), float(gflop[-1]) if gflop else None,
            float(fma[-1]) if fma else None)


FMA_SOURCE = r"""
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

/* 12 independent FMA chains: enough to cover the FMA latency on every
   port, so the loop runs at the FMA units' throughput. */
#define CHAINS(T, SET1, FMA, ADD, STORE, LANES)                                    T b = SET1(0.999999f), c = SET1(1e-7f);                                         T a0 = SET1(1.0f), a1 = SET1(1.1f), a2 = SET1(1.2f), a3 = SET1(1.3f);             T a4 = SET1(1.4f), a5 = SET1(1.5f), a6 = SET1(1.6f), a7 = SET1(1.7f);             T a8 = SET1(1.8f), a9 = SET1(1.9f), a10 = SET1(2.0f), a11 = SET1(2.1f);           for (long i = 0; i < iters; ++i) {                                                a0 = FMA(a0, b, c); a1 = FMA(a1, b, c); a2 = FMA(a2, b, c);                     a3 = FMA(a3, b, c); a4 = FMA(a4, b, c); a5 = FMA(a5, b, c);                     a6 = FMA(a6, b, c); a7 = FMA(a7, b, c); a8 = FMA(a8, b, c);                     a9 = FMA(a9, b, c); a10 = FMA(a10, b, c); a11 = FMA(a11, b, c);               }                                                                               T s = ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7)));       s = ADD(s, ADD(ADD(a8, a9), ADD(a10, a11)));                                    float out[LANES];                                                               STORE(out, s);                                                                  return out[0];

__attribute__((target("avx2,fma"))) static float chains256(long iters) {
  CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_storeu_ps, 8)
}
__attribute__((target("avx512f"))) static float chains512(long iters) {
  CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_storeu_ps, 16)
}

int main(int argc, char** argv) {
  long iters = atol(argv[1]);
  int threads = atoi(argv[2]), lanes = atoi(argv[3]);
  double sink = 0, start = omp_get_wtime();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
  sink += lanes == 16 ? chains512(iters) : chains256(iters);
  double seconds = omp_get_wtime() - start;
  printf("%.3f %g\n", 2.0 * lanes * 12 * (double)iters * threads / seconds / 1e9, sink);
  return 0;
}
"""


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def measure_fma_gflops(threads, quick):
    """(GFLOP/s at `threads` threads, how it was measured) or (None, why not)."""
    flags = cpu_flags()
    widths = [w for w, need in ((8, {"avx2", "fma"}), (16, {"avx512f"})) if need <= flags]
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if not widths or not compiler:
        return None, ("no AVX2+FMA/AVX-512 in /proc/cpuinfo" if not widths
                      else "no C compiler (set CC) to build the FMA loop")
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "fma.c"), os.path.join(tmp, "fma")
        with open(src, "w") as f:
            f.write(FMA_SOURCE)
        build = subprocess.run([compiler, "-O2", "-fopenmp", src, "-o", exe],
                               capture_output=True, text=True)
        if build.returncode != 0:
            return None, f"the FMA loop did not compile: {build.stderr.strip()[:300]}"
        best, how = 0.0, ""
        iters = 20_000_000 if quick else 200_000_000
        for lanes in widths:
            for _ in range(1 if quick else 3):  # best of three: the host is shared
                out = subprocess.run([exe, str(iters // (lanes // 8)), str(threads), str(lanes)],
                                     capture_output=True, text=True, timeout=300)
                rate = float(out.stdout.split()[0])
                if rate > best:
                    best, how = rate, f"{lanes * 32}-bit FMA loop, {threads} thread(s)"
        return best, how


def model_main(args):
    mf = fixtures_module()
    cfg = mf.hf_config(**QUICK_MODEL) if args.quick else dict(mf.GPT2_124M)
    tokens = QUICK_MODEL_TOKENS if args.quick else MODEL_TOKENS
    threads = [int(t) for t in args.model_threads.split(",")]
    rates = {}  # threads -> (GFLOP/s, how), from our own FMA loop when the engine gives none

    def own_rate(n):
        if n not in rates:
            rates[n] = measure_fma_gflops(n, args.quick)
        return rates[n]
    with tempfile.TemporaryDirectory(prefix="attnscope-gpt2-") as folder:
        start = time.perf_counter()
        mf.write_gpt2_124m(folder, cfg=cfg)
        size = os.path.getsize(os.path.join(folder, "model.safetensors")) / 2**20
        print(f"GPT-2 {cfg['n_layer']} layers x {cfg['n_head']} heads, d {cfg['n_embd']}, "
              f"vocab {cfg['vocab_size']}: random F32 checkpoint, {size:.0f} MiB, written in "
              f"{time.perf_counter() - start:.1f} s")
        print(f"each side at the faster of {args.model_threads} threads; PyTorch keeps every "
              f"attention map and computes the last position's logits; median of {args.repeat} "
              "runs after a warm-up")
        print(f"{'T':>6} {'GFLOP':>7} {'attnscope ms':>13} {'(thr)':>5} {'torch ms':>10} {'(thr)':>5} "
              f"{'ratio':>6} {'FMA floor ms':>13} {'attnscope/floor':>16}")
        for t in tokens:
            ours = {n: time_model_attnscope(args.cli, folder, t, args.repeat, n) for n in threads}
            theirs = {n: time_model_torch(folder, t, args.repeat, n) for n in threads}
            mine = min(ours, key=lambda n: ours[n][0])
            best = min(theirs, key=theirs.get)
            ms, gflop, rate = ours[mine]
            gflop = gflop or model_flops(cfg, t) / 1e9  # the engine's own count when it prints one
            how = f"`model bench`'s fma_gflops= at {mine} thread(s)"
            if rate is None:
                rate, how = own_rate(mine)
            floor = gflop / rate * 1000.0 if rate else float("nan")
            print(f"{t:>6} {gflop:>7.2f} {ms:>13.2f} {mine:>5} {theirs[best]:>10.2f} {best:>5} "
                  f"{ms / theirs[best]:>6.2f} {floor:>13.2f} {ms / floor:>16.2f}", flush=True)
            print(f"       FMA rate {rate or float('nan'):.1f} GFLOP/s ({how})")
            print("       by threads: attnscope "
                  + ", ".join(f"{n}: {v[0]:.2f} ms" for n, v in sorted(ours.items()))
                  + "; PyTorch " + ", ".join(f"{n}: {v:.2f} ms" for n, v in sorted(theirs.items())))
    print("ratio = attnscope / PyTorch (below 1 is faster). GFLOP: what `model bench` says it did "
          f"(a dense count would be {model_flops(cfg, tokens[-1]) / 1e9:.2f} at T = {tokens[-1]}). "
          "FMA floor = GFLOP / the FMA rate at attnscope's thread count: the time if every FLOP "
          "ran at the FMA units' peak")
    return 0


# ---------------------------------------------------------------------------
# --family: today's open decoders at their real shapes

def family_shapes(quick):
    """(label, the reference model's settings (core/tests/family_oracle.py's
    keys), config.json) of Qwen3 0.6B, Llama 3.2 1B and Gemma 3 270M at
    their real shapes, or (quick) the same structures at toy sizes."""
    base = dict(eps=1e-6, local_theta=10000.0, rope_scaling=None, tied=True, q_bias=False,
                o_bias=False, mlp_bias=False, qk_norm=False, gemma=False, window=0, softcap=None,
                query_pre_attn_scalar=None)
    llama_scaling = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    qwen = dict(base, vocab=151936, hidden=1024, inner=3072, layers=28, heads=16, kv_heads=8,
                head_dim=128, theta=1e6, qk_norm=True)
    llama = dict(base, vocab=128256, hidden=2048, inner=8192, layers=16, heads=32, kv_heads=8,
                 head_dim=64, theta=500000.0, eps=1e-5, rope_scaling=llama_scaling)
    gemma = dict(base, vocab=262144, hidden=640, inner=2048, layers=18, heads=4, kv_heads=1,
                 head_dim=256, theta=1e6, qk_norm=True, gemma=True, window=512,
                 query_pre_attn_scalar=256)
    if quick:  # the same structures, small: 2-3 layers, vocab 512
        qwen.update(vocab=512, hidden=64, inner=96, layers=2, heads=4, kv_heads=2, head_dim=32)
        llama.update(vocab=512, hidden=64, inner=128, layers=2, heads=4, kv_heads=2, head_dim=16)
        gemma.update(vocab=512, hidden=64, inner=96, layers=3, heads=2, kv_heads=1, head_dim=32,
                     window=16, query_pre_attn_scalar=32)
    gemma["sliding"] = [(l + 1) % (6 if not quick else 3) != 0 for l in range(gemma["layers"])]
    for c in (qwen, llama):
        c["sliding"] = [False] * c["layers"]

    def common(c, model_type):
        return {"model_type": model_type, "vocab_size": c["vocab"], "hidden_size": c["hidden"],
                "intermediate_size": c["inner"], "num_hidden_layers": c["layers"],
                "num_attention_heads": c["heads"], "num_key_value_heads": c["kv_heads"],
                "head_dim": c["head_dim"], "rms_norm_eps": c["eps"], "rope_theta": c["theta"],
                "tie_word_embeddings": True, "max_position_embeddings": 32768,
                "torch_dtype": "bfloat16"}
    qwen_cfg = dict(common(qwen, "qwen3"), hidden_act="silu", attention_bias=False,
                    use_sliding_window=False, sliding_window=None)
    llama_cfg = dict(common(llama, "llama"), hidden_act="silu", attention_bias=False,
                     mlp_bias=False, rope_scaling=llama_scaling)
    gemma_cfg = dict(common(gemma, "gemma3_text"), hidden_activation="gelu_pytorch_tanh",
                     query_pre_attn_scalar=gemma["query_pre_attn_scalar"],
                     sliding_window=gemma["window"], rope_local_base_freq=10000.0,
                     final_logit_softcapping=None, attn_logit_softcapping=None, rope_scaling=None,
                     layer_types=["sliding_attention" if s else "full_attention"
                                  for s in gemma["sliding"]])
    return [("Qwen3 0.6B", "qwen3-0.6b", qwen, qwen_cfg),
            ("Llama 3.2 1B", "llama3.2-1b", llama, llama_cfg),
            ("Gemma 3 270M", "gemma3-270m", gemma, gemma_cfg)]


def family_tensors(c):
    """[(name, shape)] of a checkpoint in Hugging Face's layout (no biases: none of the three has one)."""
    d, hd, inner = c["hidden"], c["head_dim"], c["inner"]
    out = [("model.embed_tokens.weight", [c["vocab"], d])]
    for l in range(c["layers"]):
        p = f"model.layers.{l}."
        norms = ["input_layernorm", "post_attention_layernorm"]
        if c["gemma"]:
            norms += ["pre_feedforward_layernorm", "post_feedforward_layernorm"]
        out += [(p + n + ".weight", [d]) for n in norms]
        out += [(p + "self_attn.q_proj.weight", [c["heads"] * hd, d]),
                (p + "self_attn.k_proj.weight", [c["kv_heads"] * hd, d]),
                (p + "self_attn.v_proj.weight", [c["kv_heads"] * hd, d]),
                (p + "self_attn.o_proj.weight", [d, c["heads"] * hd])]
        if c["qk_norm"]:
            out += [(p + "self_attn.q_norm.weight", [hd]), (p + "self_attn.k_norm.weight", [hd])]
        out += [(p + "mlp.gate_proj.weight", [inner, d]), (p + "mlp.up_proj.weight", [inner, d]),
                (p + "mlp.down_proj.weight", [d, inner])]
    out.append(("model.norm.weight", [d]))
    return out


def write_family_checkpoint(folder, c, cfg):
    """config.json and a random BF16 model.safetensors (written tensor by
    tensor; norms near their identity, projections with std 1/sqrt(in),
    queries and keys 2.5x that for peaked attention, as family_oracle.py)."""
    import torch
    os.makedirs(folder, exist_ok=True)
    tensors = family_tensors(c)
    header, offset = {}, 0
    for name, shape in tensors:
        size = 2 * math.prod(shape)
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    g = torch.Generator().manual_seed(2024)
    partial = os.path.join(folder, "model.safetensors.partial")
    with open(partial, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, shape in tensors:
            if len(shape) == 1:  # a norm's gain (Gemma's is 1 + w)
                t = (0.0 if c["gemma"] else 1.0) + 0.2 * torch.randn(shape, generator=g)
            elif "embed_tokens" in name:
                t = torch.randn(shape, generator=g)
            else:
                std = 1.0 / math.sqrt(shape[1]) * (2.5 if ("q_proj" in name or "k_proj" in name) else 1.0)
                t = std * torch.randn(shape, generator=g)
            f.write(t.to(torch.bfloat16).view(torch.int16).numpy().tobytes())
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    os.replace(partial, os.path.join(folder, "model.safetensors"))


def read_bf16_safetensors(path):
    """{name: float32 tensor} of a BF16 safetensors file."""
    import numpy as np
    import torch
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    raw = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        bits = np.array(raw[a:b]).view(np.int16)
        out[name] = torch.from_numpy(bits).view(torch.bfloat16).float().reshape(meta["shape"])
    return out


def family_flops(c, tokens):
    """FLOPs of one forward (a multiply-add is 2): the projections of every
    block (Q, K, V, O and the gated MLP's three), the scores and context of
    every head over the keys it sees (causal, and within the window where a
    layer slides: the work a masked forward needs), and the last position's
    logits. Recomputing a layer's stages for its maps is not counted."""
    d, hd, t, inner = c["hidden"], c["head_dim"], tokens, c["inner"]
    qw, kw = c["heads"] * hd, c["kv_heads"] * hd
    proj = 2 * t * d * (qw + 2 * kw) + 2 * t * qw * d + 2 * t * d * 3 * inner
    total = 0
    for slides in c["sliding"]:
        w = c["window"] if slides else t
        seen = sum(min(i + 1, w) for i in range(t))  # visible (query, key) pairs
        total += proj + 2 * 2 * seen * hd * c["heads"]
    return total + 2 * d * c["vocab"]


def family_torch_worker(argv):
    """Child process: PyTorch's median forward (ms) of one family folder, in
    float32, eval mode, no_grad: family_oracle.py's reference classes, every
    layer's and head's attention weights kept, the last position's logits."""
    import torch
    folder, tokens, repeat, threads = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    c = json.loads(argv[4])
    torch.set_num_threads(threads)
    sys.path.insert(0, os.path.join(HERE, "..", "core", "tests"))
    oracle = importlib.import_module("family_oracle")
    skip = (torch.nn.Linear.reset_parameters, torch.nn.Embedding.reset_parameters)
    torch.nn.Linear.reset_parameters = lambda self: None  # the file's weights replace them
    torch.nn.Embedding.reset_parameters = lambda self: None
    model = oracle.Model(c).eval()
    torch.nn.Linear.reset_parameters, torch.nn.Embedding.reset_parameters = skip
    state = read_bf16_safetensors(os.path.join(folder, "model.safetensors"))
    model.load_state_dict(state, strict=True)
    del state

    def forward(ids):  # oracle.Model.forward, but only the last position's logits
        T = ids.shape[0]
        x = model.model.embed_tokens(ids[None])
        if c["gemma"]:
            x = x * (c["hidden"] ** 0.5)
        records = []
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        for layer, block in enumerate(model.model.layers):
            slides = c["sliding"][layer]
            mask = j > i
            if slides:
                mask = mask | (j <= i - c["window"])
            theta = c["local_theta"] if (c["gemma"] and slides) else c["theta"]
            scaling = None if (c["gemma"] and slides) else c["rope_scaling"]
            cos, sin = oracle.rope_tables(c["head_dim"], theta, T, scaling)
            rec = {}
            x = block(x, mask, cos, sin, rec)
            records.append(rec["weights"])  # every head's T x T weights, kept
        x = model.model.norm(x[:, -1:])
        return x[0] @ model.model.embed_tokens.weight.T, records

    ids = torch.tensor([(1000 + 7919 * i) % c["vocab"] for i in range(tokens)])
    times = []
    with torch.no_grad():
        forward(ids[:64])  # warm-up (short: a full one at T = 1024 takes a minute)
        for _ in range(repeat):
            start = time.perf_counter()
            logits, maps = forward(ids)
            times.append((time.perf_counter() - start) * 1000.0)
            del logits, maps
    print(statistics.median(times))
    return 0


def time_family_torch(folder, c, tokens, repeat, threads):
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--family-torch-worker", folder, str(tokens),
         str(repeat), str(threads), json.dumps(c)],
        capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"compare_torch: the PyTorch worker failed on {folder}: "
                         + out.stderr.strip()[-2000:])
    return float(out.stdout.strip().splitlines()[-1])


def time_family_attnscope(cli, folder, tokens, repeat):
    """(median ms, peak RSS MB, FMA GFLOP/s) of `model bench` at its default threads."""
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    out = subprocess.run([cli, "model", "bench", folder, "--tokens", str(tokens), "--repeat",
                          str(repeat)], capture_output=True, text=True, env=env, timeout=3600)
    medians = re.findall(r"^median_ms=([0-9.eE+-]+)\s*$", out.stdout, re.M)
    if out.returncode != 0 or not medians:
        raise SystemExit(f"compare_torch: {cli} model bench {folder} failed "
                         f"(exit {out.returncode}): "
                         + (out.stderr.strip() or "it printed no median_ms= line"))
    rss = re.findall(r"\bpeak_rss_mb=([0-9.eE+-]+)", out.stdout)
    fma = re.findall(r"\bfma_gflops=([0-9.eE+-]+)", out.stdout)
    return (float(medians[-1]), float(rss[-1]) if rss else float("nan"),
            float(fma[-1]) if fma else None)


def family_main(args):
    tokens = 64 if args.quick else args.tokens
    threads = [int(t) for t in args.model_threads.split(",")]
    only = set(args.only.split(",")) if args.only else None
    print(f"random BF16 checkpoints at the real shapes{' (--quick: toy sizes)' if args.quick else ''}, "
          f"T = {tokens}; attnscope: `model bench` (the forward and every layer's and head's "
          "attention weights) at its default threads; PyTorch: family_oracle.py's classes in "
          f"float32, eval, no_grad, every map kept, at its faster of {args.model_threads} threads; "
          f"median of {args.repeat} run(s) after a warm-up (PyTorch's at T = 64)")
    print(f"{'model':<14} {'GFLOP':>8} {'attnscope ms':>13} {'torch ms':>10} {'(thr)':>5} "
          f"{'ratio':>6} {'floor ms':>9} {'ours/floor':>11} {'peak RSS MB':>12}")
    with tempfile.TemporaryDirectory(prefix="attnscope-family-") as tmp:
        root = args.cache or tmp
        for label, key, c, cfg in family_shapes(args.quick):
            if only and key not in only:
                continue
            folder = os.path.join(root, key + ("-quick" if args.quick else ""))
            want = json.dumps(cfg, indent=2)
            have = None
            if os.path.exists(os.path.join(folder, "model.safetensors")):
                with open(os.path.join(folder, "config.json")) as f:
                    have = f.read()
            if have != want:
                start = time.perf_counter()
                write_family_checkpoint(folder, c, cfg)
                size = os.path.getsize(os.path.join(folder, "model.safetensors")) / 2**20
                print(f"  ({label}: wrote {size:.0f} MiB of BF16 in "
                      f"{time.perf_counter() - start:.1f} s to {folder})", flush=True)
            ms, rss, rate = time_family_attnscope(args.cli, folder, tokens, args.repeat)
            theirs = {n: time_family_torch(folder, c, tokens, args.repeat, n) for n in threads}
            best = min(theirs, key=theirs.get)
            gflop = family_flops(c, tokens) / 1e9
            floor = gflop / rate * 1000.0 if rate else float("nan")
            print(f"{label:<14} {gflop:>8.1f} {ms:>13.1f} {theirs[best]:>10.1f} {best:>5} "
                  f"{ms / theirs[best]:>6.2f} {floor:>9.1f} {ms / floor:>11.2f} {rss:>12.0f}",
                  flush=True)
            print("               PyTorch by threads: "
                  + ", ".join(f"{n}: {v:.1f} ms" for n, v in sorted(theirs.items()))
                  + f"; FMA rate {rate or float('nan'):.1f} GFLOP/s (`model bench`'s fma_gflops=)")
    print("ratio = attnscope / PyTorch (goal <= 0.5); GFLOP: the forward's (projections, each "
          "head's visible scores and context, the last logits); floor = GFLOP / the FMA rate "
          "(goal: ours/floor <= 2); peak RSS: attnscope's process (getrusage)")
    return 0


class Busy:
    """`count` other processes, each keeping a core busy (a Python loop), for
    the time of a `with` block: the load of a desktop where something else runs."""

    def __init__(self, count):
        self.count, self.procs = count, []

    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                      for _ in range(self.count)]
        time.sleep(0.3)  # the scheduler has placed them before anything is timed
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()
        return False


def busy_main(args):
    """The engine on a quiet machine and beside --busy processes, in one run:
    its default settings against its own one-thread time under the same load,
    and against PyTorch (its faster of --model-threads) under the same load."""
    mf = fixtures_module()
    cfg = mf.hf_config(**QUICK_MODEL) if args.quick else dict(mf.GPT2_124M)
    tokens = QUICK_MODEL_TOKENS if args.quick else [256]
    torch_threads = [int(t) for t in args.model_threads.split(",")]
    with tempfile.TemporaryDirectory(prefix="attnscope-gpt2-") as folder:
        mf.write_gpt2_124m(folder, cfg=cfg)
        print(f"GPT-2 {cfg['n_layer']} layers x {cfg['n_head']} heads, d {cfg['n_embd']}; "
              f"{os.cpu_count()} CPUs; busy = {args.busy} other process(es) each spinning a "
              f"core; medians of {args.repeat} runs after a warm-up, the conditions "
              "in turn, quiet first")
        print(f"{'T':>6} {'load':>6} {'default ms':>11} {'1 thread ms':>12} {'default/1thr':>13} "
              f"{'torch ms':>9} {'(thr)':>5} {'default/torch':>14}")
        for t in tokens:
            for load in (0, args.busy):
                with Busy(load):
                    default = time_model_attnscope(args.cli, folder, t, args.repeat, None)[0]
                    one = time_model_attnscope(args.cli, folder, t, args.repeat, 1)[0]
                    theirs = {n: time_model_torch(folder, t, args.repeat, n) for n in torch_threads}
                best = min(theirs, key=theirs.get)
                print(f"{t:>6} {'busy' if load else 'quiet':>6} {default:>11.2f} {one:>12.2f} "
                      f"{default / one:>13.2f} {theirs[best]:>9.2f} {best:>5} "
                      f"{default / theirs[best]:>14.2f}", flush=True)
    print("default: attnscope as a learner runs it (no OMP_NUM_THREADS); 1 thread: "
          "OMP_NUM_THREADS=1 in the same minute and load; torch: PyTorch's faster of "
          f"{args.model_threads} threads in the same minute and load")
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-worker":
        return torch_worker(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "--model-torch-worker":
        return model_torch_worker(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "--modern-torch-worker":
        return modern_torch_worker(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "--family-torch-worker":
        return family_torch_worker(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", default=DEFAULT_CLI)
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed runs per size (default 7; --model: 3)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="small sizes only (CI smoke test)")
    ap.add_argument("--model", action="store_true",
                    help="time a whole GPT-2 (`model bench`) instead of one attention layer")
    ap.add_argument("--model-threads", default="1,2",
                    help="--model: thread counts to try on each side; each side's faster is compared")
    ap.add_argument("--modern", action="store_true",
                    help="time gqa, swa and mla (and one cached step of each) against the "
                    "book's bonus classes")
    ap.add_argument("--busy", type=int, nargs="?", const=1, default=0, metavar="N",
                    help="--model: time the engine quiet and beside N (default 1) processes "
                    "that keep a core busy each, against its own one-thread time and PyTorch")
    ap.add_argument("--family", action="store_true",
                    help="time Qwen3 0.6B, Llama 3.2 1B and Gemma 3 270M (random BF16 weights "
                    "at their real shapes) through `model bench` against PyTorch")
    ap.add_argument("--cache", default=None, metavar="DIR",
                    help="--family: write the checkpoints here and reuse them on later runs")
    ap.add_argument("--tokens", type=int, default=1024, help="--family: T (default 1024)")
    ap.add_argument("--only", default=None,
                    help="--family: a comma-separated subset of qwen3-0.6b,llama3.2-1b,gemma3-270m")
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
    if args.family:
        args.repeat = args.repeat or 1
        print(f"PyTorch {torch_version}")
        return family_main(args)
    if args.model:
        args.repeat = args.repeat or 3
        print(f"PyTorch {torch_version}")
        return busy_main(args) if args.busy else model_main(args)
    args.repeat = args.repeat or 7
    if args.modern:
        print(f"PyTorch {torch_version}")
        return modern_main(args)
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
