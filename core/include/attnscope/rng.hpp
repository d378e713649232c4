// rng.hpp: PyTorch's CPU generator, bit for bit (see docs/ARCHITECTURE.md and
// shared/docs/torch-rng.md): mt19937 seeded like torch.manual_seed, with
// PyTorch's conversions from 32-bit words to floats and doubles.
#pragma once

#include <cstdint>
#include <random>

#include "attnscope/matrix.hpp"

namespace attnscope::core {

class TorchGenerator {
 public:
  // Same state as torch.manual_seed(seed): mt19937 seeded with seed mod 2^32.
  explicit TorchGenerator(std::uint64_t seed);

  // The next tempered 32-bit word.
  std::uint32_t next_u32() { return static_cast<std::uint32_t>(engine_()); }
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
  std::mt19937 engine_;
};

}  // namespace attnscope::core
