// thumbnail.hpp: a small picture of a large matrix (a head's T x T weights
// as a size x size thumbnail in a grid of every head).
//
// Each dimension of n cells is cut into `size` blocks; block b covers cells
// [floor(b n / size), floor((b + 1) n / size)), so every cell falls in
// exactly one block and blocks differ in length by at most one. A dimension
// of n <= size cells is kept as is (block b = cell b).
//
// downsample_max keeps each block's largest value: in an attention map a
// single strong weight (a previous-token diagonal, a sink column) stays as
// bright as it is, where a mean would dilute it by the block's area. The
// mean is there for comparison (the block's average attention).
#pragma once

#include "attnscope/base/matrix.hpp"

namespace attnscope::core {

// The cells [begin, end) of block b of a dimension of n cells cut into
// min(n, size) blocks. Throws std::invalid_argument when size < 1, n < 0 or
// b is not a block.
struct CellRange {
  int begin = 0;
  int end = 0;  // one past the last cell
};
CellRange thumbnail_block(int b, int n, int size);

// min(rows, size) x min(cols, size): the largest value of each block of w.
// A matrix within size x size comes back as a copy. Throws
// std::invalid_argument when size < 1.
RowMatrix downsample_max(const RowMatrix& w, int size);
// The same with each block's mean.
RowMatrix downsample_mean(const RowMatrix& w, int size);

}  // namespace attnscope::core
