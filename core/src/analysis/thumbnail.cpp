// thumbnail.cpp: block max and mean pooling of thumbnail.hpp.
#include "attnscope/analysis/thumbnail.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace attnscope::core {

namespace {

void check_size(int size) {
  if (size < 1)
    throw std::invalid_argument("thumbnail size must be at least 1 cell (got " +
                                std::to_string(size) + ")");
}

void check_n(int n) {
  if (n < 0)
    throw std::invalid_argument("thumbnail: a dimension of " + std::to_string(n) + " cells");
}

Eigen::Index blocks_of(Eigen::Index n, Eigen::Index block) { return (n + block - 1) / block; }

// Pools w by blocks of block_rows x block_cols cells (the last of each
// dimension may be shorter).
template <typename Reduce>
RowMatrix pool(const Eigen::Ref<const RowMatrix>& w, Eigen::Index block_rows,
               Eigen::Index block_cols, Reduce reduce) {
  RowMatrix out(blocks_of(w.rows(), block_rows), blocks_of(w.cols(), block_cols));
  for (Eigen::Index r = 0; r < out.rows(); ++r) {
    const Eigen::Index r0 = r * block_rows, nr = std::min(block_rows, w.rows() - r0);
    for (Eigen::Index c = 0; c < out.cols(); ++c) {
      const Eigen::Index c0 = c * block_cols, nc = std::min(block_cols, w.cols() - c0);
      out(r, c) = reduce(w.block(r0, c0, nr, nc));
    }
  }
  return out;
}

template <typename Reduce>
RowMatrix downsample(const RowMatrix& w, int size, Reduce reduce) {
  check_size(size);
  if (w.rows() <= size && w.cols() <= size) return w;
  return pool(w, thumbnail_block_size(static_cast<int>(w.rows()), size),
              thumbnail_block_size(static_cast<int>(w.cols()), size), reduce);
}

}  // namespace

int thumbnail_block_size(int n, int size) {
  check_size(size);
  check_n(n);
  return std::max(1, (n + size - 1) / size);
}

int thumbnail_blocks(int n, int size) {
  return static_cast<int>(blocks_of(n, thumbnail_block_size(n, size)));
}

CellRange thumbnail_block(int b, int n, int size) {
  const int s = thumbnail_block_size(n, size);
  if (b < 0 || b >= thumbnail_blocks(n, size))
    throw std::invalid_argument("thumbnail: block " + std::to_string(b) + " of a dimension of " +
                                std::to_string(n) + " cells pooled for " + std::to_string(size) +
                                " does not exist");
  return {b * s, std::min((b + 1) * s, n)};
}

RowMatrix downsample_max(const RowMatrix& w, int size) {
  return downsample(w, size, [](const auto& block) { return block.maxCoeff(); });
}

RowMatrix downsample_mean(const RowMatrix& w, int size) {
  // Summed in double: a block of a 1024 x 1024 map holds up to 1024 cells.
  return downsample(w, size, [](const auto& block) {
    return static_cast<float>(block.template cast<double>().sum() /
                              static_cast<double>(block.size()));
  });
}

RowMatrix downsample_max_rows(const Eigen::Ref<const RowMatrix>& rows, int block_rows,
                              int block_cols) {
  if (block_rows < 1 || block_cols < 1)
    throw std::invalid_argument("thumbnail: blocks of " + std::to_string(block_rows) + " x " +
                                std::to_string(block_cols) + " cells");
  return pool(rows, block_rows, block_cols, [](const auto& block) { return block.maxCoeff(); });
}

}  // namespace attnscope::core
