// matrix.hpp: the one matrix type everything displayed or exported uses.
#pragma once

#include <Eigen/Core>

namespace attnscope::core {

// Row-major float32, the dtype and layout of the book's PyTorch tensors.
// Row-major so that .data() feeds a GL texture, a PNG or a .npy as is.
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace attnscope::core
