// test_rng.cpp: TorchGenerator against values PyTorch 1.13 printed (exact:
// the same words and the same float arithmetic give the same bits).
#include <bit>
#include <random>
#include <vector>

#include "test_support.hpp"

namespace attnscope::core {
namespace {

TEST(TorchGenerator, RandMatchesTorchRandBitForBit) {
  TorchGenerator gen(123);
  RowMatrix m(3, 2);
  gen.fill_uniform(m, 0.0f, 1.0f);
  const float expected[] = {0.29611194133758545f, 0.516562283039093f,   0.2516707181930542f,
                            0.6885567903518677f,  0.07397246360778809f, 0.866521954536438f};
  for (int k = 0; k < 6; ++k) EXPECT_EQ(m.data()[k], expected[k]) << k;
}

TEST(TorchGenerator, LinearInitMatchesNnLinearBitForBit) {
  // torch.manual_seed(789); nn.Linear(3, 2, bias=True)
  Config c;
  c.variant = Variant::SelfAttentionV2;
  c.qkv_bias = true;
  TorchGenerator gen(789);
  const Parameters p = init_parameters(c, 3, gen);
  const RowMatrix torch_weight = p.qkv[0].query.weight.transpose();  // (out, in)
  const float weight[] = {0.31605908274650574f,  0.45680856704711914f, 0.5118348598480225f,
                          -0.16828539967536926f, -0.3378770351409912f, -0.0917738676071167f};
  for (int k = 0; k < 6; ++k) EXPECT_EQ(torch_weight.data()[k], weight[k]) << k;
  EXPECT_EQ(p.qkv[0].query.bias(0, 0), 0.4058058261871338f);
  EXPECT_EQ(p.qkv[0].query.bias(0, 1), -0.4704205393791199f);
}

TEST(TorchGenerator, DoubleUniformUsesTwoWordsHighFirst) {
  // torch.manual_seed(5); torch.empty(3, dtype=torch.float64).uniform_()
  TorchGenerator gen(5);
  EXPECT_EQ(gen.uniform_double(), 0.6420150066280941);
  EXPECT_EQ(gen.uniform_double(), 0.2597579151763153);
  EXPECT_EQ(gen.uniform_double(), 0.36082761942715424);
}

TEST(TorchGenerator, SeedsAboveTwoToThe32UseTheLow32Bits) {
  TorchGenerator big((1ULL << 40) + 7);
  EXPECT_EQ(big.uniform_float(0, 1), 0.5349225401878357f);  // torch.manual_seed(2**40 + 7)
  TorchGenerator small(7);
  TorchGenerator big_again((1ULL << 40) + 7);
  for (int k = 0; k < 100; ++k) EXPECT_EQ(small.next_u32(), big_again.next_u32());
}

TEST(TorchGenerator, SeedZeroIsValid) {
  TorchGenerator gen(0);
  EXPECT_EQ(gen.uniform_float(0, 1), 0.49625658988952637f);
  EXPECT_EQ(gen.uniform_float(0, 1), 0.7682217955589294f);
}

TEST(TorchGenerator, DropoutWithPOneOrZeroDrawsNothing) {
  TorchGenerator a(42), b(42);
  std::uint8_t keep[16];
  a.dropout_keep(1.0, 16, keep);
  for (auto k : keep) EXPECT_EQ(k, 0);
  a.dropout_keep(0.0, 16, keep);
  for (auto k : keep) EXPECT_EQ(k, 1);
  EXPECT_EQ(a.next_u32(), b.next_u32()) << "no words were consumed";
}

TEST(TorchGenerator, DropoutPointOneOfOnesMatchesTorch) {
  // torch.manual_seed(123); nn.Dropout(0.1)(torch.ones(2, 8)) drops only (1, 0).
  TorchGenerator gen(123);
  std::uint8_t keep[16];
  gen.dropout_keep(0.1, 16, keep);
  for (int k = 0; k < 16; ++k) EXPECT_EQ(keep[k], k == 8 ? 0 : 1) << k;
}

}  // namespace
}  // namespace attnscope::core

