// thumbnail.cpp: block max and mean pooling of thumbnail.hpp.
#include "attnscope/analysis/thumbnail.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnscope::core {

namespace {

void check_size(int size) {
  if (size < 1)
    throw std::invalid_argument("thumbnail size must be at least 1 cell (got " +
                                std::to_string(size) + ")");
}

// The blocks of a dimension of n cells: starts[b] .. starts[b + 1].
std::vector<Eigen::Index> block_starts(Eigen::Index n, int size) {
  const Eigen::Index blocks = std::min<Eigen::Index>(n, size);
  if (blocks == 0) return {0};
  std::vector<Eigen::Index> starts(static_cast<std::size_t>(blocks + 1));
  for (Eigen::Index b = 0; b <= blocks; ++b)
    starts[static_cast<std::size_t>(b)] = static_cast<Eigen::Index>(
        static_cast<std::int64_t>(b) * n / static_cast<std::int64_t>(blocks));
  return starts;
}

template <typename Reduce>
RowMatrix downsample(const RowMatrix& w, int size, Reduce reduce) {
  check_size(size);
  if (w.rows() <= size && w.cols() <= size) return w;
  const std::vector<Eigen::Index> rs = block_starts(w.rows(), size);
  const std::vector<Eigen::Index> cs = block_starts(w.cols(), size);
  RowMatrix out(static_cast<Eigen::Index>(rs.size() - 1), static_cast<Eigen::Index>(cs.size() - 1));
  for (Eigen::Index r = 0; r < out.rows(); ++r) {
    const auto r0 = rs[static_cast<std::size_t>(r)], r1 = rs[static_cast<std::size_t>(r + 1)];
    for (Eigen::Index c = 0; c < out.cols(); ++c) {
      const auto c0 = cs[static_cast<std::size_t>(c)], c1 = cs[static_cast<std::size_t>(c + 1)];
      out(r, c) = reduce(w.block(r0, c0, r1 - r0, c1 - c0));
    }
  }
  return out;
}

}  // namespace

CellRange thumbnail_block(int b, int n, int size) {
  check_size(size);
  if (n < 0)
    throw std::invalid_argument("thumbnail: a dimension of " + std::to_string(n) + " cells");
  const std::vector<Eigen::Index> starts = block_starts(n, size);
  if (b < 0 || b + 1 >= static_cast<int>(starts.size()))
    throw std::invalid_argument("thumbnail: block " + std::to_string(b) + " of a dimension of " +
                                std::to_string(n) + " cells in " + std::to_string(size) +
                                " blocks does not exist");
  return {static_cast<int>(starts[static_cast<std::size_t>(b)]),
          static_cast<int>(starts[static_cast<std::size_t>(b + 1)])};
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

}  // namespace attnscope::core
