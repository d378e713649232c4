// modern_internal.hpp: what modern.cpp, modern_rope.cpp and modern_cache.cpp
// share: the projection, the scale and the mask rule.
#pragma once

#include "attnscope/attention/modern.hpp"

namespace attnscope::core::modern::detail {

// x . weight + bias, for x (rows, in) -> (rows, out).
RowMatrix project(const RowMatrix& x, const Projection& p);

// keys.shape[-1]**0.5 as the float kernel uses it (rounded to float).
float root_dk(int head_dim);

// Which keys a query may not see.
struct MaskRule {
  bool causal = true;  // hide keys after the query (false only for Cross)
  int window = 0;      // > 0: also hide keys at or beyond `window` positions back
};

inline MaskRule mask_rule(const Config& c) {
  MaskRule rule;
  rule.causal = c.kind != Kind::Cross;
  if (c.kind == Kind::SlidingWindow && c.window) rule.window = *c.window;
  return rule;
}

// True when the key at absolute position k_pos is hidden from the query at
// q_pos: diff = q_pos - k_pos; diff < 0 (the future) or diff >= window, the
// book's (diff < 0) | (diff >= W).
bool hidden(const MaskRule& rule, long long q_pos, long long k_pos);

}  // namespace attnscope::core::modern::detail