namespace attnscope::core {
namespace {

TEST(Mt19937, SameWordsAsStdMt19937AcrossManyBlocks) {
  for (std::uint32_t seed : {0u, 1u, 123u, 5489u, 0xffffffffu}) {
    Mt19937 fast(seed);
    std::mt19937 reference(seed);
    std::vector<std::uint32_t> bulk(3000);
    for (int k = 0; k < 1000; ++k)
      ASSERT_EQ(fast(), reference()) << "seed " << seed << " word " << k;
    fast.fill(bulk.data(), bulk.size());  // crosses block boundaries mid-fill
    for (std::size_t k = 0; k < bulk.size(); ++k)
      ASSERT_EQ(bulk[k], reference()) << "seed " << seed << " bulk word " << k;
  }
}

TEST(TorchGenerator, BulkDropoutEqualsOneDoubleDrawPerElement) {
  // The integer-threshold fast path against the definition: keep when u < 1 - p.
  // Words taken before: none, an odd number (so draws straddle the 624-word
  // blocks), a block but one; counts that are and are not multiples of the
  // four draws the vector loop makes per step.
  for (double p : {0.1, 0.25, 0.5, 0.9, 1e-9, 1 - 1e-9})
    for (int skipped : {0, 1, 623})
      for (std::size_t count : {std::size_t{10000}, std::size_t{3}, std::size_t{1251}}) {
        TorchGenerator fast(99), slow(99);
        for (int k = 0; k < skipped; ++k) ASSERT_EQ(fast.next_u32(), slow.next_u32());
        std::vector<std::uint8_t> keep(count);
        fast.dropout_keep(p, keep.size(), keep.data());
        for (std::size_t k = 0; k < keep.size(); ++k)
          ASSERT_EQ(keep[k], slow.uniform_double() < 1.0 - p ? 1 : 0)
              << "p " << p << ", " << skipped << " words before, at " << k;
        EXPECT_EQ(fast.next_u32(), slow.next_u32()) << "same number of words consumed";
      }
}

}  // namespace
}  // namespace attnscope::core

namespace attnscope::core {
namespace {

TEST(TorchGenerator, BulkFillEqualsOneUniformPerElement) {
  TorchGenerator bulk(31), single(31);
  RowMatrix m(97, 131);  // crosses several 624-word blocks and fill chunks
  bulk.fill_uniform(m, -0.3f, 0.3f);
  for (Eigen::Index k = 0; k < m.size(); ++k)
    ASSERT_EQ(m.data()[k], single.uniform_float(-0.3f, 0.3f)) << k;
}

}  // namespace
}  // namespace attnscope::core

// ---------------------------------------------------------------------------
// Tensor.normal_: bit patterns printed by python3-torch 1.13 (AVX2 build):
//   torch.manual_seed(123); t = torch.empty(n).normal_(mean, std)
//   t.numpy().view(numpy.uint32); then torch.rand(1) for the words consumed

namespace attnscope::core {
namespace {

struct NormalCase {
  std::size_t n;
  double mean;
  double std;
  std::vector<std::uint32_t> bits;
  std::uint32_t next_rand_bits;  // torch.rand(1) right after
};

std::uint32_t bits_of(float v) { return std::bit_cast<std::uint32_t>(v); }

// FNV-1a over the floats' little-endian bytes, as numpy's tobytes() gives them.
std::uint64_t fnv1a(const std::vector<float>& v) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const float x : v)
    for (int b = 0; b < 4; ++b) {
      h ^= (bits_of(x) >> (8 * b)) & 0xffu;
      h *= 0x100000001b3ull;
    }
  return h;
}

