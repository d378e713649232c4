// figure_bench.cpp: the heatmap colouring, what the app and the exporters run
// on every stage of a new trace: the value range, then one RGBA pixel per
// cell (app/figure/scale.hpp). At T = 1024 with 12 heads the app colours
// ~14 stages of 1024 x 1024 per trace.
//
//   build/bench/attnscope_bench --benchmark_filter=Colorize
#include <benchmark/benchmark.h>

#include <cmath>
#include <limits>

#include "attnscope/base/rng.hpp"
#include "figure/scale.hpp"

namespace core = attnscope::core;
namespace figure = attnscope::figure;

namespace {

// Causal attention weights of T random scores: each row's softmax over its
// first i + 1 keys, zeros above the diagonal (a Sequential stage).
core::RowMatrix causal_weights(Eigen::Index T) {
  core::RowMatrix s(T, T);
  core::TorchGenerator gen(5);
  gen.fill_uniform(s, -1.0f, 1.0f);
  for (Eigen::Index i = 0; i < T; ++i) {
    float sum = 0.0f;
    for (Eigen::Index j = 0; j <= i; ++j) sum += (s(i, j) = std::exp(s(i, j)));
    for (Eigen::Index j = 0; j < T; ++j) s(i, j) = j <= i ? s(i, j) / sum : 0.0f;
  }
  return s;
}

// Masked scores: random values with -inf above the diagonal (Diverging,
// the masked cells off the scale).
core::RowMatrix masked_scores(Eigen::Index T) {
  core::RowMatrix s(T, T);
  core::TorchGenerator gen(6);
  gen.fill_uniform(s, -3.0f, 3.0f);
  for (Eigen::Index i = 0; i < T; ++i)
    for (Eigen::Index j = i + 1; j < T; ++j) s(i, j) = -std::numeric_limits<float>::infinity();
  return s;
}

void colorize_case(benchmark::State& state, const core::RowMatrix& m, figure::ScaleKind kind) {
  const figure::Colormap map = figure::colormap_for(figure::Palette::Standard, kind);
  for (auto _ : state) {
    const figure::ValueRange range = figure::value_range(m, kind);
    const figure::RgbaImage image = figure::colorize(m, range, map);
    benchmark::DoNotOptimize(image.pixels.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * m.size());
}

void ColorizeWeights(benchmark::State& state) {
  colorize_case(state, causal_weights(state.range(0)), figure::ScaleKind::Sequential);
}
BENCHMARK(ColorizeWeights)->Arg(6)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);

void ColorizeMaskedScores(benchmark::State& state) {
  colorize_case(state, masked_scores(state.range(0)), figure::ScaleKind::Diverging);
}
BENCHMARK(ColorizeMaskedScores)
    ->Arg(6)
    ->Arg(64)
    ->Arg(256)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond);

}  // namespace
