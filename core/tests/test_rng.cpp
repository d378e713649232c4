// test_rng.cpp: TorchGenerator against values PyTorch 1.13 printed (exact:
// the same words and the same float arithmetic give the same bits).
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