TEST(TorchGenerator, NormalMatchesTorchBitForBit) {
  const std::vector<NormalCase> cases = {
      // n < 16: double Box-Muller pairs (4 words per pair)
      {1, 0, 1, {0xbde448dfu}, 0x3d977ee0u},
      {7,
       0,
       1,
       {0xbde448dfu, 0x3df680d9u, 0xbebd40bcu, 0xbe763021u, 0xbf9934d1u, 0x3e564ab5u, 0xbf78ec42u},
       0x3df2d3f0u},
      {15,
       0,
       1,
       {0xbde448dfu, 0x3df680d9u, 0xbebd40bcu, 0xbe763021u, 0xbf9934d1u, 0x3e564ab5u, 0xbf78ec42u,
        0xbf414aa9u, 0x3ea5d695u, 0xbdde411du, 0x3e57610du, 0xbec81c8du, 0x3e709cdfu, 0x3f2a4e82u,
        0x3eb4a4ecu},
       0x3f37c737u},
      {7,
       -1.0,
       0.25,
       {0xbf839123u, 0xbf784bf9u, 0xbf8bd40cu, 0xbf87b181u, 0xbfa64d34u, 0xbf729b55u, 0xbf9f1d88u},
       0x3df2d3f0u},
      // n >= 16: blocks of 16 float uniforms
      {16,
       0,
       1,
       {0x3eacbbc9u, 0xbe360b3bu, 0xbe9b67f8u, 0xbf1687f2u, 0x3eb27c61u, 0x3f290c1bu, 0xbe60e8afu,
        0xbec2228cu, 0x3f446121u, 0xbf98a3e8u, 0x3f32c731u, 0xbfb471cdu, 0x3e37af4au, 0x3ff29436u,
        0x3efdab26u, 0x3e89d465u},
       0x3df2d3f0u},
      // 17: the last 16 redone from 16 more words; only element 0 keeps block 0's value
      {17,
       0,
       1,
       {0x3eacbbc9u, 0xbf829ed3u, 0xbe2d02e0u, 0x3f6af29fu, 0x3fca5d36u, 0x3fa6887au, 0x3fa33d12u,
        0xbe4dc6a6u, 0xbe246ad5u, 0xbfc94144u, 0x3f77713cu, 0xbf92f662u, 0xbf9455c8u, 0x3ea6a423u,
        0xbf21aa56u, 0xc035c276u, 0xbf48ec26u},
       0x3f34b1c3u},
      {17,
       0.5,
       2.0,
       {0x3f965de4u, 0xbfc53da6u, 0x3e25fa40u, 0x40157950u, 0x406a5d36u, 0x4046887au, 0x40433d12u,
        0x3dc8e568u, 0x3e372a56u, 0xc0294144u, 0x401bb89eu, 0xbfe5ecc4u, 0xbfe8ab90u, 0x3f935212u,
        0xbf4354acu, 0xc0a5c276u, 0xbf88ec26u},
       0x3f34b1c3u},
      {31,
       0,
       1,
       {0x3eacbbc9u, 0xbe360b3bu, 0xbe9b67f8u, 0xbf1687f2u, 0x3eb27c61u, 0x3f290c1bu, 0xbe60e8afu,
        0xbec2228cu, 0x3f446121u, 0xbf98a3e8u, 0x3f32c731u, 0xbfb471cdu, 0x3e37af4au, 0x3ff29436u,
        0x3efdab26u, 0xbfcd37f5u, 0xbfa99834u, 0x3e36b5f2u, 0xc0088f69u, 0x3f86b3a9u, 0xbec6e741u,
        0xbf6f314bu, 0xbeff8fd1u, 0xbeacf935u, 0x3f616b5au, 0x3fc6eeabu, 0x3f2069e9u, 0xbe33b2ebu,
        0x3dc94901u, 0xbdbf80d3u, 0x3e884d4cu},
       0x3f141f5cu},
      {32,
       0,
       1,
       {0x3eacbbc9u, 0xbe360b3bu, 0xbe9b67f8u, 0xbf1687f2u, 0x3eb27c61u, 0x3f290c1bu, 0xbe60e8afu,
        0xbec2228cu, 0x3f446121u, 0xbf98a3e8u, 0x3f32c731u, 0xbfb471cdu, 0x3e37af4au, 0x3ff29436u,
        0x3efdab26u, 0x3e89d465u, 0xbd9dbcc9u, 0xbf829ed3u, 0xbe2d02e0u, 0x3f6af29fu, 0x3fca5d36u,
        0x3fa6887au, 0x3fa33d12u, 0xbe4dc6a6u, 0x3efe3172u, 0xbfc94144u, 0x3f77713cu, 0xbf92f662u,
        0xbf9455c8u, 0x3ea6a423u, 0xbf21aa56u, 0xc035c276u},
       0x3f37c737u},
  };
  for (const NormalCase& c : cases) {
    TorchGenerator gen(123);
    std::vector<float> out(c.n);
    gen.fill_normal(out.data(), c.n, c.mean, c.std);
    for (std::size_t k = 0; k < c.n; ++k)
      EXPECT_EQ(bits_of(out[k]), c.bits[k]) << "n " << c.n << " mean " << c.mean << " at " << k;
    EXPECT_EQ(bits_of(gen.uniform_float(0.0f, 1.0f)), c.next_rand_bits) << "n " << c.n;
  }
}

