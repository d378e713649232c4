// teach.cpp: the numbers behind the teaching views (see teach.hpp).
//
// Sections follow the header: 1. book tensors, 2. softmax unfolded,
// 3. naive normalisation, 4. masking, 5. dropout, 6. sizes, 7. head split,
// 8. compare, 9. parameters of a trace.
#include "attnscope/book/teach.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>

#include "attnscope/analysis/inspect.hpp"
#include "attnscope/base/rng.hpp"
#include "attnscope/base/stages.hpp"

namespace attnscope::core {

namespace {

// A printed value matches when the app's value rounds to it at 4 decimals
// (half a unit of the 4th decimal, plus a hair for float -> decimal).
constexpr float kBookTolerance = 0.5e-4f + 1e-6f;

// What the softmax of `head` would read with nothing masked: the scores
// divided by sqrt(d_k) (simple: the scores). A causal trace's scaled_scores
// already hold -inf in the future (the book masks before it scales), so
// there the division is redone from the raw scores, as the engine does it.
std::optional<RowMatrix> unmasked_logits(const Trace& t, int head) {
  const Stage* scores = t.find(stage_id::scores, head);
  if (!scores) return std::nullopt;
  if (!is_causal(t.config.variant)) {
    if (const Stage* scaled = t.find(stage_id::scaled_scores, head)) return scaled->data();
    return scores->data();
  }
  return RowMatrix(scores->data() / trace_divisor(t));
}

}  // namespace

// ---------------------------------------------------------------------------
// 1. The book's printed tensors (chapter 3's notebook, on the six tokens
// "Your journey starts with one step").

// Data table: every printed tensor, with the run that reproduces it.
const std::vector<BookMatrix>& book_matrices() {
  using enum BookSource;
  const BookRun simple{Variant::Simple, 2, 1, 123};
  const BookRun v1{Variant::SelfAttentionV1, 2, 1, 123};
  const BookRun v2{Variant::SelfAttentionV2, 2, 1, 789};
  const BookRun causal789{Variant::Causal, 2, 1, 789};
  const BookRun causal123{Variant::Causal, 2, 1, 123};
  const BookRun wrapper{Variant::MultiheadWrapper, 2, 2, 123};
  const BookRun mha{Variant::Multihead, 2, 2, 123};
  constexpr float kInf = -std::numeric_limits<float>::infinity();  // as printed: -inf
  // 3.5.1: the raw scores of SelfAttention_v2 (seed 789), -inf above the diagonal.
  const RowMatrix masked_printed =
      matrix_from_rows({{0.2899f, kInf, kInf, kInf, kInf, kInf},
                        {0.4656f, 0.1723f, kInf, kInf, kInf, kInf},
                        {0.4594f, 0.1703f, 0.1731f, kInf, kInf, kInf},
                        {0.2642f, 0.1024f, 0.1036f, 0.0186f, kInf, kInf},
                        {0.2183f, 0.0874f, 0.0882f, 0.0177f, 0.0786f, kInf},
                        {0.3408f, 0.1270f, 0.1290f, 0.0198f, 0.1290f, 0.0078f}});
  static const std::vector<BookMatrix> kAll = {
      {"attn_scores_2", "3.3.1", simple, Stage, stage_id::scores, 1, false,
       matrix_from_rows({{0.9544f, 1.4950f, 1.4754f, 0.8434f, 0.7070f, 1.0865f}})},
      {"attn_weights_2_tmp", "3.3.1", simple, NaiveNormalise, stage_id::scores, 1, false,
       matrix_from_rows({{0.1455f, 0.2278f, 0.2249f, 0.1285f, 0.1077f, 0.1656f}})},
      {"attn_weights_2", "3.3.1", simple, Stage, stage_id::weights, 1, false,
       matrix_from_rows({{0.1385f, 0.2379f, 0.2333f, 0.1240f, 0.1082f, 0.1581f}})},
      {"context_vec_2", "3.3.1", simple, Stage, stage_id::context, 1, false,
       matrix_from_rows({{0.4419f, 0.6515f, 0.5683f}})},
      {"attn_scores", "3.3.2", simple, Stage, stage_id::scores, -1, false,
       matrix_from_rows({{0.9995f, 0.9544f, 0.9422f, 0.4753f, 0.4576f, 0.6310f},
                         {0.9544f, 1.4950f, 1.4754f, 0.8434f, 0.7070f, 1.0865f},
                         {0.9422f, 1.4754f, 1.4570f, 0.8296f, 0.7154f, 1.0605f},
                         {0.4753f, 0.8434f, 0.8296f, 0.4937f, 0.3474f, 0.6565f},
                         {0.4576f, 0.7070f, 0.7154f, 0.3474f, 0.6654f, 0.2935f},
                         {0.6310f, 1.0865f, 1.0605f, 0.6565f, 0.2935f, 0.9450f}})},
      {"attn_weights", "3.3.2", simple, Stage, stage_id::weights, -1, false,
       matrix_from_rows({{0.2098f, 0.2006f, 0.1981f, 0.1242f, 0.1220f, 0.1452f},
                         {0.1385f, 0.2379f, 0.2333f, 0.1240f, 0.1082f, 0.1581f},
                         {0.1390f, 0.2369f, 0.2326f, 0.1242f, 0.1108f, 0.1565f},
                         {0.1435f, 0.2074f, 0.2046f, 0.1462f, 0.1263f, 0.1720f},
                         {0.1526f, 0.1958f, 0.1975f, 0.1367f, 0.1879f, 0.1295f},
                         {0.1385f, 0.2184f, 0.2128f, 0.1420f, 0.0988f, 0.1896f}})},
      {"all_context_vecs", "3.3.2", simple, Stage, stage_id::context, -1, false,
       matrix_from_rows({{0.4421f, 0.5931f, 0.5790f},
                         {0.4419f, 0.6515f, 0.5683f},
                         {0.4431f, 0.6496f, 0.5671f},
                         {0.4304f, 0.6298f, 0.5510f},
                         {0.4671f, 0.5910f, 0.5266f},
                         {0.4177f, 0.6503f, 0.5645f}})},
      // stage-literals: off (first fields: the book's variable names)
      {"W_query", "3.4.1", v1, Stage, stage_id::W_query, -1, false,
       matrix_from_rows({{0.2961f, 0.5166f}, {0.2517f, 0.6886f}, {0.0740f, 0.8665f}})},
      {"W_key", "3.4.1", v1, Stage, stage_id::W_key, -1, false,
       matrix_from_rows({{0.1366f, 0.1025f}, {0.1841f, 0.7264f}, {0.3153f, 0.6871f}})},
      {"W_value", "3.4.1", v1, Stage, stage_id::W_value, -1, false,
       matrix_from_rows({{0.0756f, 0.1966f}, {0.3164f, 0.4017f}, {0.1186f, 0.8274f}})},
      {"query_2", "3.4.1", v1, Stage, stage_id::queries, 1, false,
       matrix_from_rows({{0.4306f, 1.4551f}})},
      {"keys", "3.4.1", v1, Stage, stage_id::keys, -1, false,
       // stage-literals: on
       matrix_from_rows({{0.3669f, 0.7646f},
                         {0.4433f, 1.1419f},
                         {0.4361f, 1.1156f},
                         {0.2408f, 0.6706f},
                         {0.1827f, 0.3292f},
                         {0.3275f, 0.9642f}})},
      {"attn_score_22", "3.4.1", v1, Stage, stage_id::scores, 1, false,
       matrix_from_rows({{1.8524f}}), 1},
      {"attn_scores_2", "3.4.1", v1, Stage, stage_id::scores, 1, false,
       matrix_from_rows({{1.2705f, 1.8524f, 1.8111f, 1.0795f, 0.5577f, 1.5440f}})},
      {"attn_weights_2", "3.4.1", v1, Stage, stage_id::weights, 1, false,
       matrix_from_rows({{0.1500f, 0.2264f, 0.2199f, 0.1311f, 0.0906f, 0.1820f}})},
      {"context_vec_2", "3.4.1", v1, Stage, stage_id::context, 1, false,
       matrix_from_rows({{0.3061f, 0.8210f}})},
      {"sa_v1(inputs)", "3.4.2", v1, Stage, stage_id::context, -1, false,
       matrix_from_rows({{0.2996f, 0.8053f},
                         {0.3061f, 0.8210f},
                         {0.3058f, 0.8203f},
                         {0.2948f, 0.7939f},
                         {0.2927f, 0.7891f},
                         {0.2990f, 0.8040f}})},
      {"W_query.weight", "3.4.2", v2, Stage, stage_id::W_query, -1, true,
       matrix_from_rows({{0.3161f, 0.4568f, 0.5118f}, {-0.1683f, -0.3379f, -0.0918f}})},
      {"W_key.weight", "3.4.2", v2, Stage, stage_id::W_key, -1, true,
       matrix_from_rows({{0.4058f, -0.4704f, 0.2368f}, {0.2134f, -0.2601f, -0.5105f}})},
      {"W_value.weight", "3.4.2", v2, Stage, stage_id::W_value, -1, true,
       matrix_from_rows({{0.2526f, -0.1415f, -0.1962f}, {0.5191f, -0.0852f, -0.2043f}})},
      {"sa_v2(inputs)", "3.4.2", v2, Stage, stage_id::context, -1, false,
       matrix_from_rows({{-0.0739f, 0.0713f},
                         {-0.0748f, 0.0703f},
                         {-0.0749f, 0.0702f},
                         {-0.0760f, 0.0685f},
                         {-0.0763f, 0.0679f},
                         {-0.0754f, 0.0693f}})},
      {"attn_weights", "3.5.1", v2, Stage, stage_id::weights, -1, false,
       matrix_from_rows({{0.1921f, 0.1646f, 0.1652f, 0.1550f, 0.1721f, 0.1510f},
                         {0.2041f, 0.1659f, 0.1662f, 0.1496f, 0.1665f, 0.1477f},
                         {0.2036f, 0.1659f, 0.1662f, 0.1498f, 0.1664f, 0.1480f},
                         {0.1869f, 0.1667f, 0.1668f, 0.1571f, 0.1661f, 0.1564f},
                         {0.1830f, 0.1669f, 0.1670f, 0.1588f, 0.1658f, 0.1585f},
                         {0.1935f, 0.1663f, 0.1666f, 0.1542f, 0.1666f, 0.1529f}})},
      // The book masks SelfAttention_v2's raw scores by hand, then the same
      // masked_fill_ runs inside CausalAttention: one print, two places.
      {"masked (attn_scores)", "3.5.1", v2, MaskMinusInf, stage_id::scores, -1, false,
       masked_printed},
      {"masked", "3.5.1", causal789, Stage, stage_id::masked_scores, -1, false, masked_printed},
      {"masked_simple_norm", "3.5.1", v2, TrilRenormalise, stage_id::weights, -1, false,
       matrix_from_rows({{1.0000f, 0, 0, 0, 0, 0},
                         {0.5517f, 0.4483f, 0, 0, 0, 0},
                         {0.3800f, 0.3097f, 0.3103f, 0, 0, 0},
                         {0.2758f, 0.2460f, 0.2462f, 0.2319f, 0, 0},
                         {0.2175f, 0.1983f, 0.1984f, 0.1888f, 0.1971f, 0},
                         {0.1935f, 0.1663f, 0.1666f, 0.1542f, 0.1666f, 0.1529f}})},
      {"attn_weights (masked)", "3.5.1", causal789, Stage, stage_id::weights, -1, false,
       matrix_from_rows({{1.0000f, 0, 0, 0, 0, 0},
                         {0.5517f, 0.4483f, 0, 0, 0, 0},
                         {0.3800f, 0.3097f, 0.3103f, 0, 0, 0},
                         {0.2758f, 0.2460f, 0.2462f, 0.2319f, 0, 0},
                         {0.2175f, 0.1983f, 0.1984f, 0.1888f, 0.1971f, 0},
                         {0.1935f, 0.1663f, 0.1666f, 0.1542f, 0.1666f, 0.1529f}})},
      {"dropout(example)", "3.5.2", causal789, DropoutOnes, "", -1, false,
       matrix_from_rows({{2, 2, 0, 2, 2, 0},
                         {0, 0, 0, 2, 0, 2},
                         {2, 2, 2, 2, 0, 2},
                         {0, 2, 2, 0, 0, 2},
                         {0, 2, 0, 2, 0, 2},
                         {0, 2, 2, 2, 2, 0}})},
      {"dropout(attn_weights)", "3.5.2", causal789, DropoutWeights, stage_id::weights, -1, false,
       matrix_from_rows({{2.0000f, 0, 0, 0, 0, 0},
                         {0, 0, 0, 0, 0, 0},
                         {0.7599f, 0.6194f, 0.6206f, 0, 0, 0},
                         {0, 0.4921f, 0.4925f, 0, 0, 0},
                         {0, 0.3966f, 0, 0.3775f, 0, 0},
                         {0, 0.3327f, 0.3331f, 0.3084f, 0.3331f, 0}})},
      {"context_vecs", "3.5.3", causal123, Stage, stage_id::context, -1, false,
       matrix_from_rows({{-0.4519f, 0.2216f},
                         {-0.5874f, 0.0058f},
                         {-0.6300f, -0.0632f},
                         {-0.5675f, -0.0843f},
                         {-0.5526f, -0.0981f},
                         {-0.5299f, -0.1081f}})},
      {"context_vecs", "3.6.1", wrapper, Stage, stage_id::output, -1, false,
       matrix_from_rows({{-0.4519f, 0.2216f, 0.4772f, 0.1063f},
                         {-0.5874f, 0.0058f, 0.5891f, 0.3257f},
                         {-0.6300f, -0.0632f, 0.6202f, 0.3860f},
                         {-0.5675f, -0.0843f, 0.5478f, 0.3589f},
                         {-0.5526f, -0.0981f, 0.5321f, 0.3428f},
                         {-0.5299f, -0.1081f, 0.5077f, 0.3493f}})},
      {"context_vecs", "3.6.2", mha, Stage, stage_id::output, -1, false,
       matrix_from_rows({{0.3190f, 0.4858f},
                         {0.2943f, 0.3897f},
                         {0.2856f, 0.3593f},
                         {0.2693f, 0.3873f},
                         {0.2639f, 0.3928f},
                         {0.2575f, 0.4028f}})},
  };
  return kAll;
}

bool book_applies(const BookMatrix& book, const Trace& trace) {
  const Config& c = trace.config;
  if (c.variant != book.run.variant || trace.num_tokens() != 6 || trace.d_in != 3) return false;
  if (c.variant == Variant::Simple) return true;  // no weights, no seed
  if (c.d_out != book.run.d_out || (c.seed & 0xffffffffu) != book.run.seed) return false;
  if (has_heads(c.variant) && c.num_heads != book.run.num_heads) return false;
  if (c.variant != Variant::SelfAttentionV1 && c.qkv_bias) return false;
  return true;
}

std::optional<RowMatrix> book_value(const BookMatrix& book, const Trace* trace) {
  if (book.source == BookSource::DropoutOnes) return apply_dropout(RowMatrix::Ones(6, 6), 0.5, 123);
  if (!trace) return std::nullopt;
  const Stage* s = trace->find(book.stage, -1);
  if (!s) return std::nullopt;
  RowMatrix m = s->data();
  switch (book.source) {
    case BookSource::Stage:
      break;
    case BookSource::NaiveNormalise:
      m = naive_normalise(m);
      break;
    case BookSource::TrilRenormalise: {
      RowMatrix tril = m.triangularView<Eigen::Lower>();
      for (Eigen::Index r = 0; r < tril.rows(); ++r) tril.row(r) /= tril.row(r).sum();
      m = std::move(tril);
      break;
    }
    case BookSource::DropoutWeights:
      m = apply_dropout(m, 0.5, 123);
      break;
    case BookSource::MaskMinusInf:
      for (Eigen::Index r = 0; r < m.rows(); ++r)
        for (Eigen::Index c = r + 1; c < m.cols(); ++c)
          m(r, c) = -std::numeric_limits<float>::infinity();
      break;
    case BookSource::DropoutOnes:
      break;
  }
  if (book.row >= 0) {
    if (book.row >= m.rows()) return std::nullopt;
    if (book.col >= 0) {
      if (book.col >= m.cols()) return std::nullopt;
      const float v = m(book.row, book.col);
      m = RowMatrix::Constant(1, 1, v);
    } else {
      m = RowMatrix(m.row(book.row));
    }
  }
  if (book.transposed) m = RowMatrix(m.transpose());
  return m;
}

double applied_dropout(const Trace& trace) {
  const Config& c = trace.config;
  return !trace.is_model() && is_causal(c.variant) && c.training ? c.dropout : 0.0;
}

bool after_dropout(const BookMatrix& book) {
  if (book.source != BookSource::Stage) return false;
  for (std::string_view id :
       {stage_id::dropped_weights, stage_id::context, stage_id::concat, stage_id::output})
    if (book.stage == id) return true;
  return false;
}

BookCheck check_book(const BookMatrix& book, const Trace* trace) {
  BookCheck check;
  if (trace && after_dropout(book) && applied_dropout(*trace) != book.run.dropout) {
    check.dropout_differs = true;
    check.book_dropout = book.run.dropout;
    check.run_dropout = applied_dropout(*trace);
  }
  const auto value = book_value(book, trace);
  if (!value || value->rows() != book.printed.rows() || value->cols() != book.printed.cols())
    return check;
  check.comparable = true;
  check.max_diff = 0;
  for (Eigen::Index k = 0; k < value->size(); ++k) {
    const float a = value->data()[k], b = book.printed.data()[k];
    // −∞ equals −∞ (their difference would be NaN); −∞ against a number is infinitely off.
    const float d = a == b ? 0.0f
                    : (std::isinf(a) || std::isinf(b) || std::isnan(a))
                        ? std::numeric_limits<float>::infinity()
                        : std::abs(a - b);
    check.max_diff = std::max(check.max_diff, d);
  }
  check.matches = check.max_diff <= kBookTolerance && !check.dropout_differs;
  return check;
}

StageBookCheck check_book_stage(const Trace& trace, std::string_view stage_id) {
  StageBookCheck s;
  s.matches = true;
  for (const BookMatrix* b : book_matrices_for_stage(trace, stage_id)) {
    const BookCheck c = check_book(*b, &trace);
    ++s.count;
    s.matches = s.matches && c.matches;
    if (c.dropout_differs) {
      s.dropout_differs = true;
      s.book_dropout = c.book_dropout;
      s.run_dropout = c.run_dropout;
    }
    s.max_diff =
        std::max(s.max_diff, c.comparable ? c.max_diff : std::numeric_limits<float>::infinity());
    if (!s.names.empty()) s.names += ", ";
    s.names += std::string(b->name) + " §" + std::string(b->section);
  }
  if (s.count == 0) s.matches = false;
  return s;
}

std::vector<const BookMatrix*> book_matrices_for_stage(const Trace& trace,
                                                       std::string_view stage_id) {
  std::vector<const BookMatrix*> out;
  for (const BookMatrix& b : book_matrices())
    if (b.source == BookSource::Stage && b.stage == stage_id && book_applies(b, trace))
      out.push_back(&b);
  return out;
}

// ---------------------------------------------------------------------------
// 2. Softmax, unfolded

float trace_divisor(const Trace& trace) {
  if (trace.config.variant == Variant::Simple) return 1.0f;
  const Stage* k = trace.find(stage_id::keys, stage_head(trace, 0));
  if (!k) return 1.0f;
  // As the engine: float(d_k ** 0.5).
  return static_cast<float>(std::pow(static_cast<double>(k->data().cols()), 0.5));
}

std::optional<SoftmaxUnfolded> unfold_softmax(const Trace& trace, int head, int row,
                                              std::optional<float> divisor) {
  const int h = stage_head(trace, head);
  const Stage* scores = trace.find(stage_id::scores, h);
  if (!scores || row < 0 || row >= scores->data().rows()) return std::nullopt;
  const Stage* scaled_stage = trace.find(stage_id::scaled_scores, h);
  const bool causal = is_causal(trace.config.variant);
  const auto T = static_cast<std::size_t>(scores->data().cols());

  SoftmaxUnfolded u;
  u.divisor = divisor ? *divisor : trace_divisor(trace);
  const bool keep_trace = !divisor || *divisor == trace_divisor(trace);
  u.scores.resize(T);
  u.scaled.resize(T);
  u.masked.assign(T, false);
  u.shifted.resize(T);
  u.exps.resize(T);
  u.weights.resize(T);
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  u.row_max = kNegInf;
  for (std::size_t j = 0; j < T; ++j) {
    const auto jj = static_cast<Eigen::Index>(j);
    u.scores[j] = scores->data()(row, jj);
    u.masked[j] = causal && jj > row;
    // A causal trace's scaled scores hold -inf where masked; the row shows
    // what the division gives there before the mask hides it.
    u.scaled[j] = keep_trace && scaled_stage && !u.masked[j] ? scaled_stage->data()(row, jj)
                                                             : u.scores[j] / u.divisor;
    if (!u.masked[j]) u.row_max = std::max(u.row_max, u.scaled[j]);
  }
  u.sum = 0;
  int visible = 0;
  for (std::size_t j = 0; j < T; ++j) {
    u.shifted[j] = u.masked[j] ? kNegInf : u.scaled[j] - u.row_max;
    u.exps[j] = u.masked[j] ? 0.0f : std::exp(u.shifted[j]);
    u.sum += u.exps[j];
    visible += u.masked[j] ? 0 : 1;
  }
  const float inv = 1.0f / u.sum;  // PyTorch multiplies by the reciprocal
  u.entropy = 0;
  for (std::size_t j = 0; j < T; ++j) {
    u.weights[j] = u.exps[j] * inv;
    if (u.weights[j] > 0) u.entropy -= u.weights[j] * std::log(u.weights[j]);
  }
  u.max_entropy = std::log(static_cast<float>(std::max(visible, 1)));
  return u;
}

// ---------------------------------------------------------------------------
// 3. Naive normalisation

RowMatrix naive_normalise(const RowMatrix& scores) {
  RowMatrix out = scores;
  for (Eigen::Index r = 0; r < out.rows(); ++r) out.row(r) /= scores.row(r).sum();
  return out;
}

std::optional<NormalisationCompared> compare_normalisation(const Trace& trace, int head) {
  const Stage* scores = trace.find(stage_id::scores, stage_head(trace, head));
  if (!scores || scores->data().rows() != scores->data().cols()) return std::nullopt;
  const bool causal = is_causal(trace.config.variant);
  const Eigen::Index T = scores->data().rows();
  NormalisationCompared n;
  n.scores = scores->data();
  n.naive = RowMatrix::Zero(T, T);
  for (Eigen::Index r = 0; r < T; ++r) {
    const Eigen::Index visible = causal ? r + 1 : T;
    if (causal)
      for (Eigen::Index c = visible; c < T; ++c)
        n.scores(r, c) = -std::numeric_limits<float>::infinity();
    n.naive.row(r).head(visible) = naive_normalise(RowMatrix(scores->data().row(r).head(visible)));
  }
  n.softmax = softmax_rows(n.scores);  // exp(−∞) = 0 for future keys
  for (Eigen::Index r = 0; r < T; ++r) {
    n.naive_row_sums.push_back(n.naive.row(r).sum());
    n.softmax_row_sums.push_back(n.softmax.row(r).sum());
  }
  n.negative_naive = static_cast<int>((n.naive.array() < 0.0f).count());
  return n;
}

// ---------------------------------------------------------------------------
// 4. Masking two ways

namespace {

float max_finite_abs(const RowMatrix& m) {
  float best = 0;
  for (Eigen::Index k = 0; k < m.size(); ++k)
    if (std::isfinite(m.data()[k])) best = std::max(best, std::abs(m.data()[k]));
  return best;
}

}  // namespace

ShownDifference shown_difference(const RowMatrix& difference, const RowMatrix& a,
                                 const RowMatrix& b) {
  ShownDifference d;
  d.tolerance = kRoundingRelative * std::max(max_finite_abs(a), max_finite_abs(b));
  d.shown = difference;
  d.rounding_only = true;
  for (Eigen::Index k = 0; k < d.shown.size(); ++k) {
    float& v = d.shown.data()[k];
    const float mag = std::abs(v);  // NaN compares false: kept, and never "rounding"
    if (mag > d.max_abs) d.max_abs = mag;
    if (mag <= d.tolerance)
      v = 0.0f;
    else
      d.rounding_only = false;
  }
  return d;
}

std::string difference_caption(const ShownDifference& d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(d.max_abs));
  if (d.max_abs == 0.0f) return "identical (max |Δ| = 0)";
  if (d.rounding_only) return std::string("equal to float32 rounding (max |Δ| = ") + buf + ")";
  return std::string("largest |Δ| = ") + buf;
}

