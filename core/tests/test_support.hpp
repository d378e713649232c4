// test_support.hpp: helpers shared by the core tests.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "attnscope/attention.hpp"
#include "attnscope/io.hpp"

namespace attnscope::core::testing {

// The book's printed tensors have 4 decimals; a value matches when it rounds
// to the printed one, i.e. lies within half a unit of the 4th decimal (plus a
// hair for the float32 -> decimal conversion).
inline constexpr float kBookTolerance = 0.5e-4f + 1e-6f;

inline RowMatrix matrix(std::initializer_list<std::initializer_list<float>> rows) {
  RowMatrix m(static_cast<Eigen::Index>(rows.size()),
              static_cast<Eigen::Index>(rows.begin()->size()));
  Eigen::Index r = 0;
  for (const auto& row : rows) {
    Eigen::Index c = 0;
    for (float v : row) m(r, c++) = v;
    ++r;
  }
  return m;
}

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

inline Config config_for(Variant v, int d_out, std::uint64_t seed) {
  Config c;
  c.variant = v;
  c.d_out = d_out;
  c.seed = seed;
  return c;
}

inline const RowMatrix& stage(const Trace& t, const char* id, int head = -1) {
  const Stage* s = t.find(id, head);
  if (!s) throw std::runtime_error(std::string("missing stage ") + id);
  return s->data;
}

}  // namespace attnscope::core::testing
