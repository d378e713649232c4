// model_trace.cpp: choosing a model run's stages and writing them out.
#include "attnscope/model/model_trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "attnscope/base/errors.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/model/predictions.hpp"
#include "attnscope/text/tokenizer.hpp"
#include "formats/json_matrix.hpp"

namespace attnscope::core {

namespace {

namespace id = stage_id;

// The catalogue's stages a model run makes, in the forward's order, and how
// to name them all in a message.
const std::vector<std::string_view>& model_stage_ids() {
  static const std::vector<std::string_view> ids = [] {
    std::vector<std::string_view> out;
    for (const StageInfo& s : stage_catalogue())
      if (s.model_scope != ModelScope::None) out.push_back(s.id);
    return out;
  }();
  return ids;
}

std::string model_stage_list() {
  std::string out;
  for (std::string_view s : model_stage_ids()) out += (out.empty() ? "" : ", ") + std::string(s);
  return out;
}

// The place of a model stage in the forward's order; -1 for an id that is
// not one.
int order_of(std::string_view stage) {
  const std::vector<std::string_view>& ids = model_stage_ids();
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == stage) return static_cast<int>(i);
  return -1;
}

std::vector<int> all_or(const std::vector<int>& chosen, int n, const char* what) {
  if (chosen.empty()) {
    std::vector<int> all(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) all[static_cast<std::size_t>(i)] = i;
    return all;
  }
  for (int v : chosen)
    if (v < 0 || v >= n)
      throw ParseError(std::string(what) + " " + std::to_string(v) +
                       " is out of range (the model has " + std::to_string(n) + ": 0.." +
                       std::to_string(n - 1) + ")");
  return chosen;
}

std::vector<int> spans_of(const Gpt2Tokenizer& tok, const std::vector<int>& ids) {
  std::vector<int> ends;
  int at = 0;
  for (int i : ids) {
    at += static_cast<std::size_t>(i) < tok.vocab_size()
              ? static_cast<int>(tok.token_bytes(i).size())
              : 0;
    ends.push_back(at);
  }
  return ends;
}

// The run's text as tiktoken decodes it. An id past the tokenizer's
// vocabulary (a model padded beyond it) reads "<id>", as its token does.
std::string text_of(const ModelRun& run) {
  const Gpt2Tokenizer& tok = run.model().tokenizer();
  std::string bytes;
  for (int i : run.ids())
    bytes += static_cast<std::size_t>(i) < tok.vocab_size() ? tok.token_bytes(i)
                                                            : "<" + std::to_string(i) + ">";
  return decode_utf8_replace(bytes);
}

}  // namespace

std::optional<ModelScope> model_stage_scope(std::string_view stage) {
  const StageInfo* s = find_stage_info(stage);
  if (!s || s->model_scope == ModelScope::None || s->id != stage) return std::nullopt;
  return s->model_scope;
}

BlockStages block_stages() {
  BlockStages b;
  for (const StageInfo& s : stage_catalogue()) {
    if (s.model_scope == ModelScope::Head)
      b.heads.push_back(s.id);
    else if (s.model_scope == ModelScope::Layer)
      (b.heads.empty() ? b.before_heads : b.after_heads).push_back(s.id);
  }
  return b;
}