std::optional<MaskingWays> compare_masking(const Trace& trace, int head) {
  const std::optional<RowMatrix> logits = unmasked_logits(trace, stage_head(trace, head));
  if (!logits || logits->rows() != logits->cols()) return std::nullopt;
  const RowMatrix& s = *logits;  // (T, T) scaled scores, nothing masked
  const Eigen::Index T = s.rows();
  MaskingWays m;
  m.unmasked = softmax_rows(s);
  m.tril_multiplied = m.unmasked.triangularView<Eigen::Lower>();
  m.renormalised = m.tril_multiplied;
  for (Eigen::Index r = 0; r < T; ++r) m.renormalised.row(r) /= m.tril_multiplied.row(r).sum();
  RowMatrix filled = s;  // masked_fill(mask.bool(), -inf)
  for (Eigen::Index r = 0; r < T; ++r)
    for (Eigen::Index c = r + 1; c < T; ++c) filled(r, c) = -std::numeric_limits<float>::infinity();
  m.minus_inf = softmax_rows(filled);
  m.difference = m.renormalised - m.minus_inf;
  m.max_difference = T > 0 ? m.difference.cwiseAbs().maxCoeff() : 0.0f;
  m.shown = shown_difference(m.difference, m.renormalised, m.minus_inf);
  for (Eigen::Index r = 0; r < T; ++r) {
    const float sum = m.tril_multiplied.row(r).sum();
    m.wrong_row_sums.push_back(sum);
    if (std::abs(sum - 1.0f) > 1e-6f) m.wrong_rows.push_back(static_cast<int>(r));
  }
  return m;
}

