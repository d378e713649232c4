// thumbnail.hpp: a small picture of a large matrix (a head's T x T weights
// as a size x size thumbnail in a grid of every head).
//
// Each dimension of n cells is cut into blocks of s = ceil(n / size) cells
// (thumbnail_block_size): block b covers cells [b s, min((b + 1) s, n)), so
// every cell falls in exactly one block, every block but the last holds s
// cells, and there are ceil(n / s) <= size blocks. A dimension of n <= size
// cells is kept as is (s = 1, block b = cell b). Blocks that do not move as
// n grows by a few cells (s stays the same until n passes a multiple of
// size) let a thumbnail of a growing map be updated from its new rows alone
// (downsample_max_rows).
//
// downsample_max keeps each block's largest value: in an attention map a
// single strong weight (a previous-token diagonal, a sink column) stays as
// bright as it is, where a mean would dilute it by the block's area. The
// mean is there for comparison (the block's average attention).
#pragma once

#include "attnscope/base/matrix.hpp"

namespace attnscope::core {

// The cells of one block of a dimension of n cells pooled for `size`.
// Throws std::invalid_argument when size < 1, n < 0 or b is not a block.
struct CellRange {
  int begin = 0;
  int end = 0;  // one past the last cell
};
CellRange thumbnail_block(int b, int n, int size);
// Cells a block holds: ceil(n / size), at least 1. Throws
// std::invalid_argument when size < 1 or n < 0.
int thumbnail_block_size(int n, int size);
// Blocks of the dimension: ceil(n / thumbnail_block_size(n, size)).
int thumbnail_blocks(int n, int size);

// thumbnail_blocks(rows) x thumbnail_blocks(cols): the largest value of each
// block of w. A matrix within size x size comes back as a copy. Throws
// std::invalid_argument when size < 1.
RowMatrix downsample_max(const RowMatrix& w, int size);
// The same with each block's mean.
RowMatrix downsample_mean(const RowMatrix& w, int size);
// The largest value of each block_rows x block_cols block of `rows` (the
// last block of each dimension may be shorter): the thumbnail rows of a
// matrix's rows from a multiple of block_rows on, with the blocks the whole
// matrix has. Throws std::invalid_argument when a block size is below 1.
RowMatrix downsample_max_rows(const Eigen::Ref<const RowMatrix>& rows, int block_rows,
                              int block_cols);

}  // namespace attnscope::core
