// rng.cpp: PyTorch 1.13's CPU generator (docs/torch-rng.md).
//
// Sections
//   1. Mt19937: the reference recurrence, written so the compiler vectorizes it
//   2. TorchGenerator: words -> floats, doubles and dropout keep-flags
//   3. normal numbers: Tensor.normal_ (nn.Embedding's init)
#include "attnscope/base/rng.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <numbers>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace attnscope::core {

// ---------------------------------------------------------------------------
// 1. Mt19937 (Matsumoto & Nishimura; identical words to std::mt19937)

namespace {
constexpr std::size_t kM = 397;
constexpr std::uint32_t kMatrixA = 0x9908b0dfu;

inline std::uint32_t twist_word(std::uint32_t current, std::uint32_t next, std::uint32_t far) {
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

void Mt19937::twist() {
  std::uint32_t* mt = state_.data();
  // Three loops with fixed dependence distances (1 ahead, 397 ahead, 227
  // behind), each of which the compiler can vectorize.
  for (std::size_t i = 0; i < kN - kM; ++i) mt[i] = twist_word(mt[i], mt[i + 1], mt[i + kM]);
  for (std::size_t i = kN - kM; i < kN - 1; ++i)
    mt[i] = twist_word(mt[i], mt[i + 1], mt[i + kM - kN]);
  mt[kN - 1] = twist_word(mt[kN - 1], mt[0], mt[kM - 1]);
}

void Mt19937::regenerate() {
  twist();
  for (std::size_t i = 0; i < kN; ++i) tempered_[i] = temper(state_[i]);
  index_ = 0;
}

void Mt19937::discard(std::uint64_t n) {
  // The rest of the current block, then whole blocks untempered, then part
  // of one more block.
  const std::uint64_t here = std::min<std::uint64_t>(n, kN - index_);
  index_ += static_cast<std::size_t>(here);
  n -= here;
  for (; n >= kN; n -= kN) twist();
  if (n > 0) {
    regenerate();
    index_ = static_cast<std::size_t>(n);
  }
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

// ---------------------------------------------------------------------------
// 3. Normal numbers
//
// PyTorch 1.13's normal_ on a float tensor of >= 16 elements, as its AVX2
// build runs it: Box-Muller on blocks of 16 uniforms, with a logarithm and a
// sine/cosine that are Cephes polynomials in float (the AVX port of Julien
// Pommier's sse_mathfun), not libm's. Each step below is one vector
// instruction of that kernel, one lane at a time. GCC built the kernel with
// FMA contraction on, so every multiply whose only use is an add or subtract
// became one fused multiply-add (the first such multiply in program order
// when two qualify); std::fma marks those. Checked bit for bit against
// python3-torch 1.13 (core/tests/test_rng.cpp, app/tests/cli_text_test.py).

namespace {

// ln(x) for 0 < x <= 1: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), then a
// degree-9 polynomial in m - 1 and e * ln 2 split in two parts.
float cephes_log(float x) {
  const float smallest_normal = std::bit_cast<float>(0x00800000u);
  x = std::max(x, smallest_normal);
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  float e = static_cast<float>(static_cast<int>(bits >> 23) - 127) + 1.0f;
  x = std::bit_cast<float>((bits & ~0x7f800000u) | std::bit_cast<std::uint32_t>(0.5f));  // [0.5, 1)
  const bool small = x < 0.707106781186547524f;
  const float extra = small ? x : 0.0f;
  x = x - 1.0f;
  e = e - (small ? 1.0f : 0.0f);
  x = x + extra;
  const float z = x * x;
  float y = std::fma(7.0376836292E-2f, x, -1.1514610310E-1f);
  for (const float c : {1.1676998740E-1f, -1.2420140846E-1f, 1.4249322787E-1f, -1.6668057665E-1f,
                        2.0000714765E-1f, -2.4999993993E-1f, 3.3333331174E-1f})
    y = std::fma(y, x, c);
  y = y * x;
  y = std::fma(y, z, e * -2.12194440e-4f);
  y = std::fma(-z, 0.5f, y);
  x = x + y;
  return std::fma(e, 0.693359375f, x);
}

// sin and cos of x >= 0: reduced to [-pi/4, pi/4] around the nearest even
// multiple j of pi/4 (pi/4 in three parts), then two polynomials; bits 1 and 2
// of j choose the polynomial and the signs.
void cephes_sincos(float x, float& sin_out, float& cos_out) {
  const int j = (static_cast<int>(x * 1.27323954473516f) + 1) & ~1;
  const auto y = static_cast<float>(j);
  x = std::fma(y, -0.78515625f, x);
  x = std::fma(y, -2.4187564849853515625e-4f, x);
  x = std::fma(y, -3.77489497744594108e-8f, x);
  const float z = x * x;
  float c = std::fma(2.443315711809948E-005f, z, -1.388731625493765E-003f);
  c = std::fma(c, z, 4.166664568298827E-002f);
  c = c * z;
  c = std::fma(c, z, -(z * 0.5f));
  c = c + 1.0f;
  float s = std::fma(-1.9515295891E-4f, z, 8.3321608736E-3f);
  s = std::fma(s, z, -1.6666654611E-1f);
  s = s * z;
  s = std::fma(s, x, x);
  // The kernel selects by masking and adding zeros; kept, for the signs of zeros.
  const bool sine_poly = (j & 2) == 0;
  const float sin_part_s = sine_poly ? s : 0.0f;
  const float sin_part_c = sine_poly ? 0.0f : c;
  const float sine = sin_part_c + sin_part_s;
  const float cosine = (c - sin_part_c) + (s - sin_part_s);
  sin_out = (j & 4) ? -sine : sine;
  cos_out = (~(j - 2) & 4) ? -cosine : cosine;
}

// Box-Muller on one block of 16 uniforms u, in place: for k < 8, radius
// sqrt(-2 ln(1 - u[k])) and angle 2 pi u[k + 8] give u[k] = mean + std *
// radius * cos and u[k + 8] = mean + std * radius * sin.
void box_muller_16(float* u, float mean, float std) {
  const auto two_pi = static_cast<float>(2.0 * std::numbers::pi);
  for (std::size_t k = 0; k < 8; ++k) {
    const float radius = std::sqrt(-2.0f * cephes_log(1.0f - u[k]));
    float sine = 0.0f;
    float cosine = 0.0f;
    cephes_sincos(two_pi * u[k + 8], sine, cosine);
    u[k] = std::fma(radius * cosine, std, mean);
    u[k + 8] = std::fma(radius * sine, std, mean);
  }
}

float unit_float(std::uint32_t word) {
  return static_cast<float>(word & 0xFFFFFFu) * (1.0f / 16777216.0f);
}

}  // namespace

double TorchGenerator::normal_double() {
  if (has_cached_normal_) {
    has_cached_normal_ = false;
    return cached_normal_;
  }
  const double u1 = uniform_double();
  const double u2 = uniform_double();
  const double radius = std::sqrt(-2.0 * std::log(1.0 - u2));
  const double angle = 2.0 * std::numbers::pi * u1;
  cached_normal_ = radius * std::sin(angle);
  has_cached_normal_ = true;
  return radius * std::cos(angle);
}

void TorchGenerator::fill_normal(float* out, std::size_t n, double mean, double std) {
  if (n < 16) {
    // at::normal_distribution<double> per element, rounded to float at the end.
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(normal_double() * std + mean);
    return;
  }
  const auto m = static_cast<float>(mean);
  const auto s = static_cast<float>(std);
  for (std::size_t i = 0; i < n; ++i) out[i] = unit_float(next_u32());
  for (std::size_t i = 0; i + 16 <= n; i += 16) box_muller_16(out + i, m, s);
  if (n % 16 != 0) {
    float* last = out + (n - 16);
    for (std::size_t k = 0; k < 16; ++k) last[k] = unit_float(next_u32());
    box_muller_16(last, m, s);
  }
}

void TorchGenerator::normal_select(std::size_t n, double mean, double std,
                                   std::span<const std::size_t> index, float* out) {
  if (n < 16) {
    std::array<float, 16> all{};
    fill_normal(all.data(), n, mean, std);
    for (std::size_t k = 0; k < index.size(); ++k) out[k] = all[index[k]];
    return;
  }
  // Which block of 16 each element comes from: its own, or with n % 16 != 0
  // the redone last 16 (block number n / 16 + 1 here, drawn after the n words).
  const bool has_tail = n % 16 != 0;
  const std::size_t tail_block = n / 16 + 1;
  auto block_of = [&](std::size_t i) { return has_tail && i + 16 >= n ? tail_block : i / 16; };
  std::map<std::size_t, std::array<float, 16>> blocks;  // ordered: the stream is read forward
  for (const std::size_t i : index) blocks.emplace(block_of(i), std::array<float, 16>{});
  const auto m = static_cast<float>(mean);
  const auto s = static_cast<float>(std);
  std::uint64_t drawn = 0;  // words taken since the start of this normal_
  std::array<std::uint32_t, 16> words{};
  auto draw_block = [&](std::array<float, 16>& block) {
    engine_.fill(words.data(), 16);
    for (std::size_t k = 0; k < 16; ++k) block[k] = unit_float(words[k]);
    box_muller_16(block.data(), m, s);
    drawn += 16;
  };
  for (auto& [b, block] : blocks) {
    if (b == tail_block) break;
    engine_.discard(16 * b - drawn);
    drawn = 16 * b;
    draw_block(block);
  }
  engine_.discard(n - drawn);
  if (has_tail) {
    const auto tail = blocks.find(tail_block);
    if (tail != blocks.end())
      draw_block(tail->second);
    else
      engine_.discard(16);
  }
  for (std::size_t k = 0; k < index.size(); ++k) {
    const std::size_t b = block_of(index[k]);
    const std::size_t start = b == tail_block ? n - 16 : 16 * b;
    out[k] = blocks.at(b)[index[k] - start];
  }
}

}  // namespace attnscope::core