// ---------------------------------------------------------------------------
// 5. Dropout

std::optional<DropoutView> dropout_view(const Trace& trace, int head) {
  const int h = stage_head(trace, head);
  const Stage* w = trace.find(stage_id::weights, h);
  const Stage* mask = trace.find(stage_id::dropout_mask, h);
  const Stage* dropped = trace.find(stage_id::dropped_weights, h);
  if (!w || !mask || !dropped) return std::nullopt;
  DropoutView v;
  v.p = trace.config.dropout;
  v.active = trace.config.training && v.p > 0;
  v.scale = v.p >= 1.0 ? 0.0f : 1.0f / static_cast<float>(1.0 - v.p);
  v.keep = (mask->data().array() != 0.0f).cast<float>().matrix();
  for (Eigen::Index r = 0; r < w->data().rows(); ++r) {
    v.row_sums_before.push_back(w->data().row(r).sum());
    v.row_sums_after.push_back(dropped->data().row(r).sum());
  }
  return v;
}

RowMatrix apply_dropout(const RowMatrix& m, double p, std::uint64_t seed) {
  TorchGenerator gen(seed);
  std::vector<std::uint8_t> keep(static_cast<std::size_t>(m.size()));
  gen.dropout_keep(p, keep.size(), keep.data());
  const float scale = p >= 1.0 ? 0.0f : 1.0f / static_cast<float>(1.0 - p);
  RowMatrix out = m;
  for (Eigen::Index k = 0; k < out.size(); ++k)
    out.data()[k] = keep[static_cast<std::size_t>(k)] ? out.data()[k] * scale : 0.0f;
  return out;
}

