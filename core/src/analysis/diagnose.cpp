// diagnose.cpp: the first unexpected NaN/inf of a trace, explained (see diagnose.hpp).
//
// Every stage before the one reported is finite (that is what "first" means),
// so its non-finite values were made by its own arithmetic: a sum of products
// that left float32's range. The cause names the operands' magnitudes; the
// advice is the largest power of ten for the embeddings at which no stage of
// this module (with these parameters) can overflow, from upper bounds of each
// stage (projections, context and output grow linearly with the embeddings,
// scores with their square).
#include "attnscope/analysis/diagnose.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "attnscope/base/stages.hpp"
#include "attnscope/formats/formats.hpp"

namespace attnscope::core {

namespace {

// The largest |value| among the finite values of m (0 when there are none).
double max_abs(const RowMatrix& m) {
  double best = 0;
  for (Eigen::Index k = 0; k < m.size(); ++k) {
    const float v = m.data()[k];
    if (std::isfinite(v)) best = std::max(best, static_cast<double>(std::fabs(v)));
  }
  return best;
}

double max_abs(const Stage* s) { return s ? max_abs(s->data()) : 0.0; }

// The largest row sum of |value| (finite values only): how much a row of
// weights can multiply the largest value it averages.
double max_row_abs_sum(const RowMatrix& m) {
  double best = 0;
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    double sum = 0;
    for (Eigen::Index c = 0; c < m.cols(); ++c)
      if (std::isfinite(m(r, c))) sum += std::fabs(static_cast<double>(m(r, c)));
    best = std::max(best, sum);
  }
  return best;
}

// A magnitude for people: 3 significant digits, exponents without '+' or
// leading zeros ("3.4e38", "1e-30", "0.25", "1200").
std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  const double a = std::fabs(v);
  char buf[48];
  if (a != 0 && (a >= 1e5 || a < 1e-3)) {
    int exp = static_cast<int>(std::floor(std::log10(a)));
    double mant = v / std::pow(10.0, exp);
    if (std::fabs(mant) >= 9.995) {  // 9.996e5 rounds to 10.0e5: renormalise
      mant /= 10;
      ++exp;
    }
    std::snprintf(buf, sizeof buf, "%.3g", mant);
    return std::string(buf) + "e" + std::to_string(exp);
  }
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string value_name(float v) {
  if (std::isnan(v)) return "NaN";
  return v > 0 ? "+inf" : "-inf";
}

bool unexpected_at(const BlockRecipe& v, const Stage& s, Eigen::Index r, Eigen::Index c) {
  return !std::isfinite(s.data()(r, c)) && !nonfinite_expected(v, s, r, c);
}

// True when all n floats are -inf (no branch: the loop vectorizes).
bool all_minus_inf(const float* v, Eigen::Index n) {
  int other = 0;
  for (Eigen::Index i = 0; i < n; ++i)
    other |= static_cast<int>(v[i] != -std::numeric_limits<float>::infinity());
  return other == 0;
}

// The number of unexpected non-finite cells of `s`, and the first one.
struct Scan {
  long long cells = 0;
  Eigen::Index row = 0, col = 0;
};
Scan scan(const BlockRecipe& v, const Stage& s) {
  Scan out;
  const RowMatrix& m = s.data();
  if (all_finite(m)) return out;
  // A masked stage's rows are finite up to the diagonal and -inf after it:
  // such rows are passed whole (vectorised) before any cell is looked at.
  const StageInfo* info = find_stage_info(s.id);
  const bool masked = info && info->holds_mask && v.has(BlockPart::Mask);
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    const float* row = m.row(r).data();
    if (masked && r < m.cols()) {
      if (all_finite(row, r + 1) && all_minus_inf(row + r + 1, m.cols() - r - 1)) continue;
    } else if (all_finite(row, m.cols())) {
      continue;
    }
    for (Eigen::Index c = 0; c < m.cols(); ++c)
      if (unexpected_at(v, s, r, c) && out.cells++ == 0) {
        out.row = r;
        out.col = c;
      }
  }
  return out;
}

