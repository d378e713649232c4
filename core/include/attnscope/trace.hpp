// trace.hpp: every intermediate of one attention run, as named stages.
// The GUI and the exporters read a Trace; they never recompute attention.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "attnscope/config.hpp"
#include "attnscope/matrix.hpp"

namespace attnscope::core {

// One named matrix of a run, e.g. id "weights", head 1.
struct Stage {
  std::string id;  // "inputs", "queries", "scores", ... (docs/trace-format.md)
  int head = -1;   // head index, or -1 for stages of the whole layer
  RowMatrix data;  // shape and meaning depend on id (docs/trace-format.md)
};

struct Trace {
  Config config;                    // the config that produced this trace
  std::vector<std::string> tokens;  // T token names (rows/cols of T x T stages)
  int d_in = 0;                     // embedding width
  bool explicit_weights = false;    // parameters were given (imported/edited), not seeded
  std::vector<Stage> stages;        // in pipeline order

  int num_tokens() const { return static_cast<int>(tokens.size()); }
  // The head count a viewer should show: num_heads for head variants, else 1.
  int heads_shown() const;
  // The stage with this id and head, or nullptr.
  const Stage* find(std::string_view id, int head = -1) const;
};

}  // namespace attnscope::core