std::optional<DropoutAverage> dropout_average(const RowMatrix& weights, double p,
                                              std::uint64_t first_seed, int n) {
  if (weights.rows() > kDropoutAverageMaxTokens || weights.cols() > kDropoutAverageMaxTokens ||
      n < 1 || n > kDropoutAverageMaxSeeds)
    return std::nullopt;
  DropoutAverage a;
  Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(weights.rows(), weights.cols());
  for (int k = 0; k < n; ++k) {
    sum += apply_dropout(weights, p, first_seed + static_cast<std::uint64_t>(k)).cast<double>();
    const Eigen::MatrixXd mean = sum / static_cast<double>(k + 1);
    a.max_error.push_back(
        static_cast<float>((mean - weights.cast<double>()).cwiseAbs().maxCoeff()));
  }
  a.mean = (sum / static_cast<double>(n)).cast<float>();
  return a;
}

// ---------------------------------------------------------------------------
// 6. Sizes

ParameterCount count_parameters(const Config& c, int d_in) {
  ParameterCount n;
  const long long din = d_in, dout = c.d_out;
  const bool bias = c.qkv_bias && c.variant != Variant::SelfAttentionV1;
  const long long one_set = 3 * (din * dout + (bias ? dout : 0));
  switch (c.variant) {
    case Variant::Simple:
      break;
    case Variant::SelfAttentionV1:
    case Variant::SelfAttentionV2:
    case Variant::Causal:
      n.qkv = one_set;
      break;
    case Variant::MultiheadWrapper:
      n.qkv = one_set * c.num_heads;
      break;
    case Variant::Multihead:
    case Variant::SlidingWindow:
    case Variant::Cross:  // W_key/W_value read the second sequence: d_in of the queries' here
      n.qkv = one_set;
      n.out = dout * dout + dout;
      break;
    case Variant::GroupedQuery: {  // K and V: num_kv_groups heads of head_dim; no out_proj bias
      const long long kv = dout / c.num_heads * c.num_kv_groups;
      n.qkv = din * dout + 2 * din * kv + (bias ? dout + 2 * kv : 0);
      n.out = dout * dout;
      break;
    }
    case Variant::Latent: {  // W_query, W_DKV, W_UK, W_UV
      const long long latent = c.latent_dim.value_or(book_latent_dim(c.d_out));
      n.qkv = din * dout + din * latent + 2 * latent * dout + (bias ? dout + latent + 2 * dout : 0);
      n.out = dout * dout + dout;
      break;
    }
  }
  n.total = n.qkv + n.out;
  return n;
}

