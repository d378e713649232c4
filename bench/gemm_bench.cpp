// gemm_bench.cpp: the packed projection kernel (core/src/kernels/gemm.hpp) against
// Eigen's product on the same operands: x (T x 768) . w (768 x 2304), the
// multi-head layer's fused Q/K/V projection, on one thread (the engine
// splits panels between threads itself). Where the kernel is not compiled
// (no AVX-512 and no AVX2 + FMA) the packed case runs the portable loops.
//
//   build/bench/attnscope_bench --benchmark_filter="Projection|MlpDown"
#include <benchmark/benchmark.h>

#include "attnscope/io/io.hpp"
#include "kernels/gemm.hpp"

namespace core = attnscope::core;
namespace gemm = attnscope::core::gemm;

namespace {

constexpr Eigen::Index kDIn = 768, kDOut = 3 * 768;

// torch.rand(rows, cols) under torch.manual_seed(seed): the values do not
// change the kernel's speed.
core::RowMatrix random_matrix(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
  return core::random_inputs(static_cast<int>(rows), static_cast<int>(cols), seed).embeddings;
}

void set_flops(benchmark::State& state, Eigen::Index T) {
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * static_cast<double>(T * kDIn * kDOut) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void PackedProjection(benchmark::State& state) {
  const Eigen::Index T = state.range(0);
  const core::RowMatrix x = random_matrix(T, kDIn, 1), w = random_matrix(kDIn, kDOut, 2);
  const gemm::PackedWeights panels =
      gemm::pack_weights(w);  // once per parameter set, as the engine
  gemm::PackedRows tiles;
  core::RowMatrix y(T, kDOut);
  const core::RowMatrix no_bias;
  for (auto _ : state) {
    gemm::pack_rows(x, tiles);  // once per run, as the engine
    for (Eigen::Index p = 0; p < panels.panels(); ++p)
      gemm::multiply_panel(tiles, panels.panel(p), p, no_bias, y);
    benchmark::DoNotOptimize(y.data());
  }
  set_flops(state, T);
  state.SetLabel(gemm::available() ? "kernel" : "portable loops (no kernel in this build)");
}
BENCHMARK(PackedProjection)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);

// The MLP's down projection, x (T x 3072) . w (3072 x 768): the same
// FLOPs as the fused Q/K/V above, but x (3 MiB at T = 256) no longer fits
// in one core's L2 beside a panel.
void PackedMlpDown(benchmark::State& state) {
  const Eigen::Index T = state.range(0), K = 4 * 768, N = 768;
  const core::RowMatrix x = random_matrix(T, K, 1), w = random_matrix(K, N, 2);
  const gemm::PackedWeights panels = gemm::pack_weights(w);
  gemm::PackedRows tiles;
  core::RowMatrix y(T, N);
  const core::RowMatrix no_bias;
  for (auto _ : state) {
    gemm::pack_rows(x, tiles);
    for (Eigen::Index p = 0; p < panels.panels(); ++p)
      gemm::multiply_panel(tiles, panels.panel(p), p, no_bias, y);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * static_cast<double>(T * K * N) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(PackedMlpDown)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);

void EigenProjection(benchmark::State& state) {
  const Eigen::Index T = state.range(0);
  const core::RowMatrix x = random_matrix(T, kDIn, 1), w = random_matrix(kDIn, kDOut, 2);
  core::RowMatrix y(T, kDOut);
  const int threads = Eigen::nbThreads();
  Eigen::setNbThreads(1);
  for (auto _ : state) {
    y.noalias() = x * w;
    benchmark::DoNotOptimize(y.data());
  }
  Eigen::setNbThreads(threads);
  set_flops(state, T);
}
BENCHMARK(EigenProjection)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);

}  // namespace
