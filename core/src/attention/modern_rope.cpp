// modern_rope.cpp: rotary position embeddings as llama3.py and qwen3.py
// compute them (compute_rope_params, apply_rope), in float32, and the
// demonstration that rotated scores depend only on the distance i - j.
#include <algorithm>
#include <cmath>

#include "attention/modern_internal.hpp"

namespace attnscope::core::modern {

namespace {

// inv_freq = 1.0 / (theta_base ** (arange(0, hd, 2).float() / hd)): each
// step a float32 operation (the tensor / int division, the scalar ** tensor
// power, the reciprocal).
RowMatrix inverse_frequencies(int head_dim, double theta_base) {
  const int half = head_dim / 2;
  RowMatrix inv(1, half);
  const auto base = static_cast<float>(theta_base);
  for (int i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    inv(0, i) = 1.0f / std::pow(base, exponent);
  }
  return inv;
}

// cos and sin of positions first .. first + count - 1: angles = position *
// inv_freq (float), repeated for the second half (torch.cat([a, a], dim=1)).
void fill_tables(const RowMatrix& inv, int first, int count, RowMatrix& cos_t, RowMatrix& sin_t) {
  const auto half = inv.cols();
  cos_t.resize(count, 2 * half);
  sin_t.resize(count, 2 * half);
  for (int r = 0; r < count; ++r) {
    const auto position = static_cast<float>(first + r);
    for (Eigen::Index i = 0; i < half; ++i) {
      const float angle = position * inv(0, i);
      cos_t(r, i) = cos_t(r, i + half) = std::cos(angle);
      sin_t(r, i) = sin_t(r, i + half) = std::sin(angle);
    }
  }
}

// x * cos + [-x2, x1] * sin for rows of x, row r using table row first + r.
RowMatrix rotate(const RowMatrix& x, const RowMatrix& cos_t, const RowMatrix& sin_t, int first) {
  const Eigen::Index half = x.cols() / 2;
  RowMatrix out(x.rows(), x.cols());
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const Eigen::Index t = first + r;
    for (Eigen::Index i = 0; i < x.cols(); ++i) {
      const float rotated = i < half ? -x(r, i + half) : x(r, i - half);
      const float a = x(r, i) * cos_t(t, i);
      const float b = rotated * sin_t(t, i);
      out(r, i) = a + b;  // two roundings, then the sum: no fused multiply-add
    }
  }
  return out;
}

}  // namespace

RopeTables compute_rope_params(int head_dim, double theta_base, int context_length) {
  RopeTables t;
  t.inv_freq = inverse_frequencies(head_dim, theta_base);
  fill_tables(t.inv_freq, 0, context_length, t.cos, t.sin);
  return t;
}

RowMatrix apply_rope(const RowMatrix& x, const RopeTables& tables, int offset) {
  return rotate(x, tables.cos, tables.sin, offset);
}

float rope_shift_max_diff(const RowMatrix& q, const RowMatrix& k, double theta_base, int shift) {
  const auto T = static_cast<int>(std::max(q.rows(), k.rows()));
  const RowMatrix inv = inverse_frequencies(static_cast<int>(q.cols()), theta_base);
  RowMatrix cos0, sin0, cos1, sin1;
  fill_tables(inv, 0, T, cos0, sin0);
  fill_tables(inv, std::max(shift, 0), T, cos1, sin1);  // positions shift .. shift + T - 1
  const RowMatrix at0 = rotate(q, cos0, sin0, 0) * rotate(k, cos0, sin0, 0).transpose();
  const RowMatrix shifted = rotate(q, cos1, sin1, 0) * rotate(k, cos1, sin1, 0).transpose();
  return (at0 - shifted).cwiseAbs().maxCoeff();
}

}  // namespace attnscope::core::modern
