// run_compare.hpp: two checkpoints on one text, head by head. Epoch 1
// against epoch 10 of a learner's own training, or two models of one shape:
// each head's attention weights of B minus those of A, summed up as the
// mean and the largest |B − A|, so that a learner can find where training
// changed most. `attnscope-cli model compare` and the app's Compare
// checkpoints window read these numbers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "attnscope/base/matrix.hpp"
#include "attnscope/model/gpt2_config.hpp"
#include "attnscope/model/gpt2_model.hpp"

namespace attnscope::core {

// Why two models cannot be compared head by head ("" when they can): they
// must have as many layers and heads per layer. The sentence names both
// models (`name_a`, `name_b`) and both shapes, e.g. "A (a.pth) has 12
// layers × 12 heads but B (b.pth) has 24 layers × 16 heads: ...".
std::string compare_refusal(const Gpt2Config& a, const Gpt2Config& b, std::string_view name_a,
                            std::string_view name_b);

// One head's difference: B − A of two (T, T) attention maps of one text.
struct HeadDifference {
  int layer = 0, head = 0;
  // Mean |B − A| over the T(T + 1)/2 cells a query sees (key ≤ query): the
  // masked cells are 0 in both maps and would only dilute it.
  double mean_abs = 0.0;
  float max_abs = 0.0f;            // the largest |B − A|
  int max_query = 0, max_key = 0;  // where: the first such cell, row by row
};

// The difference of two maps of one head (`a`, `b`: (T, T), rows = queries).
// Throws std::invalid_argument when their shapes differ or are not square.
HeadDifference head_difference(const RowMatrix& a, const RowMatrix& b, int layer = 0, int head = 0);

// Every chosen head of two runs of the same ids.
struct RunDifference {
  int layers = 0, heads = 0, tokens = 0;  // the models' shape and the text's length
  std::vector<HeadDifference> per_head;   // in (layer, head) order, the chosen ones only
  // The head with the largest mean |B − A| (the first of equals); per_head
  // must not be empty.
  const HeadDifference& most_changed() const;
};

// Runs `a` and `b` on the same ids, compared head by head for `layers` and
// `heads` (empty: every one). Throws std::invalid_argument, naming both
// shapes, when compare_refusal refuses the two models, when the runs read
// different ids, or when a layer or head is out of range.
RunDifference compare_runs(ModelRun& a, ModelRun& b, const std::vector<int>& layers = {},
                           const std::vector<int>& heads = {});

}  // namespace attnscope::core