std::vector<StageKey> select_model_stages(const ModelRun& run, const ModelStageSelection& s) {
  std::vector<std::string_view> stages;
  if (s.stages.empty()) {
    stages = {id::weights, id::logits};
  } else {
    for (const std::string& name : s.stages) {
      const int k = order_of(name);
      if (k < 0)
        throw ParseError("\"" + name +
                         "\" is not a stage of a model run (they are: " + model_stage_list() + ")");
      stages.push_back(stage_info(name).id);
    }
  }
  std::sort(stages.begin(), stages.end(),
            [](std::string_view a, std::string_view b) { return order_of(a) < order_of(b); });
  stages.erase(std::unique(stages.begin(), stages.end()), stages.end());
  const std::vector<int> layers = all_or(s.layers, run.num_layers(), "layer");
  const std::vector<int> heads = all_or(s.heads, run.num_heads(), "head");
  std::vector<StageKey> keys;
  auto add_run_stages = [&](bool before_blocks) {
    for (std::string_view st : stages)
      if (*model_stage_scope(st) == ModelScope::Run && (st == id::embeddings) == before_blocks)
        keys.push_back({-1, -1, st});
  };
  add_run_stages(true);
  for (int l : layers)
    for (std::string_view st : stages) {
      const ModelScope scope = *model_stage_scope(st);
      if (scope == ModelScope::Layer) keys.push_back({l, -1, st});
      if (scope == ModelScope::Head)
        for (int h : heads) keys.push_back({l, h, st});
    }
  add_run_stages(false);
  return keys;
}

Trace model_trace(ModelRun& run, const std::vector<StageKey>& keys) {
  Trace t;
  t.tokens = run.tokens();
  t.d_in = run.model().config().n_embd;
  t.explicit_weights = true;
  t.kind = TraceKind::ModelRun;
  t.block = gpt2_block(run.model().config());
  t.model = run.model().name();
  t.text = text_of(run);
  for (const StageKey& k : keys) {
    auto m = run.stage(k);
    if (!m) continue;
    t.stages.emplace_back(k.id, k.head, std::const_pointer_cast<RowMatrix>(std::move(m)), k.layer);
  }
  return t;
}

std::string gpt2_config_json(const Gpt2Config& c) {
  detail::json j = {{"n_layer", c.n_layer},
                    {"n_head", c.n_head},
                    {"n_embd", c.n_embd},
                    {"n_positions", c.n_positions},
                    {"vocab_size", c.vocab_size},
                    {"n_inner", c.n_inner},
                    {"layer_norm_epsilon", c.layer_norm_epsilon},
                    {"activation_function", gpt2_activation_name(c.activation_function)},
                    {"scale_attn_weights", c.scale_attn_weights},
                    {"scale_attn_by_inverse_layer_idx", c.scale_attn_by_inverse_layer_idx},
                    {"tie_word_embeddings", c.tie_word_embeddings}};
  return j.dump();
}

namespace {

// The position next_at names (-1: the last token).
// A double as JSON with every digit it needs (%.9g; never NaN here).
std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

int next_position(const ModelRun& run, int next_at) {
  return next_at < 0 ? run.num_tokens() - 1 : next_at;
}

}  // namespace

void write_model_trace_json(ModelRun& run, const std::vector<StageKey>& keys, std::ostream& os,
                            int next_at) {
  using detail::json_quoted;
  std::string out = "{\"model\": " + json_quoted(run.model().name()) + ",\n \"ids\": [";
  const std::vector<int>& ids = run.ids();
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  out += "],\n \"tokens\": [";
  for (std::size_t i = 0; i < run.tokens().size(); ++i)
    out += (i ? ", " : "") + json_quoted(run.tokens()[i]);
  out += "],\n \"spans\": [";
  const std::vector<int> ends = spans_of(run.model().tokenizer(), ids);
  for (std::size_t i = 0; i < ends.size(); ++i)
    out += (i ? ", [" : "[") + std::to_string(i ? ends[i - 1] : 0) + ", " +
           std::to_string(ends[i]) + "]";
  out += "],\n \"config\": " + gpt2_config_json(run.model().config()) + ",\n \"stages\": [";
  bool first = true;
  for (const StageKey& k : keys) {
    const auto m = run.stage(k);
    if (!m) continue;
    out += first ? "\n  " : ",\n  ";
    first = false;
    out += "{\"id\": " + json_quoted(k.id) + ", \"layer\": " + std::to_string(k.layer) +
           ", \"head\": " + std::to_string(k.head) + ", \"shape\": [" + std::to_string(m->rows()) +
           ", " + std::to_string(m->cols()) + "], \"data\": ";
    detail::append_json_rows(out, *m);
    out += "}";
    os << out;  // one stage at a time: a whole model's text is gigabytes
    out.clear();
  }
  out += "],\n \"next_token\": [";
  const int position = next_position(run, next_at);
  const auto next = run.next_tokens_at(position, 10);
  for (std::size_t i = 0; i < next.size(); ++i) {
    char p[32];
    std::snprintf(p, sizeof p, "%.9g", next[i].probability);
    out += (i ? ", " : "") + std::string("{\"id\": ") + std::to_string(next[i].id) +
           ", \"token\": " + json_quoted(next[i].token) + ", \"probability\": " + p + "}";
  }
  out += "],\n \"next_token_position\": " + std::to_string(position) + ",\n \"loss\": ";
  const TextLoss loss = text_loss(run);
  out += "{\"per_token\": [";
  for (std::size_t i = 0; i < loss.per_token.size(); ++i)
    out += (i ? ", " : "") + number_text(loss.per_token[i]);
  out += "], \"mean\": " + (loss.mean ? number_text(*loss.mean) : "null") +
         ", \"perplexity\": " + (loss.perplexity ? number_text(*loss.perplexity) : "null") + "}}\n";
  os << out;
}