std::string quoted_label(const std::vector<std::string>& labels, Eigen::Index k) {
  if (k < 0 || k >= static_cast<Eigen::Index>(labels.size())) return "";
  return " ('" + labels[static_cast<std::size_t>(k)] + "')";
}

std::string where_text(const Trace& trace, const Stage& s, Eigen::Index r, Eigen::Index c) {
  const StageAxes axes = stage_axes(trace, s);
  std::string w = s.id;
  if (s.head >= 0) w += " (head " + std::to_string(s.head) + ")";
  w += ", row " + std::to_string(r) + quoted_label(axes.row_labels, r);
  w += ", column " + std::to_string(c) + quoted_label(axes.col_labels, c);
  return w;
}

// The head whose projections/values feed `s`: per-head stages of the split
// module read the whole layer's W (head -1); the wrapper's heads own theirs.
int weights_head(const Trace& trace, const Stage& s) {
  return trace.recipe().stacked_heads() ? s.head : -1;
}

constexpr char kRange[] =
    "overflowed float32's range (numbers beyond about ±3.4e38 become ±inf, and then "
    "inf − inf gives NaN)";

struct Explanation {
  std::string cause;
  std::string advice;
};

// The largest |value| of every stage with this id, over all heads.
double max_abs_all(const Trace& trace, std::string_view id) {
  double best = 0;
  for (const Stage& s : trace.stages)
    if (s.id == id) best = std::max(best, max_abs(s.data()));
  return best;
}

// Upper bounds of every stage's magnitude as a function of the largest
// embedding magnitude x, from the parameters' largest magnitudes: a product
// over n terms is at most n times its largest term, a softmax row sums to 1
// (to 1/(1-p) after dropout).
struct PipelineBounds {
  bool simple = false, multihead = false;
  double d_in = 1, d_k = 1, d_out = 1;
  double wq = 0, wk = 0, wv = 0, bq = 0, bk = 0, bv = 0, wout = 0, bout = 0;
  double dropout_scale = 1;
  // Latent attention: keys and values come up from the latent.
  bool latent = false;
  double latent_dim = 1, wdown = 0, bdown = 0, wuk = 0, buk = 0, wuv = 0, buv = 0;
  // RoPE mixes two components of a row: |x cos - y sin| <= 2 max(|x|, |y|).
  double rotation = 1;

  explicit PipelineBounds(const Trace& t) {
    const Config& c = t.config;
    const BlockRecipe r = t.recipe();
    simple = !r.has(BlockPart::Projection);
    multihead = r.has(BlockPart::OutProj);
    d_in = t.d_in;
    d_k = simple ? t.d_in : t.head_dim();
    d_out = t.projected_width();
    wq = max_abs_all(t, stage_id::W_query), wk = max_abs_all(t, stage_id::W_key),
    wv = max_abs_all(t, stage_id::W_value);
    bq = max_abs_all(t, stage_id::b_query), bk = max_abs_all(t, stage_id::b_key),
    bv = max_abs_all(t, stage_id::b_value);
    wout = max_abs_all(t, stage_id::W_out), bout = max_abs_all(t, stage_id::b_out);
    if (r.has(BlockPart::Dropout) && c.training && c.dropout > 0 && c.dropout < 1)
      dropout_scale = 1.0 / (1.0 - c.dropout);
    const Stage* down = t.find(stage_id::W_down);
    latent = down != nullptr;
    if (latent) {
      latent_dim = static_cast<double>(down->data().cols());  // W_down is (d_in, latent)
      wdown = max_abs_all(t, stage_id::W_down), bdown = max_abs_all(t, stage_id::b_down);
      wuk = max_abs_all(t, stage_id::W_up_key), buk = max_abs_all(t, stage_id::b_up_key);
      wuv = max_abs_all(t, stage_id::W_up_value), buv = max_abs_all(t, stage_id::b_up_value);
    }
    if (t.find(stage_id::queries_rotated) != nullptr) rotation = 2;
  }

