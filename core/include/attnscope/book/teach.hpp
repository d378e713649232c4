// teach.hpp: the numbers behind the app's teaching views, derived from a
// trace by the engine so that every number a viewer shows comes from core.
//
// Sections
//   1. the book's printed tensors, and checking a trace against them
//   2. softmax unfolded (with a √d_k override and the row's entropy)
//   3. naive normalisation vs softmax
//   4. masking two ways, and the wrong way
//   5. dropout: keep mask, row sums, the average over many seeds
//   6. parameter counts and tensor shapes
//   7. head split: view, transpose, concatenation
//   8. compare two traces
//   9. the parameters a trace ran with (for the weights editor)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/attention/attention.hpp"
#include "attnscope/base/trace.hpp"

namespace attnscope::core {

// ---------------------------------------------------------------------------
// 1. The book's printed tensors

// How a printed tensor is read off a trace.
enum class BookSource {
  Stage,            // a trace stage (optionally one row, optionally transposed)
  NaiveNormalise,   // row `row` of scores divided by its sum (attn_weights_2_tmp)
  TrilRenormalise,  // weights · tril, each row divided by its sum (masked_simple_norm)
  DropoutOnes,      // torch.manual_seed(123); nn.Dropout(0.5)(torch.ones(6, 6)): needs no trace
  DropoutWeights,   // torch.manual_seed(123); nn.Dropout(0.5)(causal weights)
  MaskMinusInf,     // the stage with every cell above the diagonal at −∞ (masked_fill)
};

// The run (on the book's six tokens) that makes the book print a tensor.
struct BookRun {
  Variant variant = Variant::Simple;
  int d_out = 2;
  int num_heads = 1;
  std::uint64_t seed = 123;
  // The dropout the book's class had when it printed the tensor: 0.0 for
  // every tensor read off a stage (the 3.5.2 dropout examples apply their
  // own nn.Dropout(0.5) to ones or to the weights, whatever the run's is).
  double dropout = 0.0;
};

struct BookMatrix {
  std::string_view name;     // as the notebook calls it: "attn_scores", "context_vec_2"
  std::string_view section;  // the book's section, "3.3.1"
  BookRun run;               // the config it comes from
  BookSource source = BookSource::Stage;
  std::string_view stage;   // trace stage id (Stage; the base stage of derived sources)
  int row = -1;             // one row of the stage, or -1 for all of it
  bool transposed = false;  // nn.Linear prints .weight, the trace holds it as used
  RowMatrix printed;        // the values as printed (4 decimals; −∞ where masked)
  int col = -1;             // with `row`: one cell (a printed scalar), or -1
};

// Every tensor chapter 3 prints that the app can reproduce, in book order.
const std::vector<BookMatrix>& book_matrices();

// True when `trace` is the run `book` comes from: same variant, d_out, seed,
// heads (head variants), no qkv_bias and six tokens of width 3. Inputs,
// dropout and weights may differ: that is what the check reports.
bool book_applies(const BookMatrix& book, const Trace& trace);

// The app's value of `book` for this trace (or without one for DropoutOnes);
// nullopt when the trace lacks the stage or the shape differs.
std::optional<RowMatrix> book_value(const BookMatrix& book, const Trace* trace);

struct BookCheck {
  bool comparable = false;  // book_value existed with the printed shape
  bool matches = false;     // every cell rounds to the printed value (±0.5e-4)
  float max_diff = 0;  // largest |app − printed| (∞ when a printed −∞ is finite or back)
  // The run drops weights at another rate than the book's class did
  // (book_dropout, run_dropout) and the tensor comes after the dropout: its
  // difference says nothing about an edit, so it does not match and a view
  // names the two settings instead of max_diff.
  bool dropout_differs = false;
  double book_dropout = 0.0, run_dropout = 0.0;
};
// The dropout `trace` applies to its weights: its config's in training
// mode for the variants with dropout, else 0.
double applied_dropout(const Trace& trace);
// True when `book`'s tensor is computed after the dropout (dropped weights,
// context vectors, the heads' concatenation, the output).
bool after_dropout(const BookMatrix& book);
// Compares the app's value with the printed one. Printed −∞ cells compare
// equal only to −∞; the finite cells by their difference.
BookCheck check_book(const BookMatrix& book, const Trace* trace);

// The book tensors read directly off stage `stage_id` of this trace (BookSource::Stage).
std::vector<const BookMatrix*> book_matrices_for_stage(const Trace& trace,
                                                       std::string_view stage_id);

// Every book tensor read off stage `stage_id` of this trace, summed up for a
// badge next to the matrix's title.
struct StageBookCheck {
  int count = 0;         // book tensors checked (0: the book prints none of this stage)
  bool matches = false;  // all of them match
  float max_diff = 0;    // largest difference over all of them
  std::string names;     // "attn_scores_2 §3.3.1, attn_scores §3.3.2"
  // Some of them were printed at another dropout than the run's (BookCheck).
  bool dropout_differs = false;
  double book_dropout = 0.0, run_dropout = 0.0;
};
StageBookCheck check_book_stage(const Trace& trace, std::string_view stage_id);

// ---------------------------------------------------------------------------
// 2. Softmax, unfolded

struct SoftmaxUnfolded {
  std::vector<float> scores;   // (T) raw ω row (simple: x_i · x_j)
  float divisor = 1;           // what scores are divided by (√d_k, or 1 when off)
  std::vector<float> scaled;   // (T) scores / divisor
  std::vector<bool> masked;    // (T) causal: key j is in the future (logit −∞)
  float row_max = 0;           // max over the visible scaled scores
  std::vector<float> shifted;  // (T) scaled − row_max (−∞ when masked)
  std::vector<float> exps;     // (T) exp(shifted); 0 when masked
  float sum = 0;               // Σ exps
  std::vector<float> weights;  // (T) exps / sum; sums to 1
  float entropy = 0;           // −Σ w ln w, nats: 0 = all on one key
  float max_entropy = 0;       // ln(visible keys): all keys equal
};

// The √d_k the trace's variant divides by (1 for simple, which does not scale).
float trace_divisor(const Trace& trace);

// Row `row` of head `head`'s softmax, step by step. `divisor` replaces the
// trace's √d_k (1 = scaling off); nullopt keeps it, and then `weights`
// equal the trace's weights row. nullopt when out of range.
std::optional<SoftmaxUnfolded> unfold_softmax(const Trace& trace, int head, int row,
                                              std::optional<float> divisor = std::nullopt);

// ---------------------------------------------------------------------------
// 3. Naive normalisation

// Each row divided by its sum (the book's first try, attn_weights_2_tmp);
// works only while scores are positive.
RowMatrix naive_normalise(const RowMatrix& scores);

struct NormalisationCompared {
  RowMatrix scores;   // (T, T) the unscaled scores ω of head `head` (causal: future −∞)
  RowMatrix naive;    // (T, T) ω / Σω over the visible keys (0 for future keys)
  RowMatrix softmax;  // (T, T) exp(ω) / Σ exp(ω) of the same unscaled ω (0 for future keys)
  std::vector<float> naive_row_sums, softmax_row_sums;  // (T) both 1 up to rounding
  int negative_naive = 0;  // naive weights below 0 (a negative score or sum)
};
// Both normalisations of the whole scores matrix, as the book's §3.3.1
// does for one row; nullopt when the trace has no scores.
std::optional<NormalisationCompared> compare_normalisation(const Trace& trace, int head);

// ---------------------------------------------------------------------------
// 4. Masking two ways

// A difference of two float32 results, as a view should draw it. Two ways of
// computing the same value that sum in another order differ by a few units
// of float32's last place (~6e-8 relative); drawn on a ±3e-8 colour scale
// that noise looks like a real difference. So cells no larger than
// kRoundingRelative times the larger input's largest magnitude are drawn as
// zero, and a difference made only of those is "equal to float32 rounding".
inline constexpr float kRoundingRelative = 1e-6f;
struct ShownDifference {
  RowMatrix shown;             // (rows, cols) the difference, cells ≤ tolerance set to 0
  float tolerance = 0;         // kRoundingRelative · max finite |value| of the two inputs
  float max_abs = 0;           // max |difference| before zeroing (the true largest)
  bool rounding_only = false;  // every cell ≤ tolerance: the two are equal up to rounding
};
// `difference` = b − a (NaN where both hold the same non-finite value is
// expected to be 0 already); `a`, `b` give the scale.
ShownDifference shown_difference(const RowMatrix& difference, const RowMatrix& a,
                                 const RowMatrix& b);
// The caption of a difference heatmap: "equal to float32 rounding (max |Δ| =
// 2.98e-08)" or "largest |Δ| = 0.0123".
std::string difference_caption(const ShownDifference& d);

struct MaskingWays {
  RowMatrix unmasked;         // (T, T) softmax of the scaled scores, no mask
  RowMatrix tril_multiplied;  // (T, T) unmasked · tril (future zeroed), not renormalised
  RowMatrix renormalised;     // (T, T) way 1: tril_multiplied rows divided by their sums
  RowMatrix minus_inf;        // (T, T) way 2: softmax of the scores with the future at −∞
  RowMatrix difference;       // (T, T) renormalised − minus_inf (zero up to rounding)
  float max_difference = 0;   // max |difference|
  ShownDifference shown;      // difference as drawn (rounding noise as 0)
  std::vector<float> wrong_row_sums;  // (T) row sums of tril_multiplied: the wrong way
  std::vector<int> wrong_rows;        // rows whose sum is not 1 (|sum − 1| > 1e-6)
};

// The two ways of masking the trace's scores (head `head`), and the wrong
// way. Works for any variant with scores (a non-causal trace is masked here
// as the book does with SelfAttention_v2's weights).
std::optional<MaskingWays> compare_masking(const Trace& trace, int head);

// ---------------------------------------------------------------------------
// 5. Dropout

struct DropoutView {
  bool active = false;  // training and 0 < p (else the weights pass unchanged)
  double p = 0;         // the dropout rate
  float scale = 1;      // 1 / (1 − p) as float, what kept weights are multiplied by
  RowMatrix keep;       // (T, T) 1 kept, 0 dropped
  std::vector<float> row_sums_before;  // (T) rows of the weights: 1
  std::vector<float> row_sums_after;   // (T) rows of the dropped weights
};

// The trace's dropout of head `head`; nullopt for non-causal variants.
std::optional<DropoutView> dropout_view(const Trace& trace, int head);

// nn.Dropout(p) in training mode on `m` after torch.manual_seed(seed).
RowMatrix apply_dropout(const RowMatrix& m, double p, std::uint64_t seed);

// Limits on the averaging below: it runs on demand, never per frame.
inline constexpr int kDropoutAverageMaxTokens = 64;
inline constexpr int kDropoutAverageMaxSeeds = 200;

struct DropoutAverage {
  RowMatrix mean;                // (T, T) mean of the dropped weights over the seeds
  std::vector<float> max_error;  // max |mean − weights| after 1, 2, ..., n seeds
};
// The dropped `weights` averaged over seeds first_seed .. first_seed + n − 1;
// it converges to `weights` (dropout is unbiased). nullopt when the matrix
// is larger than kDropoutAverageMaxTokens or n is outside 1..kDropoutAverageMaxSeeds.
std::optional<DropoutAverage> dropout_average(const RowMatrix& weights, double p,
                                              std::uint64_t first_seed, int n);

// ---------------------------------------------------------------------------
// 6. Sizes

struct ParameterCount {
  long long qkv = 0;    // W_query, W_key, W_value (+ biases), all heads
  long long out = 0;    // out_proj weight + bias
  long long total = 0;  // qkv + out
};
// The trainable parameters of the module for config and d_in.
ParameterCount count_parameters(const Config& config, int d_in);

// The GPT-2 (small) sized layer of exercise 3.3: d_in = d_out = 768,
// 12 heads, context 1024, no qkv bias: 2,360,064 parameters.
Config gpt2_layer_config();
inline constexpr int kGpt2DIn = 768;
inline constexpr int kGpt2Context = 1024;

struct TensorShape {
  std::string name;  // "W_query", "scores (per head)", "mask buffer"
  int rows = 0, cols = 0;
  int copies = 1;  // heads that each hold one
  bool parameter = false;
};
// Every tensor of the module for config, d_in and T tokens (a batch of one).
std::vector<TensorShape> tensor_shapes(const Config& config, int d_in, int tokens);

// ---------------------------------------------------------------------------
// 7. Head split

struct HeadSplit {
  int heads = 0, head_dim = 0;
  RowMatrix whole;       // (T, d_out) Q as projected; .view(T, h, d_head) is the same numbers
  RowMatrix transposed;  // (h·T, d_head) .transpose(1, 2): head h's rows are h·T .. h·T+T−1
  RowMatrix concat;      // (T, d_out) the heads' contexts transposed back and side by side
};
// The split of stage `id` ("queries", "keys", "values") of a multihead trace.
std::optional<HeadSplit> split_heads(const Trace& trace, std::string_view id);

// ---------------------------------------------------------------------------
// 8. Compare

struct StageDiff {
  RowMatrix diff;     // (rows, cols) b − a, exact float subtraction
  float max_abs = 0;  // max |b − a|
  bool same_shape = false;
  ShownDifference shown;  // diff as drawn (rounding noise as 0)
};
// b − a for stage (id, head) of both traces; nullopt when either lacks it.
std::optional<StageDiff> compare_stage(const Trace& a, const Trace& b, std::string_view id,
                                       int head);

// ---------------------------------------------------------------------------
// 9. Parameters of a trace

// The parameters the trace ran with, read from its W_* / b_* stages (in the
// layout init_parameters builds); nullopt for variants without weights.
std::optional<Parameters> parameters_of(const Trace& trace);

}  // namespace attnscope::core
