// run_compare.cpp: two runs of one text, head by head (run_compare.hpp).
#include "attnscope/model/run_compare.hpp"

#include <cmath>
#include <stdexcept>

namespace attnscope::core {

namespace {

std::string shape_of(const Gpt2Config& c) {
  return std::to_string(c.n_layer) + (c.n_layer == 1 ? " layer × " : " layers × ") +
         std::to_string(c.n_head) + (c.n_head == 1 ? " head" : " heads");
}

// `wanted` when not empty (each checked to lie in 0..count-1), else 0..count-1.
std::vector<int> chosen(const std::vector<int>& wanted, int count, const char* what) {
  std::vector<int> out;
  if (wanted.empty()) {
    for (int k = 0; k < count; ++k) out.push_back(k);
    return out;
  }
  for (int k : wanted) {
    if (k < 0 || k >= count)
      throw std::invalid_argument(std::string(what) + " " + std::to_string(k) +
                                  " is not one of the models' 0.." + std::to_string(count - 1));
    out.push_back(k);
  }
  return out;
}

}  // namespace

std::string compare_refusal(const Gpt2Config& a, const Gpt2Config& b, std::string_view name_a,
                            std::string_view name_b) {
  if (a.n_layer == b.n_layer && a.n_head == b.n_head) return {};
  return "A (" + std::string(name_a) + ") has " + shape_of(a) + " but B (" + std::string(name_b) +
         ") has " + shape_of(b) +
         ": heads are compared one with its namesake, so both need the same layers and heads";
}

HeadDifference head_difference(const RowMatrix& a, const RowMatrix& b, int layer, int head) {
  if (a.rows() != a.cols() || a.rows() != b.rows() || a.cols() != b.cols())
    throw std::invalid_argument("the attention maps have different shapes (" +
                                std::to_string(a.rows()) + " × " + std::to_string(a.cols()) +
                                " and " + std::to_string(b.rows()) + " × " +
                                std::to_string(b.cols()) + "): they are not of one text");
  HeadDifference d;
  d.layer = layer;
  d.head = head;
  double sum = 0.0;
  const Eigen::Index T = a.rows();
  for (Eigen::Index i = 0; i < T; ++i)
    for (Eigen::Index j = 0; j <= i; ++j) {
      const float delta = std::abs(b(i, j) - a(i, j));
      sum += delta;
      if (delta > d.max_abs) {
        d.max_abs = delta;
        d.max_query = static_cast<int>(i);
        d.max_key = static_cast<int>(j);
      }
    }
  // The masked cells (key > query) are 0 in both: only the seen ones count.
  const double seen = static_cast<double>(T) * static_cast<double>(T + 1) / 2.0;
  d.mean_abs = T > 0 ? sum / seen : 0.0;
  return d;
}

const HeadDifference& RunDifference::most_changed() const {
  if (per_head.empty()) throw std::logic_error("no head was compared");
  const HeadDifference* best = &per_head.front();
  for (const HeadDifference& h : per_head)
    if (h.mean_abs > best->mean_abs) best = &h;
  return *best;
}

RunDifference compare_runs(ModelRun& a, ModelRun& b, const std::vector<int>& layers,
                           const std::vector<int>& heads) {
  const std::string refusal =
      compare_refusal(a.model().config(), b.model().config(), a.model().name(), b.model().name());
  if (!refusal.empty()) throw std::invalid_argument(refusal);
  if (a.ids() != b.ids())
    throw std::invalid_argument("the two runs read different token ids (" +
                                std::to_string(a.num_tokens()) + " and " +
                                std::to_string(b.num_tokens()) + " tokens): give both one text");
  RunDifference r;
  r.layers = a.num_layers();
  r.heads = a.num_heads();
  r.tokens = a.num_tokens();
  const std::vector<int> ls = chosen(layers, r.layers, "layer");
  const std::vector<int> hs = chosen(heads, r.heads, "head");
  for (int l : ls) {
    // A layer's maps at once (computed on every thread when not cached).
    const auto maps_a = a.layer_weights(l);
    const auto maps_b = b.layer_weights(l);
    for (int h : hs) {
      const auto at = static_cast<std::size_t>(h);
      r.per_head.push_back(head_difference(*maps_a[at], *maps_b[at], l, h));
    }
  }
  return r;
}

}  // namespace attnscope::core
