// rng.hpp: PyTorch's CPU generator, bit for bit (see docs/ARCHITECTURE.md and
// docs/torch-rng.md): mt19937 seeded like torch.manual_seed, with
// PyTorch's conversions from 32-bit words to floats and doubles.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "attnscope/base/matrix.hpp"

namespace attnscope::core {

// The 32-bit Mersenne Twister (same words as std::mt19937), generating its
// 624-word blocks in bulk so that long runs of draws vectorize.
class Mt19937 {
 public:
  explicit Mt19937(std::uint32_t seed);
  // The next tempered word.
  std::uint32_t operator()() {
    if (index_ == kN) regenerate();
    return tempered_[index_++];
  }
  // Writes the next n tempered words to out.
  void fill(std::uint32_t* out, std::size_t n);
  // For bulk readers, without a copy: the current block's tempered words not
  // yet taken (a new block is generated first when none are left). take(n)
  // then consumes the first n of them.
  std::span<const std::uint32_t> available();
  void take(std::size_t n) { index_ += n; }
  // Skips the next n words as if drawn: whole blocks are twisted but not
  // tempered (39 M words in ~7 ms).
  void discard(std::uint64_t n);

 private:
  static constexpr std::size_t kN = 624;
  void twist();       // next block of state, not tempered
  void regenerate();  // next block of state, tempered into tempered_
  std::array<std::uint32_t, kN> state_{};
  std::array<std::uint32_t, kN> tempered_{};
  std::size_t index_ = kN;
};

class TorchGenerator {
 public:
  // Same state as torch.manual_seed(seed): mt19937 seeded with seed mod 2^32.
  explicit TorchGenerator(std::uint64_t seed);

  // The next tempered 32-bit word.
  std::uint32_t next_u32() { return engine_(); }
  // One float uniform in [from, to) from one word, as Tensor.uniform_ does.
  float uniform_float(float from, float to);
  // One double uniform in [0, 1) from two words (hi, then lo), as bernoulli_ does.
  double uniform_double();

  // torch.rand(rows, cols) / Tensor.uniform_(from, to): row-major fill.
  void fill_uniform(RowMatrix& m, float from, float to);

  // nn.Dropout(p) in training mode on a tensor of `count` elements: writes
  // count keep-flags (1 kept, 0 dropped) in row-major order. Draws only when
  // 0 < p < 1; p == 0 keeps everything, p == 1 drops everything.
  void dropout_keep(double p, std::size_t count, std::uint8_t* keep);

  // Tensor.normal_(mean, std) on a contiguous float32 tensor of n elements
  // (nn.Embedding's init is normal_(0, 1)), as PyTorch 1.13's CPU kernel
  // compiled for AVX2 (docs/torch-rng.md, "Normal numbers"):
  //   n >= 16: n float uniforms, then Box-Muller on blocks of 16 (the first
  //            8 give the radii, the next 8 the angles); when n % 16 != 0 the
  //            last 16 elements are redone from 16 fresh uniforms;
  //   n < 16:  one double Box-Muller pair per two elements; the pair's second
  //            value is kept in the generator for the next normal draw.
  void fill_normal(float* out, std::size_t n, double mean, double std);
  // The same draws as fill_normal(n elements), but only elements index[k] of
  // that tensor are computed, into out[k]: a block of 16 is transformed only
  // when one of its elements is asked for, so row t of nn.Embedding(50257, 768)
  // costs 768 normals, not 38 M (the 38 M words are still drawn).
  void normal_select(std::size_t n, double mean, double std, std::span<const std::size_t> index,
                     float* out);

 private:
  double normal_double();  // one draw of at::normal_distribution<double>(0, 1)

  Mt19937 engine_;
  // The second value of the last double Box-Muller pair, not used yet
  // (PyTorch's next_double_normal_sample; manual_seed clears it).
  bool has_cached_normal_ = false;
  double cached_normal_ = 0.0;
};

}  // namespace attnscope::core