  // The largest of the stages' bounds for embeddings up to x.
  double largest(double x) const {
    if (simple) return std::max(d_in * x * x, x);
    double q = d_in * x * wq + bq, k = d_in * x * wk + bk, v = d_in * x * wv + bv;
    double m = 0;
    if (latent) {
      const double down = d_in * x * wdown + bdown;
      k = latent_dim * down * wuk + buk, v = latent_dim * down * wuv + buv;
      m = down;
    }
    q *= rotation, k *= rotation;
    const double context = v * dropout_scale;
    m = std::max({m, q, k, v, d_k * q * k, context});
    if (multihead) m = std::max(m, d_out * context * wout + bout);
    return m;
  }
};

// What to change: the largest power of ten for the embeddings' magnitude at
// which no stage can leave float32's range (with 1% to spare for rounding),
// or smaller weights when even zero embeddings would not fit.
std::string embeddings_advice(const Trace& trace) {
  const PipelineBounds bounds(trace);
  const double x = max_abs(trace.find(stage_id::inputs));
  const double fits = 0.99 * kFloatMax;
  if (!(bounds.largest(0.0) <= fits))
    return "Use smaller weights: with these, even embeddings of zero overflow";
  const int top = x > 0 ? static_cast<int>(std::floor(std::log10(x))) : 0;
  for (int e = top; e >= -45; --e) {
    const double limit = std::pow(10.0, e);
    if (bounds.largest(limit) > fits) continue;
    std::string advice = "Keep embedding values below about " + number(limit);
    if (trace.explicit_weights)
      advice += ", or use smaller weights (these were imported or edited)";
    return advice;
  }
  return "Use smaller weights: with these, even tiny embeddings overflow";
}

Explanation explain_projection(const Trace& trace, const Stage& s) {
  const std::string which = s.id == stage_id::queries ? "query"
                            : s.id == stage_id::keys  ? "key"
                                                      : "value";
  const int h = weights_head(trace, s);
  const Stage* w = trace.find("W_" + which, h);
  const Stage* b = trace.find("b_" + which, h);
  const double x = max_abs(trace.find(stage_id::inputs));
  const double wmax = max_abs(w), bmax = max_abs(b);
  const double bound = static_cast<double>(trace.d_in) * x * wmax + bmax;
  return {"X·W_" + which + " " + kRange + ": the embeddings reach |x| = " + number(x) + " and W_" +
              which + "'s entries |w| = " + number(wmax) + ", so a sum of d_in = " +
              std::to_string(trace.d_in) + " products can reach " + number(bound),
          embeddings_advice(trace)};
}

Explanation explain_scores(const Trace& trace, const Stage& s) {
  const double x = max_abs(trace.find(stage_id::inputs));
  if (!trace.recipe().has(BlockPart::Projection)) {
    const double bound = static_cast<double>(trace.d_in) * x * x;
    return {std::string("the scores X·Xᵀ ") + kRange + ": the embeddings reach |x| = " + number(x) +
                ", and a dot product of two embeddings over d_in = " + std::to_string(trace.d_in) +
                " dimensions can reach " + number(bound),
            embeddings_advice(trace)};
  }
  const Stage* q = trace.find(stage_id::queries, s.head);
  const Stage* k = trace.find(stage_id::keys, s.head);
  const double qmax = max_abs(q), kmax = max_abs(k);
  const auto d_k = k ? static_cast<double>(k->data().cols()) : 1.0;
  const double bound = d_k * qmax * kmax;
  return {std::string("the scores Q·Kᵀ ") + kRange + ": the queries reach |q| = " + number(qmax) +
              " and the keys |k| = " + number(kmax) + " over d_k = " +
              std::to_string(static_cast<int>(d_k)) + " dimensions (dot products up to " +
              number(bound) + "), because the embeddings reach |x| = " + number(x),
          embeddings_advice(trace)};
}

Explanation explain_context(const Trace& trace, const Stage& s) {
  const bool simple = !trace.recipe().has(BlockPart::Projection);
  const Stage* w = trace.find(stage_id::dropped_weights, s.head);
  if (!w) w = trace.find(stage_id::weights, s.head);
  const Stage* v = simple ? trace.find(stage_id::inputs) : trace.find(stage_id::values, s.head);
  const double vmax = max_abs(v);
  const double wsum = w ? max_row_abs_sum(w->data()) : 1.0;
  const std::string_view what = simple ? "embeddings" : stage_id::values;  // not a stage id
  std::string cause = std::string("weights·V ") + kRange + ": the " + std::string(what) +
                      " reach |v| = " + number(vmax);
  if (w && w->id == stage_id::dropped_weights && wsum > 1.0 + 1e-6)
    cause += ", and dropout scaled the kept weights up to a row sum of " + number(wsum);
  return {cause, embeddings_advice(trace)};
}