Config gpt2_layer_config() {
  Config c;
  c.variant = Variant::Multihead;
  c.d_out = 768;
  c.num_heads = 12;
  c.dropout = 0.0;
  c.qkv_bias = false;
  return c;
}

std::vector<TensorShape> tensor_shapes(const Config& c, int d_in, int T) {
  std::vector<TensorShape> s;
  const bool bias = c.qkv_bias && c.variant != Variant::SelfAttentionV1;
  const int heads = has_heads(c.variant) ? c.num_heads : 1;
  const bool wrapper = c.variant == Variant::MultiheadWrapper;
  const bool split = c.variant == Variant::Multihead;
  const int d_k = split ? c.d_out / std::max(heads, 1) : c.d_out;
  const int copies = wrapper || split ? heads : 1;
  s.push_back({"inputs X", T, d_in, 1, false});
  if (c.variant == Variant::Simple) {
    s.push_back({"scores X·Xᵀ", T, T, 1, false});
    s.push_back({stage_id::weights, T, T, 1, false});
    s.push_back({stage_id::context, T, d_in, 1, false});
    return s;
  }
  for (const char* w : {stage_id::W_query, stage_id::W_key, stage_id::W_value})
    s.push_back({w, d_in, c.d_out, wrapper ? heads : 1, true});
  if (bias)
    for (const char* b : {stage_id::b_query, stage_id::b_key, stage_id::b_value})
      s.push_back({b, 1, c.d_out, wrapper ? heads : 1, true});
  s.push_back({"queries, keys, values (each)", T, c.d_out, wrapper ? heads : 1, false});
  if (split) s.push_back({"per-head Q, K, V (each)", T, d_k, heads, false});
  s.push_back({"scores, scaled scores", T, T, copies, false});
  if (is_causal(c.variant)) {
    s.push_back({"mask buffer", T, T, wrapper ? heads : 1, false});
    s.push_back({"weights, dropped weights", T, T, copies, false});
  } else {
    s.push_back({stage_id::weights, T, T, copies, false});
  }
  s.push_back({stage_id::context, T, d_k, copies, false});
  if (wrapper) s.push_back({"output (heads side by side)", T, c.d_out * heads, 1, false});
  if (split) {
    s.push_back({stage_id::concat, T, c.d_out, 1, false});
    s.push_back({"W_out (out_proj)", c.d_out, c.d_out, 1, true});
    s.push_back({stage_id::b_out, 1, c.d_out, 1, true});
    s.push_back({stage_id::output, T, c.d_out, 1, false});
  }
  return s;
}

