// matrix.hpp: the one matrix type everything displayed or exported uses.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>

namespace attnscope::core {

// Row-major float32, the dtype and layout of the book's PyTorch tensors.
// Row-major so that .data() feeds a GL texture, a PNG or a .npy as is.
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// A matrix written out row by row, as the book prints a tensor:
// matrix_from_rows({{0.43f, 0.15f}, {0.55f, 0.87f}}) is (2, 2). No rows gives
// a 0 x 0 matrix; rows of different lengths throw std::invalid_argument.
inline RowMatrix matrix_from_rows(std::initializer_list<std::initializer_list<float>> rows) {
  const auto cols = rows.size() == 0 ? std::size_t{0} : rows.begin()->size();
  RowMatrix m(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(cols));
  Eigen::Index r = 0;
  for (const auto& row : rows) {
    if (row.size() != cols)
      throw std::invalid_argument("matrix_from_rows: row " + std::to_string(r) + " has " +
                                  std::to_string(row.size()) + " values, row 0 has " +
                                  std::to_string(cols));
    Eigen::Index c = 0;
    for (float v : row) m(r, c++) = v;
    ++r;
  }
  return m;
}

// True when none of the n floats is inf or NaN. No branch in the loop, so
// that it vectorizes: Eigen's allFinite() walks a row-major matrix column
// by column, one float at a time (30 times slower at 1024 x 1024).
inline bool all_finite(const float* v, Eigen::Index n) {
  int bad = 0;  // |v| <= FLT_MAX is false for inf and NaN
  for (Eigen::Index i = 0; i < n; ++i)
    bad |= static_cast<int>(!(std::fabs(v[i]) <= std::numeric_limits<float>::max()));
  return bad == 0;
}
inline bool all_finite(const RowMatrix& m) { return all_finite(m.data(), m.size()); }

}  // namespace attnscope::core
