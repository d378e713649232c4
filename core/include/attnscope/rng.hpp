// rng.hpp: PyTorch's CPU generator, bit for bit (see docs/ARCHITECTURE.md and
// docs/torch-rng.md): mt19937 seeded like torch.manual_seed, with
// PyTorch's conversions from 32-bit words to floats and doubles.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "attnscope/matrix.hpp"

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

 private:
  static constexpr std::size_t kN = 624;
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

 private:
  Mt19937 engine_;
};

}  // namespace attnscope::core