// ---------------------------------------------------------------------------
// 7. Head split

std::optional<HeadSplit> split_heads(const Trace& trace, std::string_view id) {
  if (trace.config.variant != Variant::Multihead) return std::nullopt;
  const Stage* whole = trace.find(id, -1);
  const Stage* concat = trace.find(stage_id::concat, -1);
  if (!whole || !concat) return std::nullopt;
  HeadSplit s;
  s.heads = trace.config.num_heads;
  s.head_dim = trace.config.d_out / s.heads;
  s.whole = whole->data();
  const Eigen::Index T = whole->data().rows(), dh = s.head_dim;
  // .view(b, T, h, dh).transpose(1, 2): element (t, h·dh + d) moves to (h, t, d).
  s.transposed.resize(T * s.heads, dh);
  for (Eigen::Index h = 0; h < s.heads; ++h)
    for (Eigen::Index t = 0; t < T; ++t)
      for (Eigen::Index d = 0; d < dh; ++d)
        s.transposed(h * T + t, d) = whole->data()(t, h * dh + d);
  s.concat = concat->data();
  return s;
}

// ---------------------------------------------------------------------------
// 8. Compare

std::optional<StageDiff> compare_stage(const Trace& a, const Trace& b, std::string_view id,
                                       int head) {
  const Stage* sa = a.find(id, head);
  const Stage* sb = b.find(id, head);
  if (!sa || !sb) return std::nullopt;
  StageDiff d;
  d.same_shape = sa->data().rows() == sb->data().rows() && sa->data().cols() == sb->data().cols();
  if (!d.same_shape) return d;
  d.diff = sb->data() - sa->data();
  // −∞ − −∞ is NaN: cells masked in both runs are equal, so their difference is 0.
  for (Eigen::Index k = 0; k < d.diff.size(); ++k)
    if (sa->data().data()[k] == sb->data().data()[k]) d.diff.data()[k] = 0.0f;
  d.max_abs = d.diff.size() ? d.diff.cwiseAbs().maxCoeff() : 0.0f;
  d.shown = shown_difference(d.diff, sa->data(), sb->data());
  return d;
}