void write_model_trace_text(ModelRun& run, const std::vector<StageKey>& keys, std::ostream& os,
                            int next_at) {
  constexpr Eigen::Index kShownCells = 16;  // print a stage's values up to 16 x 16
  std::string out = "model " + run.model().name() + ": " + std::to_string(run.num_layers()) +
                    " layers x " + std::to_string(run.num_heads()) + " heads, " +
                    std::to_string(run.num_tokens()) + " tokens\n";
  char buf[64];
  for (std::size_t i = 0; i < run.tokens().size(); ++i) {
    std::snprintf(buf, sizeof buf, "  %4zu  %6d  ", i, run.ids()[i]);
    out += buf + run.tokens()[i] + "\n";
  }
  const int position = next_position(run, next_at);
  out += "next token after token " + std::to_string(position) + " (most likely first):\n";
  for (const NextToken& n : run.next_tokens_at(position, 10)) {
    std::snprintf(buf, sizeof buf, "  %6.2f %%  %6d  ", 100.0 * n.probability, n.id);
    out += buf + n.token + "\n";
  }
  const TextLoss loss = text_loss(run);
  if (loss.mean) {
    std::snprintf(buf, sizeof buf, "loss %.4f (perplexity %.2f)", *loss.mean, *loss.perplexity);
    out += std::string(buf) + ": the mean cross-entropy of each next token of the text\n";
  } else {
    out += "loss: none (one token has no next token to predict)\n";
  }
  for (const StageKey& k : keys) {
    const auto held = run.stage(k);
    if (!held) continue;
    const RowMatrix& m = *held;
    os << out;
    out.clear();
    out += "\n" + std::string(k.id) + (k.layer >= 0 ? " layer " + std::to_string(k.layer) : "") +
           (k.head >= 0 ? " head " + std::to_string(k.head) : "") + " (" +
           std::to_string(m.rows()) + " x " + std::to_string(m.cols()) + ")";
    if (m.rows() > kShownCells || m.cols() > kShownCells) {
      const auto finite = m.unaryExpr([](float v) { return std::isfinite(v) ? v : 0.0f; });
      std::snprintf(buf, sizeof buf, ": min %.4f, max %.4f\n",
                    static_cast<double>(finite.minCoeff()), static_cast<double>(finite.maxCoeff()));
      out += buf;
      continue;
    }
    out += "\n";
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
      for (Eigen::Index c = 0; c < m.cols(); ++c) {
        std::snprintf(buf, sizeof buf, " %9.4f", static_cast<double>(m(r, c)));
        out += buf;
      }
      out += "\n";
    }
  }
  os << out;
}

}  // namespace attnscope::core
