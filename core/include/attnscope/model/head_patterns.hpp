// head_patterns.hpp: what kind of head a head is, in numbers: how much of
// its attention goes to the previous token, to the first token (the
// "attention sink"), to the token itself, how spread out it is, and how
// strongly it copies forward on a repeated sequence (an induction head).
//
// Every score reads one head's attention weights W (T x T; row i = query i,
// column j = key j; causal: W[i][j] = 0 for j > i; rows sum to 1):
//
//   previous_token      mean over rows i >= 1 of W[i][i-1]
//   first_token         mean over rows i >= 1 of W[i][0]
//   self                mean over all rows i of W[i][i]
//   entropy             mean over all rows i of H_i = -sum_j W[i][j] ln W[i][j]
//                       (nats; 0 ln 0 = 0, entries <= 0 add nothing)
//   entropy_normalised  mean over rows i >= 1 of H_i / ln(i + 1): row i has
//                       i + 1 keys, so 0 = all on one key, 1 = uniform over
//                       them (raw entropy grows with the position)
//
// Row 0 has one key only, so previous_token, first_token and
// entropy_normalised leave it out. A mean over no rows is 0: a 1 x 1 matrix
// gives self W[0][0] and 0 for the rest, an empty matrix 0 for all.
//
// Induction (Olsson et al., "In-context learning and induction heads"): on
// the sequence
//
//   [BOS] r_0 r_1 ... r_{n-1} r_0 r_1 ... r_{n-1}      (T = offset + 2n)
//
// with BOS = <|endoftext|> (50256) when offset is 1, and n distinct random
// tokens r (induction_ids), the query at position offset + n + k holds r_k;
// its first occurrence is at offset + k and the token that followed it at
// offset + k + 1. A head that predicts "what came next last time" puts its
// weight there:
//
//   induction = mean over k in [0, n-1] of W[offset + n + k][offset + k + 1]
//
// (for k = n - 1 that key is the second copy's r_0, which followed the first
// r_{n-1}). model_patterns uses offset 1: GPT-2 was trained on documents
// joined by <|endoftext|>, and its heads park spare attention on the first
// position; the BOS keeps that sink off r_0.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/base/matrix.hpp"
#include "attnscope/model/gpt2_model.hpp"

namespace attnscope::core {

enum class PatternKind {
  PreviousToken,
  FirstToken,
  Self,
  Entropy,
  EntropyNormalised,
  Induction,
};
inline constexpr PatternKind kPatternKinds[] = {
    PatternKind::PreviousToken, PatternKind::FirstToken,        PatternKind::Self,
    PatternKind::Entropy,       PatternKind::EntropyNormalised, PatternKind::Induction};

// For people: "previous token", "first token", "self", "entropy",
// "entropy (normalised)", "induction".
std::string_view pattern_name(PatternKind kind);
// The JSON key: "previous_token", "first_token", "self", "entropy",
// "entropy_normalised", "induction".
std::string_view pattern_key(PatternKind kind);
// One line saying what the score measures and how to read it.
std::string_view pattern_explanation(PatternKind kind);

// One head's scores (see the top of this file).
struct HeadPatternScores {
  double previous_token = 0.0;      // [0, 1]
  double first_token = 0.0;         // [0, 1]
  double self = 0.0;                // [0, 1]
  double entropy = 0.0;             // nats, [0, ln T]
  double entropy_normalised = 0.0;  // [0, 1] for causal rows
};

// The scores of one head's weights w (T x T). Throws std::invalid_argument
// when w is not square.
HeadPatternScores pattern_scores(const RowMatrix& w);

// One query row's terms of those scores (row i of W): W[i][i-1], W[i][0]
// and H_i / ln(i + 1) for i >= 1 (0 for row 0), W[i][i] and H_i. A head's
// scores are the means of its rows' terms, so while a text is typed the
// rows before its first change keep theirs.
struct PatternRow {
  double previous_token = 0.0;
  double first_token = 0.0;
  double self = 0.0;
  double entropy = 0.0;
  double entropy_normalised = 0.0;
};
// The terms of rows [first_row, first_row + rows.rows()) of a T x T map
// (rows: those rows, T columns). Throws std::invalid_argument when the rows
// do not fit in a square map of rows.cols() rows.
std::vector<PatternRow> pattern_rows(const Eigen::Ref<const RowMatrix>& rows,
                                     Eigen::Index first_row);
// The scores whose rows have these terms (row 0 first): pattern_scores(w)
// is pattern_scores_of_rows(pattern_rows(w, 0)), to the bit.
HeadPatternScores pattern_scores_of_rows(std::span<const PatternRow> rows);

// The induction score of w, the weights of a head on the repeated sequence
// above (n copies' length, offset 0 or 1 tokens before it). Throws
// std::invalid_argument when n < 2, offset < 0, or w is not
// (offset + 2n) x (offset + 2n).
double induction_score(const RowMatrix& w, int n, int offset);

// The token id model_patterns puts before the repeated sequence.
inline constexpr int kInductionBos = 50256;  // <|endoftext|>
// n distinct token ids drawn uniformly from [0, min(vocab_size, 50256)) by
// a Mersenne Twister seeded with `seed` (the same ids on every machine):
// below <|endoftext|> and any padding ids of a larger vocabulary. Throws
// std::invalid_argument when n < 0 or the range holds fewer than n ids.
std::vector<int> induction_ids(int n, std::uint64_t seed, int vocab_size);

// Every head of a model, layer-major: scores[layer * heads + head].
struct ModelPatterns {
  int layers = 0;
  int heads = 0;
  std::vector<HeadPatternScores> scores;  // on the text run
  std::vector<double> induction;          // on the repeated sequence, same order
  int induction_n = 0;                    // n used (after the cap)
  int induction_offset = 0;               // 1: BOS first; 0 when the vocabulary has no 50256
  std::vector<int> induction_sequence;    // the ids run: [BOS] r r (offset + 2n)
};

// The scores of every (layer, head) of text_run (which must run `model`),
// and the induction score of every head from a second run over
// [BOS] r r with r = induction_ids(n, seed, vocab), n = induction_n capped
// so that offset + 2n <= n_positions. Throws std::invalid_argument when
// text_run runs another model, induction_n < 2, or n_positions leaves room
// for fewer than 2 repeated tokens.
ModelPatterns model_patterns(ModelRun& text_run, const std::shared_ptr<const Gpt2Model>& model,
                             int induction_n, std::uint64_t seed);

// The induction half of model_patterns alone (scores left empty): for a
// viewer that measures the text's scores itself, head by head. Throws
// std::invalid_argument as model_patterns does.
ModelPatterns model_induction(const std::shared_ptr<const Gpt2Model>& model, int induction_n,
                              std::uint64_t seed);

// {"model", "layers", "heads", "induction_n", "induction_ids", "scores":
// [{"layer", "head", "previous_token", "first_token", "self", "entropy",
// "entropy_normalised", "induction"}, ...], "explanations": {key: line}}
// (docs/trace-format.md, "Head patterns").
std::string model_patterns_json(const ModelPatterns& p, std::string_view model_name);

}  // namespace attnscope::core
