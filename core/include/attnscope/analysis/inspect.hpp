// inspect.hpp: the arithmetic behind one cell of a trace, term by term, for
// the GUI's inspector. Computed by the engine from the trace's own stages, so
// every number a viewer shows comes from core.
#pragma once

#include <optional>
#include <vector>

#include "attnscope/base/trace.hpp"

namespace attnscope::core {

// scores(i, j) = q_i . k_j, then / sqrt(d_k).
struct ScoreBreakdown {
  std::vector<float> query;     // (d_k) q_i (for simple: x_i)
  std::vector<float> key;       // (d_k) k_j (for simple: x_j)
  std::vector<float> products;  // (d_k) query[d] * key[d]
  float sum = 0;                // the trace's scores(i, j)
  bool scaled = false;          // false for simple (no scaling)
  float sqrt_dk = 1;            // the divisor
  float scaled_value = 0;       // the trace's scaled_scores(i, j)
  bool masked = false;          // causal and j > i: the softmax sees -inf
};

// weights row i = softmax(logits row i), with the row max subtracted.
struct SoftmaxBreakdown {
  std::vector<float> logits;   // (T) what the softmax reads: scaled/masked scores (simple: scores)
  float row_max = 0;           // max over the finite logits
  std::vector<float> shifted;  // (T) logits - row_max (-inf stays -inf)
  std::vector<float> exps;     // (T) exp(shifted); 0 for masked entries
  float sum = 0;               // sum of exps
  std::vector<float> weights;  // (T) the trace's weights row i (= exps / sum)
};

// context row i = sum_j w_ij * v_j.
struct ContextBreakdown {
  std::vector<float> weights;  // (T) row i of the weights used (dropped_weights when causal)
  RowMatrix values;            // (T, d_v) value rows (simple: inputs)
  RowMatrix weighted;          // (T, d_v) weights[j] * values row j
  std::vector<float> context;  // (d_v) the trace's context row i
};

// The breakdown of scores(i, j) of `head`; nullopt when out of range.
std::optional<ScoreBreakdown> explain_score(const Trace& trace, int head, int i, int j);
// The breakdown of weights row i of `head`; nullopt when out of range.
std::optional<SoftmaxBreakdown> explain_softmax(const Trace& trace, int head, int i);
// The breakdown of context row i of `head`; nullopt when out of range.
std::optional<ContextBreakdown> explain_context(const Trace& trace, int head, int i);

// The head index a variant's per-head stages use: -1 unless the variant has
// heads, else `head` clamped to [0, num_heads).
int stage_head(const Trace& trace, int head);

}  // namespace attnscope::core