// ---------------------------------------------------------------------------
// 9. Parameters of a trace

std::optional<Parameters> parameters_of(const Trace& trace) {
  const Variant v = trace.config.variant;
  if (!has_weights(v)) return std::nullopt;
  const bool bias = trace.config.qkv_bias && v != Variant::SelfAttentionV1;
  auto projection = [&](const char* w, const char* b, int head) -> std::optional<Projection> {
    const Stage* ws = trace.find(w, head);
    if (!ws) return std::nullopt;
    Projection p{ws->data(), RowMatrix()};
    if (bias) {
      const Stage* bs = trace.find(b, head);
      if (!bs) return std::nullopt;
      p.bias = bs->data();
    }
    return p;
  };
  Parameters params;
  const int sets = v == Variant::MultiheadWrapper ? trace.config.num_heads : 1;
  for (int k = 0; k < sets; ++k) {
    const int head = v == Variant::MultiheadWrapper ? k : -1;
    auto q = projection(stage_id::W_query, stage_id::b_query, head);
    auto kk = projection(stage_id::W_key, stage_id::b_key, head);
    auto val = projection(stage_id::W_value, stage_id::b_value, head);
    if (!q || !kk || !val) return std::nullopt;
    params.qkv.push_back(QkvProjections{std::move(*q), std::move(*kk), std::move(*val)});
  }
  if (v == Variant::Multihead) {
    const Stage* w = trace.find(stage_id::W_out, -1);
    const Stage* b = trace.find(stage_id::b_out, -1);
    if (!w || !b) return std::nullopt;
    params.out = Projection{w->data(), b->data()};
  }
  return params;
}

}  // namespace attnscope::core