TEST(TorchGenerator, LongNormalMatchesTorchChecksum) {
  // n = 100 (a tail of 4) and 50257 * 3 (nn.Embedding(50257, 3)): whole-tensor
  // checksums (FNV-1a of the bytes) and a few elements around block edges.
  struct Long {
    std::size_t n;
    std::uint64_t fnv;
    std::vector<std::pair<std::size_t, std::uint32_t>> samples;
    std::uint32_t next_rand_bits;
  };
  const std::vector<Long> cases = {
      {100,
       0x6437d430d777fda8ull,
       {{0, 0x3eacbbc9u},
        {15, 0x3e89d465u},
        {16, 0xbd9dbcc9u},
        {83, 0x3f53c567u},
        {84, 0xbd0280eeu},
        {99, 0xbf654b56u}},
       0x3def8458u},
      {150771,
       0xf09a971005943c62ull,
       {{0, 0x3eacbbc9u},
        {15, 0x3e89d465u},
        {16, 0xbd9dbcc9u},
        {150754, 0xbfb98668u},
        {150755, 0xbe8ebaf5u},
        {150770, 0xbfa1fe46u}},
       0x3e9dbb0au},
  };
  for (const Long& c : cases) {
    TorchGenerator gen(123);
    std::vector<float> out(c.n);
    gen.fill_normal(out.data(), c.n, 0.0, 1.0);
    EXPECT_EQ(fnv1a(out), c.fnv) << "n " << c.n;
    for (const auto& [i, b] : c.samples)
      EXPECT_EQ(bits_of(out[i]), b) << "n " << c.n << " at " << i;
    EXPECT_EQ(bits_of(gen.uniform_float(0.0f, 1.0f)), c.next_rand_bits) << "n " << c.n;
  }
}

TEST(TorchGenerator, NormalPairsSecondValueWaitsForTheNextDraw) {
  // PyTorch keeps the pair's sine in the generator: normal_ of 3 then of 1
  // gives the 4 values of one normal_ of 4, even with a 16-element fill between.
  TorchGenerator one(5), split(5);
  float four[4];
  one.fill_normal(four, 4, 0.0, 1.0);
  float first[3], block[16], last = 0.0f;
  split.fill_normal(first, 3, 0.0, 1.0);
  split.fill_normal(block, 16, 0.0, 1.0);
  split.fill_normal(&last, 1, 0.0, 1.0);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(first[k], four[k]) << k;
  EXPECT_EQ(last, four[3]);
}

TEST(TorchGenerator, NormalSelectEqualsTheWholeFill) {
  for (std::size_t n : {std::size_t{5}, std::size_t{16}, std::size_t{33}, std::size_t{1000},
                        std::size_t{1007}, std::size_t{5000}}) {
    TorchGenerator whole(77), picked(77);
    std::vector<float> all(n);
    whole.fill_normal(all.data(), n, 0.25, 1.5);
    std::vector<std::size_t> index = {n - 1, 0, n / 2, n - 1, n > 20 ? n - 17 : 1, 3};
    std::vector<float> out(index.size());
    picked.normal_select(n, 0.25, 1.5, index, out.data());
    for (std::size_t k = 0; k < index.size(); ++k)
      EXPECT_EQ(out[k], all[index[k]]) << "n " << n << " element " << index[k];
    EXPECT_EQ(picked.next_u32(), whole.next_u32()) << "n " << n << ": same words consumed";
  }
}

TEST(Mt19937, DiscardEqualsDrawing) {
  for (std::uint64_t skip : {0ull, 1ull, 623ull, 624ull, 625ull, 5000ull}) {
    Mt19937 drawn(11), skipped(11);
    drawn();
    skipped();
    for (std::uint64_t k = 0; k < skip; ++k) drawn();
    skipped.discard(skip);
    EXPECT_EQ(skipped(), drawn()) << skip;
  }
}

}  // namespace
}  // namespace attnscope::core
