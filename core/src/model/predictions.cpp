// predictions.cpp: sampling as the book's generate(), the text's loss and
// the logit lens, all read from a run's residuals through LN_f and the LM head.
#include "attnscope/model/predictions.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "attnscope/base/stages.hpp"
#include "attnscope/base/trace.hpp"
#include "kernels/cpu_share.hpp"
#include "model/gpt2_internal.hpp"

namespace attnscope::core {

namespace detail {

std::string token_text(const Gpt2Tokenizer& tok, int id) {
  return static_cast<std::size_t>(id) < tok.vocab_size() ? printable_token(tok.token_bytes(id))
                                                         : "<" + std::to_string(id) + ">";
}

double log_sum_exp(const float* row, Eigen::Index n) {
  float largest = -std::numeric_limits<float>::infinity();
  for (Eigen::Index j = 0; j < n; ++j) largest = std::max(largest, row[j]);
  double sum = 0.0;
  for (Eigen::Index j = 0; j < n; ++j) sum += std::exp(static_cast<double>(row[j] - largest));
  return static_cast<double>(largest) + std::log(sum);
}

void finish_loss(TextLoss& loss) {
  if (loss.per_token.empty()) return;
  double sum = 0.0;
  for (double v : loss.per_token) sum += v;
  loss.mean = sum / static_cast<double>(loss.per_token.size());
  loss.perplexity = std::exp(*loss.mean);
}

}  // namespace detail

namespace {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
constexpr Eigen::Index kVocabChunk = 1024;  // columns of logits per task
constexpr Eigen::Index kRowChunk = 64;      // rows of logits held at once (13 MB for GPT-2)

// out (rows x vocab) = normed . W_headᵀ, vocabulary chunks on every thread.
void head_logits(const Gpt2Model& model, const RowMatrix& normed, RowMatrix& out) {
  const detail::ThreadShare share;
  const auto head = model.weights().head().map();  // vocab x d
  const Eigen::Index V = head.rows();
  out.resize(normed.rows(), V);
  const auto chunks = static_cast<int>((V + kVocabChunk - 1) / kVocabChunk);
#pragma omp parallel for schedule(dynamic, 1)
  for (int k = 0; k < chunks; ++k) {
    const Eigen::Index begin = k * kVocabChunk, size = std::min(kVocabChunk, V - begin);
    out.middleCols(begin, size).noalias() = normed * head.middleRows(begin, size).transpose();
  }
}

// softmax of x in float as torch.softmax computes it on the CPU: exp(x - max),
// then times 1 / Σ. Entries of -inf get 0.
std::vector<float> softmax_float(const std::vector<float>& x) {
  float largest = kMinusInf;
  for (float v : x) largest = std::max(largest, v);
  std::vector<float> p(x.size());
  float sum = 0.0f;
  for (std::size_t j = 0; j < x.size(); ++j) sum += p[j] = std::exp(x[j] - largest);
  const float inv = 1.0f / sum;
  for (float& v : p) v *= inv;
  return p;
}

// The first index of the largest value, as torch.argmax.
int first_argmax(const float* x, std::size_t n) {
  std::size_t best = 0;
  for (std::size_t j = 1; j < n; ++j)
    if (x[j] > x[best]) best = j;
  return static_cast<int>(best);
}

// The k-th largest of the row (torch.topk(logits, k)'s last value).
float kth_largest(const RowMatrix& logits, int k) {
  std::vector<float> v(logits.data(), logits.data() + logits.size());
  std::nth_element(v.begin(), v.begin() + (k - 1), v.end(), std::greater<>());
  return v[static_cast<std::size_t>(k - 1)];
}

// The logits generate() turns into probabilities: cut below the k-th
// largest (torch.where(logits < min_val, -inf, logits)), then divided by
// the temperature in float, as torch divides a float tensor by a scalar.
std::vector<float> tempered(const RowMatrix& logits, const Sampling& s) {
  const float cut = s.top_k > 0 ? kth_largest(logits, s.top_k) : kMinusInf;
  const auto t = static_cast<float>(s.temperature);
  std::vector<float> x(static_cast<std::size_t>(logits.size()));
  for (Eigen::Index j = 0; j < logits.size(); ++j) {
    const float v = logits.data()[j];
    x[static_cast<std::size_t>(j)] = v < cut ? kMinusInf : v / t;
  }
  return x;
}

void check_position(const ModelRun& run, int position) {
  if (position < 0 || position >= run.num_tokens())
    throw std::invalid_argument("position " + std::to_string(position) +
                                " is not a token of the text (0.." +
                                std::to_string(run.num_tokens() - 1) + ")");
}

}  // namespace

std::vector<NextToken> top_tokens(const Gpt2Model& model, const RowMatrix& logits, int k) {
  return top_tokens(logits, k, [&](int id) { return detail::token_text(model.tokenizer(), id); });
}

std::vector<NextToken> top_tokens(const RowMatrix& logits, int k,
                                  const std::function<std::string(int)>& token_name) {
  const Eigen::Index V = logits.cols();
  const double lse = detail::log_sum_exp(logits.data(), V);
  std::vector<int> order(static_cast<std::size_t>(V));
  for (Eigen::Index j = 0; j < V; ++j) order[static_cast<std::size_t>(j)] = static_cast<int>(j);
  const auto top = std::min<std::size_t>(static_cast<std::size_t>(std::max(k, 0)), order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(),
                    [&](int a, int b) {
                      return logits(0, a) > logits(0, b) || (logits(0, a) == logits(0, b) && a < b);
                    });
  std::vector<NextToken> out;
  for (std::size_t i = 0; i < top; ++i) {
    const int id = order[i];
    out.push_back(
        NextToken{id, token_name(id), std::exp(static_cast<double>(logits(0, id)) - lse)});
  }
  return out;
}

void check_sampling(const Sampling& s, int vocab) {
  if (!std::isfinite(s.temperature) || s.temperature < 0.0)
    throw std::invalid_argument(
        "temperature " + std::to_string(s.temperature) +
        " cannot be used: give 0 (greedy, the book's default) or a positive number such as 1.4");
  if (s.top_k < 0 || s.top_k > vocab)
    throw std::invalid_argument("top-k " + std::to_string(s.top_k) +
                                " is not 0 (no cut) or a count of tokens 1.." +
                                std::to_string(vocab));
}

SamplingStep sampling_step(const RowMatrix& logits, const Sampling& s) {
  check_sampling(s, static_cast<int>(logits.size()));
  SamplingStep step;
  step.before = softmax_float(std::vector<float>(logits.data(), logits.data() + logits.size()));
  step.cut = s.top_k > 0 ? kth_largest(logits, s.top_k) : kMinusInf;
  step.kept = static_cast<int>((logits.array() >= step.cut).count());
  if (s.temperature > 0.0) {
    step.after = softmax_float(tempered(logits, s));
  } else {
    step.after.assign(static_cast<std::size_t>(logits.size()), 0.0f);
    step.after[static_cast<std::size_t>(first_argmax(logits.data(), step.after.size()))] = 1.0f;
  }
  if (s.top_k == 0) step.cut = 0.0f;
  return step;
}

int BookSampler::next(const RowMatrix& logits) {
  const auto V = static_cast<std::size_t>(logits.size());
  check_sampling(sampling_, static_cast<int>(V));
  // The cut keeps the largest logit, so greedy picks the same with or without it.
  if (sampling_.temperature <= 0.0) return first_argmax(logits.data(), V);
  std::vector<float> ratio = softmax_float(tempered(logits, sampling_));
  // torch.multinomial(probs, 1) on the CPU: q = empty_like(probs).exponential_(),
  // one double draw per entry in order (-log(1 - u) rounded to float), and the
  // argmax of probs / q.
  for (float& p : ratio) {
    const auto q = static_cast<float>(-std::log(1.0 - generator_.uniform_double()));
    p /= q;
  }
  return first_argmax(ratio.data(), V);
}

std::vector<int> generate(const std::shared_ptr<const Gpt2Model>& model, std::vector<int> ids,
                          int n_tokens, const Sampling& s) {
  check_sampling(s, model->config().vocab_size);
  const int context = model->config().n_positions;
  BookSampler sampler(s);
  std::vector<int> added;
  auto window = [&] {
    const auto start = ids.size() > static_cast<std::size_t>(context) ? ids.size() - context : 0;
    return std::vector<int>(ids.begin() + static_cast<std::ptrdiff_t>(start), ids.end());
  };
  ModelRun::Options small;
  small.cache_bytes = 0;
  auto run = std::make_unique<ModelRun>(model, window(), small);
  for (int i = 0; i < n_tokens; ++i) {
    const int next = sampler.next(run->logits());
    ids.push_back(next);
    added.push_back(next);
    if (i + 1 == n_tokens) break;
    if (run->num_tokens() < context)
      run->append(next);
    else
      run = std::make_unique<ModelRun>(model, window(), small);
  }
  return added;
}

std::vector<int> generate_greedy(const std::shared_ptr<const Gpt2Model>& model,
                                 std::vector<int> ids, int n_tokens) {
  return generate(model, std::move(ids), n_tokens, Sampling{});
}

RowMatrix position_logits(ModelRun& run, int position) {
  check_position(run, position);
  const RowMatrix row = run.stage({-1, -1, stage_id::ln_f})->middleRows(position, 1);
  RowMatrix logits;
  head_logits(run.model(), row, logits);
  return logits;
}

TextLoss text_loss(ModelRun& run, std::span<const double> known) {
  TextLoss loss;
  const int T = run.num_tokens();
  if (T < 2) return loss;
  const auto reused = std::min<std::size_t>(known.size(), static_cast<std::size_t>(T - 1));
  loss.per_token.assign(known.begin(), known.begin() + static_cast<std::ptrdiff_t>(reused));
  auto add = [&](Eigen::Index r, const float* logits, Eigen::Index n) {
    const int target = run.ids()[static_cast<std::size_t>(r + 1)];
    loss.per_token.push_back(detail::log_sum_exp(logits, n) - static_cast<double>(logits[target]));
  };
  if (const Eigen::Index from = run.loss_logits_from(); from <= static_cast<Eigen::Index>(reused)) {
    // The forward read the head for these rows already (ModelRun::finish).
    const RowMatrix& logits = run.loss_logits();
    for (auto r = static_cast<Eigen::Index>(reused); r < T - 1; ++r)
      add(r, logits.row(r - from).data(), logits.cols());
    detail::finish_loss(loss);
    return loss;
  }
  const auto normed = run.stage({-1, -1, stage_id::ln_f});
  RowMatrix rows, logits;
  for (auto r = static_cast<Eigen::Index>(reused); r < T - 1; r += kRowChunk) {
    const Eigen::Index m = std::min<Eigen::Index>(kRowChunk, T - 1 - r);
    rows = normed->middleRows(r, m);
    head_logits(run.model(), rows, logits);
    for (Eigen::Index i = 0; i < m; ++i) add(r + i, logits.row(i).data(), logits.cols());
  }
  detail::finish_loss(loss);
  return loss;
}

std::string lens_layer_name(int layer) {
  return layer == 0 ? std::string(stage_id::embeddings) : "block " + std::to_string(layer - 1);
}

LensColumn logit_lens(ModelRun& run, int position, int k) {
  check_position(run, position);
  if (k < 1) throw std::invalid_argument("--top must be at least 1");
  const Gpt2Model::Weights& w = run.model().weights();
  const int L = run.num_layers();
  const RowMatrix residuals = run.residual_column(position);  // (L + 1) x d
  RowMatrix logits;
  head_logits(run.model(), w.ln_f.apply(residuals, w.config.layer_norm_epsilon), logits);
  LensColumn column;
  column.position = position;
  for (int l = 0; l <= L; ++l) column.layers.push_back(top_tokens(run.model(), logits.row(l), k));
  return column;
}

LensGrid logit_lens_grid(ModelRun& run, const std::atomic<bool>* cancel, const LensGrid* known,
                         int known_columns) {
  const Gpt2Model::Weights& w = run.model().weights();
  const int L = run.num_layers(), T = run.num_tokens();
  LensGrid grid;
  grid.layers = L + 1;
  grid.positions = T;
  grid.top.resize(static_cast<std::size_t>(L + 1) * static_cast<std::size_t>(T));
  const int first = known && known->layers == L + 1
                        ? std::clamp(known_columns, 0, std::min(T, known->positions))
                        : 0;
  for (int l = 0; l <= L; ++l)
    for (int t = 0; t < first; ++t)
      grid.top[static_cast<std::size_t>(l) * static_cast<std::size_t>(T) +
               static_cast<std::size_t>(t)] = known->at(l, t);
  if (first == T) return grid;
  RowMatrix rows, logits;
  for (int l = 0; l <= L; ++l) {
    if (cancel && cancel->load()) return {};
    const auto x = run.stage(block_input_key(l));
    for (Eigen::Index r = first; r < T; r += kRowChunk) {
      const Eigen::Index m = std::min<Eigen::Index>(kRowChunk, T - r);
      rows = w.ln_f.apply(x->middleRows(r, m), w.config.layer_norm_epsilon);
      head_logits(run.model(), rows, logits);
      for (Eigen::Index i = 0; i < m; ++i) {
        const int id = first_argmax(logits.row(i).data(), static_cast<std::size_t>(logits.cols()));
        const double lse = detail::log_sum_exp(logits.row(i).data(), logits.cols());
        grid.top[static_cast<std::size_t>(l) * static_cast<std::size_t>(T) +
                 static_cast<std::size_t>(r + i)] =
            NextToken{id, detail::token_text(run.model().tokenizer(), id),
                      std::exp(static_cast<double>(logits(i, id)) - lse)};
      }
    }
  }
  return grid;
}

}  // namespace attnscope::core
