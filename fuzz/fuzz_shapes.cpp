// fuzz_shapes.cpp: GPT-2 forwards at shapes the fuzzer picks, against the
// double-precision reference of core/tests/gpt2_reference.hpp.
//
// The input's first bytes choose a small random model (heads, head_dim up
// to 136, width up to 256, one or two layers, MLP width, vocabulary,
// activation, score scaling), a length T up to 2 max(8, head_dim) + 40, the
// weights' seed, and how the text arrives: in one run, or a shorter run and
// then appends one token at a time (with the default cache, or none). Any
// disagreement with the reference aborts with its location; a buffer sized
// for one dimension and filled along another is caught by the sanitizers.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpt2_reference.hpp"

namespace core = attnscope::core;

namespace {

// The input as a stream of bytes, zeros once it runs out.
struct Bytes {
  const std::uint8_t* data;
  std::size_t size, at = 0;
  unsigned next() { return at < size ? data[at++] : 0u; }
  unsigned next16() {
    const unsigned low = next();
    return low | next() << 8;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes in{data, size};
  core::Gpt2Config c;
  c.n_head = 1 + static_cast<int>(in.next() % 4);
  const int widest = std::min(136, 256 / c.n_head);
  const int head_dim = 1 + static_cast<int>(in.next() % static_cast<unsigned>(widest));
  c.n_embd = c.n_head * head_dim;
  const unsigned flags = in.next();
  c.n_layer = 1 + static_cast<int>(flags & 1u);
  constexpr core::Gpt2Activation kActivations[] = {
      core::Gpt2Activation::GeluNew, core::Gpt2Activation::GeluPytorchTanh,
      core::Gpt2Activation::Gelu, core::Gpt2Activation::Relu};
  c.activation_function = kActivations[(flags >> 1) & 3u];
  c.scale_attn_weights = (flags & 8u) == 0;
  c.scale_attn_by_inverse_layer_idx = (flags & 16u) != 0;
  const bool appends = (flags & 32u) != 0, no_cache = (flags & 64u) != 0;
  c.n_inner = 1 + static_cast<int>(in.next() % 48);
  c.vocab_size = 2 + static_cast<int>(in.next() % 62);
  const int longest = 2 * std::max(8, head_dim) + 40;
  const int T = 1 + static_cast<int>(in.next16() % static_cast<unsigned>(longest));
  const unsigned start = in.next16();  // read either way: the seed's bytes stay where they are
  const int t0 = appends ? 1 + static_cast<int>(start % static_cast<unsigned>(T)) : T;
  std::uint64_t seed = 0;
  for (int k = 0; k < 8; ++k) seed = seed << 8 | in.next();
  c.n_positions = T;

  const auto model = core::testing::sharp_random_gpt2(c, seed);
  const std::vector<int> ids = core::testing::sweep_ids(T, c.vocab_size, seed);
  const core::testing::ReferenceForward ref = core::testing::reference_forward(*model, ids);
  core::ModelRun::Options options;
  if (no_cache) options.cache_bytes = 0;
  core::ModelRun run(model, std::vector<int>(ids.begin(), ids.begin() + t0), options);
  for (int t = t0; t < T; ++t) run.append(ids[static_cast<std::size_t>(t)]);
  const std::string mismatch = core::testing::compare_with_reference(run, ref);
  if (!mismatch.empty()) {
    std::fprintf(stderr,
                 "fuzz_shapes: %d heads of %d, %d layers, n_inner %d, vocab %d, T %d (fresh "
                 "%d, then appends), %s: %s\n",
                 c.n_head, head_dim, c.n_layer, c.n_inner, c.vocab_size, T, t0,
                 no_cache ? "no cache" : "cache", mismatch.c_str());
    std::abort();
  }
  return 0;
}
