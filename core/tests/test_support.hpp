// test_support.hpp: helpers shared by the core tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "attnscope/attention/attention.hpp"
#include "attnscope/io/io.hpp"
#include "attnscope/model/gpt2_config.hpp"

namespace attnscope::core::testing {

// The book's printed tensors have 4 decimals; a value matches when it rounds
// to the printed one, i.e. lies within half a unit of the 4th decimal (plus a
// hair for the float32 -> decimal conversion).
inline constexpr float kBookTolerance = 0.5e-4f + 1e-6f;

// Expects `actual` to print as `printed` at 4 decimals, cell by cell.
inline void expect_book_matrix(const RowMatrix& actual, const RowMatrix& printed,
                               const std::string& what) {
  ASSERT_EQ(actual.rows(), printed.rows()) << what;
  ASSERT_EQ(actual.cols(), printed.cols()) << what;
  for (Eigen::Index r = 0; r < printed.rows(); ++r)
    for (Eigen::Index c = 0; c < printed.cols(); ++c)
      EXPECT_NEAR(actual(r, c), printed(r, c), kBookTolerance)
          << what << " at (" << r << ", " << c << ")";
}

inline Inputs book_inputs() { return *find_preset("book"); }

// `v` with every optional part on: d_out 4 over two heads, dropout 0.5 in
// training, qkv_bias (unless `bias` is false), under `seed`.
inline Config every_option(Variant v, bool bias = true, std::uint64_t seed = 123) {
  Config c;
  c.variant = v;
  c.d_out = 4;
  c.num_heads = 2;
  c.dropout = 0.5;
  c.qkv_bias = bias;
  c.seed = seed;
  return c;
}

inline Config config_for(Variant v, int d_out, std::uint64_t seed) {
  Config c;
  c.variant = v;
  c.d_out = d_out;
  c.seed = seed;
  return c;
}

// The fast path against the readable reference: same stages in the same
// order; what is drawn or copied (parameters, masks, inputs) bit for bit;
// NaN for NaN and inf for inf; computed finite values within 1e-6 of the
// stage's largest finite magnitude (float32 reassociation in fused loops).
inline void expect_paths_agree(const Trace& fast, const Trace& ref) {
  ASSERT_EQ(fast.stages.size(), ref.stages.size());
  for (std::size_t k = 0; k < ref.stages.size(); ++k) {
    const Stage& a = fast.stages[k];
    const Stage& b = ref.stages[k];
    ASSERT_EQ(a.id, b.id) << "stage " << k;
    ASSERT_EQ(a.head, b.head) << a.id;
    ASSERT_EQ(a.data().rows(), b.data().rows()) << a.id;
    ASSERT_EQ(a.data().cols(), b.data().cols()) << a.id;
    const bool drawn = a.id.starts_with("W_") || a.id.starts_with("b_") || a.id == "mask" ||
                       a.id == "dropout_mask" || a.id == "inputs";
    const RowMatrix finite = b.data().array().isFinite().select(b.data(), 0.0f);
    const float scale = finite.size() ? std::max(1.0f, finite.cwiseAbs().maxCoeff()) : 1.0f;
    for (Eigen::Index i = 0; i < a.data().size(); ++i) {
      const float x = a.data().data()[i], y = b.data().data()[i];
      if (std::isnan(y))
        ASSERT_TRUE(std::isnan(x)) << a.id << " head " << a.head << " element " << i << ": " << x;
      else if (drawn || !std::isfinite(y))
        ASSERT_EQ(x, y) << a.id << " head " << a.head << " element " << i;
      else
        ASSERT_NEAR(x, y, 1e-6f * scale) << a.id << " head " << a.head << " element " << i;
    }
  }
}

inline const RowMatrix& stage(const Trace& t, const char* id, int head = -1) {
  const Stage* s = t.find(id, head);
  if (!s) throw std::runtime_error(std::string("missing stage ") + id);
  return s->data();
}

// A GPT-2 small enough for every test to run it: 2 layers of 3 heads, width
// 24, MLP 40, the full vocabulary (so GPT-2's token ids fit), n_positions
// as given.
inline Gpt2Config tiny_gpt2_config(int n_positions) {
  Gpt2Config c;
  c.n_layer = 2;
  c.n_head = 3;
  c.n_embd = 24;
  c.n_inner = 40;
  c.n_positions = n_positions;
  c.vocab_size = 50257;
  return c;
}

}  // namespace attnscope::core::testing