Explanation explain_output(const Trace& trace) {
  const double c = max_abs(trace.find(stage_id::concat));
  const double w = max_abs(trace.find(stage_id::W_out)), b = max_abs(trace.find(stage_id::b_out));
  const int d_out = trace.projected_width();
  const double bound = static_cast<double>(d_out) * c * w + b;
  return {std::string("concat·W_out + b_out ") + kRange + ": the heads' contexts reach |c| = " +
              number(c) + " and W_out's entries |w| = " + number(w) + ", so a sum of d_out = " +
              std::to_string(d_out) + " products can reach " + number(bound),
          embeddings_advice(trace)};
}

Explanation explain(const Trace& trace, const Stage& s) {
  if (s.id == stage_id::inputs)
    return {
        "the embeddings themselves are not finite numbers",
        "Give every embedding a finite value (the editor and the importers refuse NaN and inf)"};
  if (is_parameter(s.id))
    return {"the weights " + s.id + " hold it", "Use weights whose values are all finite numbers"};
  if (s.id == stage_id::queries || s.id == stage_id::keys || s.id == stage_id::values)
    return explain_projection(trace, s);
  if (s.id == stage_id::scores) return explain_scores(trace, s);
  if (s.id == stage_id::context) return explain_context(trace, s);
  if (s.id == stage_id::output && trace.recipe().has(BlockPart::OutProj))
    return explain_output(trace);
  // The other stages only rescale, mask, normalise or copy finite inputs.
  return {s.id + " produced it from finite inputs, which its arithmetic should never do",
          "This is a bug: please report it with the session file (File > Save session)"};
}

}  // namespace

bool nonfinite_expected(Variant variant, const Stage& stage, Eigen::Index row, Eigen::Index col) {
  return nonfinite_expected(chapter3_recipe(variant), stage, row, col);
}

bool nonfinite_expected(const BlockRecipe& recipe, const Stage& stage, Eigen::Index row,
                        Eigen::Index col) {
  // The book masks the raw scores, then scales them: in a causal run both
  // stages hold the mask's -inf in the future.
  const StageInfo* info = find_stage_info(stage.id);
  const bool masked_stage = info && info->holds_mask && recipe.has(BlockPart::Mask);
  // A sliding window also hides the keys more than the window back (col < row).
  if (!masked_stage || (col <= row && !recipe.has(BlockPart::Window))) return false;
  const float v = stage.data()(row, col);
  return std::isinf(v) && v < 0;
}

std::string NonFiniteFinding::message() const {
  std::string m = value_name(value) + " in " + where;
  if (cells > 1) m += " (and " + std::to_string(cells - 1) + " more cells of that stage)";
  m += ": " + cause + ". " + advice + ".";
  if (later_stages > 0)
    m += " " + std::to_string(later_stages) +
         (later_stages == 1 ? " later stage inherits" : " later stages inherit") +
         " non-finite values from it.";
  return m;
}

std::optional<NonFiniteFinding> find_nonfinite(const Trace& trace) {
  std::optional<NonFiniteFinding> found;
  for (const Stage& s : trace.stages) {
    const Scan sc = scan(trace.recipe(), s);
    if (sc.cells == 0) continue;
    if (found) {
      ++found->later_stages;
      continue;
    }
    NonFiniteFinding f;
    f.stage = s.id;
    f.head = s.head;
    f.row = static_cast<int>(sc.row);
    f.col = static_cast<int>(sc.col);
    f.value = s.data()(sc.row, sc.col);
    f.cells = sc.cells;
    f.where = where_text(trace, s, sc.row, sc.col);
    Explanation e = explain(trace, s);
    f.cause = std::move(e.cause);
    f.advice = std::move(e.advice);
    found = std::move(f);
  }
  return found;
}

}  // namespace attnscope::core
