// engine_bench.cpp: full traces at the sizes learners ask about, and the RNG.
// gemm_bench.cpp (the projection kernel) and figure_bench.cpp (the heatmap
// colouring) add their cases to the same executable; this file has its main.
//
//   build/bench/attnscope_bench                       all cases
//   build/bench/attnscope_bench --benchmark_filter=Multihead/1024
//
// Traces are "warm" (the module's parameters cached, as when the app
// recomputes after an edit) unless the case name says Cold.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "attnscope/analysis/memory.hpp"
#include "attnscope/attention/attention.hpp"
#include "attnscope/attention/embedding.hpp"
#include "attnscope/io/io.hpp"

namespace core = attnscope::core;

namespace {

// GPT-2-sized layer: d = 768, 12 heads, dropout 0.1, training mode.
core::Config gpt2_config() {
  core::Config c;
  c.variant = core::Variant::Multihead;
  c.d_out = 768;
  c.num_heads = 12;
  c.dropout = 0.1;
  c.seed = 123;
  return c;
}

core::Inputs random_inputs(int tokens, int d_in) { return core::random_inputs(tokens, d_in, 7); }

void Multihead(benchmark::State& state) {
  core::keep_freed_memory_for_reuse();
  const auto inputs = random_inputs(static_cast<int>(state.range(0)), 768);
  const auto config = gpt2_config();
  core::ParameterCache cache;
  for (auto _ : state) benchmark::DoNotOptimize(core::run_attention(config, inputs, cache));
}
BENCHMARK(Multihead)->Arg(6)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);

void MultiheadCold(benchmark::State& state) {
  core::keep_freed_memory_for_reuse();
  const auto inputs = random_inputs(static_cast<int>(state.range(0)), 768);
  const auto config = gpt2_config();
  for (auto _ : state) benchmark::DoNotOptimize(core::run_attention(config, inputs));
}
BENCHMARK(MultiheadCold)->Arg(6)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);

void MultiheadReferencePath(benchmark::State& state) {
  const auto inputs = random_inputs(static_cast<int>(state.range(0)), 768);
  const auto config = gpt2_config();
  for (auto _ : state)
    benchmark::DoNotOptimize(core::run_attention(config, inputs, core::EnginePath::Reference));
}
BENCHMARK(MultiheadReferencePath)->Arg(6)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond);

void BookCausal(benchmark::State& state) {
  core::Config c;
  c.variant = core::Variant::Causal;
  c.dropout = 0.5;
  const auto inputs = random_inputs(static_cast<int>(state.range(0)), 3);
  for (auto _ : state) benchmark::DoNotOptimize(core::run_attention(c, inputs));
}
BENCHMARK(BookCausal)->Arg(6)->Arg(64)->Unit(benchmark::kMicrosecond);

void RngDropoutDraws(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<std::uint8_t> keep(n);
  core::TorchGenerator gen(123);
  for (auto _ : state) {
    gen.dropout_keep(0.1, n, keep.data());
    benchmark::DoNotOptimize(keep.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(RngDropoutDraws)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

void RngUniformFill(benchmark::State& state) {
  core::RowMatrix m(768, 768);
  core::TorchGenerator gen(123);
  for (auto _ : state) {
    gen.fill_uniform(m, -0.036f, 0.036f);
    benchmark::DoNotOptimize(m.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * m.size());
}
BENCHMARK(RngUniformFill)->Unit(benchmark::kMillisecond);

// --text's inputs: 6 tokens' rows of nn.Embedding(50257, d_in) plus a
// positional nn.Embedding(1024, d_in); every word of both tables is drawn.
void Chapter2Embeddings(benchmark::State& state) {
  const std::vector<int> ids = {7120, 7002, 4940, 351, 530, 2239};
  const auto d_in = static_cast<int>(state.range(0));
  for (auto _ : state) {
    core::RowMatrix x = core::chapter2_embeddings(ids, d_in, 123, 1024);
    benchmark::DoNotOptimize(x.data());
  }
}
BENCHMARK(Chapter2Embeddings)->Arg(3)->Arg(768)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
