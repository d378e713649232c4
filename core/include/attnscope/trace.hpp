// trace.hpp: every intermediate of one attention run, as named stages.
// The GUI and the exporters read a Trace; they never recompute attention.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attnscope/config.hpp"
#include "attnscope/matrix.hpp"

namespace attnscope::core {

// One named matrix of a run, e.g. id "weights", head 1.
//
// The matrix is held by shared pointer: stages with the same values (the
// weights of a module the engine reuses, the causal mask of every head) hold
// one copy, and copying a Trace copies no matrix. Writers go through
// mutable_data(), which first copies a matrix that is shared.
struct Stage {
  std::string id;  // "inputs", "queries", "scores", ... (docs/trace-format.md)
  int head = -1;   // head index, or -1 for stages of the whole layer

  Stage() = default;
  Stage(std::string stage_id, int stage_head, RowMatrix matrix)
      : id(std::move(stage_id)), head(stage_head),
        data_(std::make_shared<RowMatrix>(std::move(matrix))) {}
  // A stage that shares `matrix` with whoever else holds it.
  Stage(std::string stage_id, int stage_head, std::shared_ptr<RowMatrix> matrix)
      : id(std::move(stage_id)), head(stage_head), data_(std::move(matrix)) {}

  // Shape and meaning depend on id (docs/trace-format.md).
  const RowMatrix& data() const { return data_ ? *data_ : empty_matrix(); }
  RowMatrix& mutable_data() {
    if (!data_)
      data_ = std::make_shared<RowMatrix>();
    else if (data_.use_count() > 1)
      data_ = std::make_shared<RowMatrix>(*data_);
    return *data_;
  }
  // True when this stage and `other` hold the very same matrix.
  bool shares_data_with(const Stage& other) const { return data_ && data_ == other.data_; }

 private:
  static const RowMatrix& empty_matrix() {
    static const RowMatrix empty;
    return empty;
  }
  std::shared_ptr<RowMatrix> data_;
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
