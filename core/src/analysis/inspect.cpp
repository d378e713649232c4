// inspect.cpp: term-by-term breakdowns of single cells (see inspect.hpp).
#include "attnscope/analysis/inspect.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attnscope/base/stages.hpp"

namespace attnscope::core {

namespace {

std::vector<float> row_of(const RowMatrix& m, Eigen::Index r) {
  return std::vector<float>(m.row(r).data(), m.row(r).data() + m.cols());
}

bool in_range(const Trace& t, int i) { return i >= 0 && i < t.num_tokens(); }

// queries/keys for a head; simple uses the inputs for both.
const Stage* stage_or_inputs(const Trace& t, const char* id, int head) {
  if (!t.recipe().has(BlockPart::Projection)) return t.find(stage_id::inputs);
  return t.find(id, head);
}

}  // namespace

int stage_head(const Trace& trace, int head) {
  if (!trace.recipe().has(BlockPart::Heads)) return -1;
  return std::clamp(head, 0, trace.heads_shown() - 1);
}

std::optional<ScoreBreakdown> explain_score(const Trace& trace, int head, int i, int j) {
  head = stage_head(trace, head);
  if (!in_range(trace, i) || !in_range(trace, j)) return std::nullopt;
  const Stage* q = stage_or_inputs(trace, stage_id::queries, head);
  const Stage* k = stage_or_inputs(trace, stage_id::keys, head);
  const Stage* scores = trace.find(stage_id::scores, head);
  if (!q || !k || !scores) return std::nullopt;

  ScoreBreakdown b;
  b.query = row_of(q->data(), i);
  b.key = row_of(k->data(), j);
  for (std::size_t d = 0; d < b.query.size(); ++d) b.products.push_back(b.query[d] * b.key[d]);
  b.sum = scores->data()(i, j);
  if (const Stage* scaled = trace.find(stage_id::scaled_scores, head)) {
    b.scaled = true;
    b.sqrt_dk = static_cast<float>(std::pow(static_cast<double>(k->data().cols()), 0.5));
    b.scaled_value = scaled->data()(i, j);
  } else {
    b.scaled_value = b.sum;
  }
  b.masked = trace.recipe().has(BlockPart::Mask) && j > i;
  return b;
}

std::optional<SoftmaxBreakdown> explain_softmax(const Trace& trace, int head, int i) {
  head = stage_head(trace, head);
  if (!in_range(trace, i)) return std::nullopt;
  // The softmax reads the scaled scores (causal: masked, then scaled).
  const Stage* logits = trace.find(stage_id::scaled_scores, head);
  if (!logits) logits = trace.find(stage_id::scores, head);
  const Stage* weights = trace.find(stage_id::weights, head);
  if (!logits || !weights) return std::nullopt;

  SoftmaxBreakdown b;
  b.logits = row_of(logits->data(), i);
  b.row_max = -std::numeric_limits<float>::infinity();
  for (float v : b.logits) b.row_max = std::max(b.row_max, v);
  for (float v : b.logits) {
    b.shifted.push_back(v - b.row_max);
    b.exps.push_back(std::exp(v - b.row_max));
    b.sum += b.exps.back();
  }
  b.weights = row_of(weights->data(), i);
  return b;
}

std::optional<ContextBreakdown> explain_context(const Trace& trace, int head, int i) {
  head = stage_head(trace, head);
  if (!in_range(trace, i)) return std::nullopt;
  const Stage* weights = trace.find(stage_id::dropped_weights, head);
  if (!weights) weights = trace.find(stage_id::weights, head);
  const Stage* values = stage_or_inputs(trace, stage_id::values, head);
  const Stage* context = trace.find(stage_id::context, head);
  if (!weights || !values || !context) return std::nullopt;

  ContextBreakdown b;
  b.weights = row_of(weights->data(), i);
  b.values = values->data();
  b.weighted = values->data();
  for (Eigen::Index j = 0; j < b.weighted.rows(); ++j)
    b.weighted.row(j) *= b.weights[static_cast<std::size_t>(j)];
  b.context = row_of(context->data(), i);
  return b;
}

}  // namespace attnscope::core
