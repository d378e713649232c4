// head_patterns.cpp: the head pattern scores of head_patterns.hpp.
#include "attnscope/model/head_patterns.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_set>

#include "attnscope/base/rng.hpp"
#include "attnscope/base/stages.hpp"
#include "formats/json_matrix.hpp"

namespace attnscope::core {

namespace {

struct PatternText {
  PatternKind kind;
  std::string_view name, key, explanation;
};

constexpr PatternText kText[] = {
    {PatternKind::PreviousToken, "previous token", "previous_token",
     "Mean weight each token puts on the token just before it (1: always looks one back)."},
    {PatternKind::FirstToken, "first token", "first_token",
     "Mean weight each token puts on the first token, where heads park attention they do not "
     "need (an attention sink)."},
    {PatternKind::Self, "self", "self", "Mean weight each token puts on itself."},
    {PatternKind::Entropy, "entropy", "entropy",
     "Mean entropy of a row in nats: 0 when all weight is on one key, ln(i+1) when row i is "
     "uniform."},
    {PatternKind::EntropyNormalised, "entropy (normalised)", "entropy_normalised",
     "Row entropy divided by its largest possible value ln(i+1), averaged: 0 focused, 1 "
     "uniform."},
    {PatternKind::Induction, "induction", "induction",
     "On a random sequence repeated twice, mean weight on the token that followed the earlier "
     "copy of the current token (1: a perfect induction head)."},
};

const PatternText& text(PatternKind kind) {
  for (const PatternText& t : kText)
    if (t.kind == kind) return t;
  throw std::invalid_argument("pattern kind " + std::to_string(static_cast<int>(kind)) +
                              " is not one of PatternKind's values");
}

// H = sum of -x ln x over the row, with 0 for x <= 0 (0 ln 0 = 0): in
// float, vectorised (a T = 1024 map has half a million logarithms), each
// row's sum then added in double.
double row_entropy(const Eigen::Ref<const RowMatrix>& w, Eigen::Index i) {
  const auto x = w.row(i).array();
  const auto safe = x.max(std::numeric_limits<float>::min());
  return static_cast<double>((x > 0.0f).select(-x * safe.log(), 0.0f).sum());
}

double mean(double sum, Eigen::Index count) {
  return count > 0 ? sum / static_cast<double>(count) : 0.0;
}

}  // namespace

std::string_view pattern_name(PatternKind kind) { return text(kind).name; }
std::string_view pattern_key(PatternKind kind) { return text(kind).key; }
std::string_view pattern_explanation(PatternKind kind) { return text(kind).explanation; }

HeadPatternScores pattern_scores(const RowMatrix& w) {
  if (w.rows() != w.cols())
    throw std::invalid_argument("head pattern scores need a square T × T weights matrix, got " +
                                std::to_string(w.rows()) + " x " + std::to_string(w.cols()));
  return pattern_scores_of_rows(pattern_rows(w, 0));
}

std::vector<PatternRow> pattern_rows(const Eigen::Ref<const RowMatrix>& rows,
                                     Eigen::Index first_row) {
  const Eigen::Index T = rows.cols();
  if (first_row < 0 || first_row + rows.rows() > T)
    throw std::invalid_argument("head pattern scores: rows " + std::to_string(first_row) + ".." +
                                std::to_string(first_row + rows.rows() - 1) +
                                " are not rows of a " + std::to_string(T) + " x " +
                                std::to_string(T) + " map");
  std::vector<PatternRow> out(static_cast<std::size_t>(rows.rows()));
  for (Eigen::Index k = 0; k < rows.rows(); ++k) {
    const Eigen::Index i = first_row + k;
    PatternRow& r = out[static_cast<std::size_t>(k)];
    r.entropy = row_entropy(rows, k);  // H_i in nats
    r.self = rows(k, i);
    if (i >= 1) {
      r.previous_token = rows(k, i - 1);
      r.first_token = rows(k, 0);
      r.entropy_normalised = r.entropy / std::log(static_cast<double>(i + 1));
    }
  }
  return out;
}

HeadPatternScores pattern_scores_of_rows(std::span<const PatternRow> rows) {
  double prev = 0.0, first = 0.0, self = 0.0, entropy = 0.0, normalised = 0.0;
  for (const PatternRow& r : rows) {
    entropy += r.entropy;
    self += r.self;
    prev += r.previous_token;
    first += r.first_token;
    normalised += r.entropy_normalised;
  }
  const auto T = static_cast<Eigen::Index>(rows.size());
  HeadPatternScores s;
  s.previous_token = mean(prev, T - 1);
  s.first_token = mean(first, T - 1);
  s.self = mean(self, T);
  s.entropy = mean(entropy, T);
  s.entropy_normalised = mean(normalised, T - 1);
  return s;
}

double induction_score(const RowMatrix& w, int n, int offset) {
  if (n < 2 || offset < 0)
    throw std::invalid_argument(
        "induction score: n must be at least 2 and offset at least 0 (got n " + std::to_string(n) +
        ", offset " + std::to_string(offset) + ")");
  const Eigen::Index T = offset + Eigen::Index{2} * n;
  if (w.rows() != T || w.cols() != T)
    throw std::invalid_argument("induction score: weights are " + std::to_string(w.rows()) + " x " +
                                std::to_string(w.cols()) + " but offset + 2n is " +
                                std::to_string(T));
  double sum = 0.0;
  for (int k = 0; k < n; ++k) sum += w(offset + n + k, offset + k + 1);
  return sum / n;
}

std::vector<int> induction_ids(int n, std::uint64_t seed, int vocab_size) {
  const int range = std::min(vocab_size, kInductionBos);
  if (n < 0 || range < n)
    throw std::invalid_argument("induction ids: cannot draw " + std::to_string(n) +
                                " distinct tokens from ids 0.." + std::to_string(range - 1));
  // Mt19937 takes 32 bits of seed; fold the upper half in so that seeds
  // differing only there give different ids.
  Mt19937 gen(static_cast<std::uint32_t>(seed ^ (seed >> 32)));
  // Rejection keeps the draw uniform: words at or above `limit` are redrawn.
  const std::uint64_t span = std::uint64_t{1} << 32;
  const std::uint64_t limit = span - span % static_cast<std::uint64_t>(range);
  std::vector<int> ids;
  std::unordered_set<int> taken;
  while (static_cast<int>(ids.size()) < n) {
    const std::uint32_t word = gen();
    if (word >= limit) continue;
    const int id = static_cast<int>(word % static_cast<std::uint32_t>(range));
    if (taken.insert(id).second) ids.push_back(id);
  }
  return ids;
}

ModelPatterns model_induction(const std::shared_ptr<const Gpt2Model>& model, int induction_n,
                              std::uint64_t seed) {
  if (!model) throw std::invalid_argument("model induction: no model");
  if (induction_n < 2)
    throw std::invalid_argument("the induction sequence needs at least 2 tokens (got " +
                                std::to_string(induction_n) + ")");
  const Gpt2Config& c = model->config();
  ModelPatterns p;
  p.layers = c.n_layer;
  p.heads = c.n_head;
  p.induction_offset = c.vocab_size > kInductionBos ? 1 : 0;
  p.induction_n = std::min(induction_n, (c.n_positions - p.induction_offset) / 2);
  if (p.induction_n < 2)
    throw std::invalid_argument("the model reads " + std::to_string(c.n_positions) +
                                " positions: too few for an induction sequence of 2 tokens twice");
  const std::vector<int> r = induction_ids(p.induction_n, seed, c.vocab_size);
  if (p.induction_offset) p.induction_sequence.push_back(kInductionBos);
  p.induction_sequence.insert(p.induction_sequence.end(), r.begin(), r.end());
  p.induction_sequence.insert(p.induction_sequence.end(), r.begin(), r.end());
  ModelRun repeated(model, p.induction_sequence);
  for (int l = 0; l < p.layers; ++l)
    for (int h = 0; h < p.heads; ++h) {
      const auto wr = repeated.stage({l, h, stage_id::weights});
      if (!wr)
        throw std::logic_error("model induction: no weights for layer " + std::to_string(l) +
                               " head " + std::to_string(h));
      p.induction.push_back(induction_score(*wr, p.induction_n, p.induction_offset));
    }
  return p;
}

ModelPatterns model_patterns(ModelRun& text_run, const std::shared_ptr<const Gpt2Model>& model,
                             int induction_n, std::uint64_t seed) {
  if (!model || &text_run.model() != model.get())
    throw std::invalid_argument(
        "model patterns: the text run runs another model than the one given");
  ModelPatterns p = model_induction(model, induction_n, seed);
  for (int l = 0; l < p.layers; ++l)
    for (int h = 0; h < p.heads; ++h) {
      const auto w = text_run.stage({l, h, stage_id::weights});
      if (!w)
        throw std::logic_error("model patterns: no weights for layer " + std::to_string(l) +
                               " head " + std::to_string(h));
      p.scores.push_back(pattern_scores(*w));
    }
  return p;
}

std::string model_patterns_json(const ModelPatterns& p, std::string_view model_name) {
  using json = nlohmann::ordered_json;  // keys in the order written
  json scores = json::array();
  for (int l = 0; l < p.layers; ++l) {
    for (int h = 0; h < p.heads; ++h) {
      const auto at = static_cast<std::size_t>(l * p.heads + h);
      const HeadPatternScores& s = p.scores[at];
      json row = json::object();
      row["layer"] = l;
      row["head"] = h;
      row["previous_token"] = s.previous_token;
      row["first_token"] = s.first_token;
      row["self"] = s.self;
      row["entropy"] = s.entropy;
      row["entropy_normalised"] = s.entropy_normalised;
      row["induction"] = p.induction[at];
      scores.push_back(std::move(row));
    }
  }
  json explanations = json::object();
  for (PatternKind k : kPatternKinds)
    explanations[std::string(pattern_key(k))] = std::string(pattern_explanation(k));
  std::string out =
      "{\"model\": " + detail::json_quoted(model_name) +
      ",\n \"layers\": " + std::to_string(p.layers) + ",\n \"heads\": " + std::to_string(p.heads) +
      ",\n \"induction_n\": " + std::to_string(p.induction_n) +
      ",\n \"induction_ids\": " + json(p.induction_sequence).dump() + ",\n \"scores\": [";
  for (std::size_t i = 0; i < scores.size(); ++i) out += (i ? ",\n  " : "\n  ") + scores[i].dump();
  out += "],\n \"explanations\": " + explanations.dump() + "}\n";
  return out;
}

}  // namespace attnscope::core
