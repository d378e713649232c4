// rng.cpp: PyTorch 1.13's CPU generator (docs/torch-rng.md).
//
// Sections
//   1. Mt19937: the reference recurrence, written so the compiler vectorizes it
//   2. TorchGenerator: words -> floats, doubles and dropout keep-flags
#include "attnscope/rng.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace attnscope::core {

// ---------------------------------------------------------------------------
// 1. Mt19937 (Matsumoto & Nishimura; identical words to std::mt19937)

namespace {
constexpr std::size_t kM = 397;
constexpr std::uint32_t kMatrixA = 0x9908b0dfu;

inline std::uint32_t twist(std::uint32_t current, std::uint32_t next, std::uint32_t far) {
  const std::uint32_t y = (current & 0x80000000u) | (next & 0x7fffffffu);
  return far ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
}

inline std::uint32_t temper(std::uint32_t y) {
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}
}  // namespace

Mt19937::Mt19937(std::uint32_t seed) {
  state_[0] = seed;  // init_genrand
  for (std::size_t i = 1; i < kN; ++i)
    state_[i] =
        1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
}

void Mt19937::regenerate() {
  std::uint32_t* mt = state_.data();
  // Three loops with fixed dependence distances (1 ahead, 397 ahead, 227
  // behind), each of which the compiler can vectorize.
  for (std::size_t i = 0; i < kN - kM; ++i) mt[i] = twist(mt[i], mt[i + 1], mt[i + kM]);
  for (std::size_t i = kN - kM; i < kN - 1; ++i) mt[i] = twist(mt[i], mt[i + 1], mt[i + kM - kN]);
  mt[kN - 1] = twist(mt[kN - 1], mt[0], mt[kM - 1]);
  for (std::size_t i = 0; i < kN; ++i) tempered_[i] = temper(mt[i]);
  index_ = 0;
}

void Mt19937::fill(std::uint32_t* out, std::size_t n) {
  while (n > 0) {
    if (index_ == kN) regenerate();
    const std::size_t take = std::min(n, kN - index_);
    std::copy_n(tempered_.data() + index_, take, out);
    index_ += take;
    out += take;
    n -= take;
  }
}

std::span<const std::uint32_t> Mt19937::available() {
  if (index_ == kN) regenerate();
  return {tempered_.data() + index_, kN - index_};
}

// ---------------------------------------------------------------------------
// 2. TorchGenerator

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
  // uniform_float in bulk: words first, then a conversion loop that vectorizes.
  float* p = m.data();
  const auto n = static_cast<std::size_t>(m.size());
  const float span = to - from;
  constexpr std::size_t kChunk = 4096;
  std::uint32_t words[kChunk];
  for (std::size_t done = 0; done < n;) {
    const std::size_t take = std::min(n - done, kChunk);
    engine_.fill(words, take);
    for (std::size_t k = 0; k < take; ++k) {
      const float x = static_cast<float>(words[k] & 0xFFFFFFu) * (1.0f / 16777216.0f);
      p[done + k] = std::fma(x, span, from);  // as uniform_float
    }
    done += take;
  }
}

namespace {

constexpr std::uint64_t kLow53 = (1ULL << 53) - 1;

// Keep-flags for n draws from 2n words (each draw: the first word high, the
// second low): 1 when the draw's low 53 bits are below the threshold.
void keep_flags(const std::uint32_t* w, std::size_t n, std::uint64_t threshold, std::uint8_t* out) {
  std::size_t k = 0;
#if defined(__AVX2__)
  // Four draws per step. Swapping the words of each 64-bit lane makes it
  // (first << 32) | second; the threshold is at most 2^53, so the signed
  // 64-bit compare is exact. Its four results become four bytes through a
  // 16-entry table.
  static constexpr auto kBytes = [] {
    std::array<std::uint32_t, 16> t{};
    for (std::uint32_t bits = 0; bits < 16; ++bits)
      for (std::uint32_t i = 0; i < 4; ++i) t[bits] |= ((bits >> i) & 1u) << (8 * i);
    return t;
  }();
  const __m256i low53 = _mm256_set1_epi64x(static_cast<long long>(kLow53));
  const __m256i limit = _mm256_set1_epi64x(static_cast<long long>(threshold));
  for (; k + 4 <= n; k += 4) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 2 * k));
    v = _mm256_and_si256(_mm256_shuffle_epi32(v, 0xB1), low53);
    const __m256i kept = _mm256_cmpgt_epi64(limit, v);  // v < threshold
    const int bits = _mm256_movemask_pd(_mm256_castsi256_pd(kept));
    std::memcpy(out + k, &kBytes[static_cast<std::size_t>(bits)], 4);
  }
#endif
  for (; k < n; ++k) {
    const std::uint64_t v = (static_cast<std::uint64_t>(w[2 * k]) << 32) | w[2 * k + 1];
    out[k] = (v & kLow53) < threshold ? 1 : 0;
  }
}

}  // namespace

void TorchGenerator::dropout_keep(double p, std::size_t count, std::uint8_t* keep) {
  if (p <= 0.0 || p >= 1.0) {
    std::fill_n(keep, count, static_cast<std::uint8_t>(p >= 1.0 ? 0 : 1));
    return;
  }
  // bernoulli_(1 - p) keeps an element when u < 1 - p, u = m * 2^-53 with m
  // the draw's low 53 bits. Scaling by 2^53 is exact, so that is the integer
  // test m < ceil((1 - p) * 2^53): no double conversion per draw.
  const double keep_prob = 1.0 - p;
  const auto threshold = static_cast<std::uint64_t>(std::ceil(keep_prob * 9007199254740992.0));
  // Straight from the generator's blocks of words; a draw whose two words
  // fall in two blocks (after an odd number of words) is made on its own.
  for (std::size_t done = 0; done < count;) {
    const std::span<const std::uint32_t> words = engine_.available();
    if (words.size() < 2) {
      const std::uint32_t hi = next_u32();
      keep_flags(std::array<std::uint32_t, 2>{hi, next_u32()}.data(), 1, threshold, keep + done);
      ++done;
      continue;
    }
    const std::size_t n = std::min(count - done, words.size() / 2);
    keep_flags(words.data(), n, threshold, keep + done);
    engine_.take(2 * n);
    done += n;
  }
}

}  // namespace attnscope::core
