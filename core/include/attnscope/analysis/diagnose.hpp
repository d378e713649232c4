// diagnose.hpp: where a run first produced a number that is not finite (NaN,
// +inf, or -inf outside the causal mask), and why, in plain words.
//
// Float32 ends at about 3.4e38. Embeddings of 3e38 are valid input, but their
// dot products overflow to inf, and the softmax then computes inf - inf = NaN;
// every later stage inherits the NaN. A viewer that only paints NaN cells
// leaves the learner guessing; find_nonfinite() names the first stage (in
// pipeline order) that holds such a value, the cell, what overflowed, and
// which input to shrink. The -inf that masked_scores holds above the diagonal
// is there by design and never reported.
#pragma once

#include <optional>
#include <string>

#include "attnscope/base/trace.hpp"

namespace attnscope::core {

// The first unexpected non-finite value of a trace, explained.
struct NonFiniteFinding {
  std::string stage;     // stage id, e.g. "scores"
  int head = -1;         // the stage's head (-1: the whole layer)
  int row = 0, col = 0;  // the first such cell, row-major
  float value = 0;       // NaN, +inf or -inf
  long long cells = 0;   // how many unexpected non-finite cells that stage holds
  int later_stages = 0;  // how many later stages hold unexpected non-finite values too
  std::string where;     // "scores (head 1), row 2 ('journey'), column 0 ('Your')"
  std::string cause;     // what overflowed, with the magnitudes that made it overflow
  std::string advice;    // what to change, e.g. "Keep embedding values below about 1e18"

  // One paragraph: "<value> in <where>: <cause>. <advice>." plus the later stages.
  std::string message() const;
};

// The largest finite float32, about 3.4e38.
inline constexpr double kFloatMax = 3.4028234663852886e38;

// True when `stage` of a `variant` run holds a non-finite value at (row, col)
// by design: the causal mask's -inf where key col is in query row's future
// (col > row), in masked_scores and in the scaled_scores made from them.
bool nonfinite_expected(Variant variant, const Stage& stage, Eigen::Index row, Eigen::Index col);
// The same for a block of `recipe` (a model's: its causal mask).
bool nonfinite_expected(const BlockRecipe& recipe, const Stage& stage, Eigen::Index row,
                        Eigen::Index col);

// The first stage, in the trace's (pipeline) order, that holds a NaN or an
// infinity that nonfinite_expected() does not allow, explained; nullopt when
// there is none. Reads each stage once (a whole-stage finiteness check first).
std::optional<NonFiniteFinding> find_nonfinite(const Trace& trace);

}  // namespace attnscope::core
