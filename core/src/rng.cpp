// rng.cpp: PyTorch 1.13's CPU generator conversions (shared/docs/torch-rng.md).
#include "attnscope/rng.hpp"

#include <cmath>

namespace attnscope::core {

TorchGenerator::TorchGenerator(std::uint64_t seed)
    : engine_(static_cast<std::uint32_t>(seed & 0xffffffffULL)) {}

float TorchGenerator::uniform_float(float from, float to) {
  // 24 random bits: the float's mantissa width.
  const float x = static_cast<float>(next_u32() & 0xFFFFFFu) * (1.0f / 16777216.0f);
  // PyTorch's uniform kernel is compiled for AVX2+FMA, and the compiler fuses
  // x * (to - from) + from into one fused multiply-add (one rounding). With
  // from = 0, to = 1 (torch.rand) both roundings agree; for nn.Linear's
  // [-b, b) they differ in the last bit about one time in six, so fuse here too.
  // Verified bit for bit against python3-torch 1.13 (core/tests/test_rng.cpp).
  return std::fma(x, to - from, from);
}

double TorchGenerator::uniform_double() {
  const std::uint64_t hi = next_u32();
  const std::uint64_t lo = next_u32();
  const std::uint64_t v = (hi << 32) | lo;
  // 53 random bits: the double's mantissa width.
  return static_cast<double>(v & ((1ULL << 53) - 1)) * (1.0 / 9007199254740992.0);
}

void TorchGenerator::fill_uniform(RowMatrix& m, float from, float to) {
  float* p = m.data();
  const auto n = m.size();
  for (Eigen::Index i = 0; i < n; ++i) p[i] = uniform_float(from, to);
}

void TorchGenerator::dropout_keep(double p, std::size_t count, std::uint8_t* keep) {
  if (p <= 0.0 || p >= 1.0) {
    const std::uint8_t all = p >= 1.0 ? 0 : 1;
    for (std::size_t i = 0; i < count; ++i) keep[i] = all;
    return;
  }
  // bernoulli_(1 - p): an element survives when its uniform draw is below 1 - p.
  const double keep_prob = 1.0 - p;
  for (std::size_t i = 0; i < count; ++i) keep[i] = uniform_double() < keep_prob ? 1 : 0;
}

}  // namespace attnscope::core
