// kv_cache_panel.cpp: generating token by token with the KV cache, one step
// at a time, on the lab's inputs: the new token's query row, the cached keys
// and values (the new row marked), its scores and weights against the cache,
// the output row, the check against a full recompute and the cache's bytes.
// Numbers: core::modern::cache_step (the book's use_cache classes).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "attnscope/attention/modern.hpp"
#include "teach/teach.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

namespace modern = core::modern;

constexpr int kMaxTokens = 256;  // the steps are tables of numbers: a page of them

struct KindChoice {
  modern::Kind kind;
  const char* label;
};
constexpr KindChoice kKinds[] = {
    {modern::Kind::Multihead, "multi-head (gpt_with_kv_cache.py)"},
    {modern::Kind::GroupedQuery, "grouped-query"},
    {modern::Kind::SlidingWindow, "sliding window"},
    {modern::Kind::Latent, "latent (MLA)"},
};

const char* kind_label(modern::Kind kind) {
  for (const KindChoice& k : kKinds)
    if (k.kind == kind) return k.label;
  return "";
}

void config_fields(TeachState& t) {
  modern::Config& c = t.cache_config;
  const float font = ImGui::GetFontSize();
  ImGui::SetNextItemWidth(font * 16);
  if (ImGui::BeginCombo("class", kind_label(c.kind))) {
    for (const KindChoice& k : kKinds)
      if (ImGui::Selectable(k.label, k.kind == c.kind)) c.kind = k.kind;
    ImGui::EndCombo();
  }
  auto field = [&](const char* label, int* v) {
    ImGui::SetNextItemWidth(font * 5);
    ImGui::InputInt(label, v, 0, 0, ImGuiInputTextFlags_AutoSelectAll);
  };
  field("d_out", &c.d_out);
  ImGui::SameLine();
  field("heads", &c.num_heads);
  if (c.kind == modern::Kind::GroupedQuery) {
    ImGui::SameLine();
    field("K/V groups", &c.num_kv_groups);
  }
  if (c.kind == modern::Kind::SlidingWindow) {
    int w = c.window.value_or(3);
    ImGui::SameLine();
    field("window", &w);
    c.window = w;
  }
  if (c.kind == modern::Kind::Latent) {
    int l = modern::latent_width(c);
    ImGui::SameLine();
    field("latent", &l);
    c.latent_dim = l;
  }
  int seed = static_cast<int>(c.seed);
  ImGui::SameLine();
  field("seed", &seed);
  c.seed = static_cast<std::uint64_t>(std::max(seed, 0));
  if (c.kind != modern::Kind::Latent) {
    ImGui::SameLine();
    ImGui::Checkbox("RoPE", &c.rope);
  } else {
    c.rope = false;  // the book's latent class has no rotary positions
  }
}

// The step for the current inputs and config, computed again only when one
// of them (or the step) changed.
void refresh(AppState& state) {
  TeachState& t = state.teach;
  const modern::Config& c = t.cache_config;
  char key[256];
  std::snprintf(key, sizeof key, "%llu/%d/%d/%d/%d/%d/%d/%d/%llu/%d/%d",
                static_cast<unsigned long long>(state.trace_version), static_cast<int>(c.kind),
                c.d_out, c.num_heads, c.num_kv_groups, c.window.value_or(0),
                c.latent_dim.value_or(0), c.rope ? 1 : 0, static_cast<unsigned long long>(c.seed),
                t.cache_t, static_cast<int>(state.inputs.embeddings.rows()));
  if (t.cache_key == key) return;
  t.cache_key = key;
  t.cache_result.reset();
  t.cache_refusal = modern::validate_cache(c, state.inputs.embeddings, t.cache_t);
  if (t.cache_refusal.empty())
    t.cache_result = modern::cache_step(c, state.inputs.embeddings, t.cache_t, true);
}

std::string token_name(const AppState& state, int position) {
  const auto& tokens = state.inputs.tokens;
  return position >= 0 && position < static_cast<int>(tokens.size())
             ? tokens[static_cast<std::size_t>(position)]
             : std::to_string(position);
}

// `m` as a table, rows named by the tokens from `first_position`, the last
// row marked as the new token's when `mark_last`.
void rows_table(const AppState& state, const char* id, const core::RowMatrix& m, int first_position,
                bool mark_last, const std::vector<std::string>& col_names = {}) {
  const int cols = static_cast<int>(std::min<Eigen::Index>(m.cols(), 63));
  const float row_h = ImGui::GetTextLineHeightWithSpacing();
  const float h = row_h * static_cast<float>(std::min<Eigen::Index>(m.rows(), 8) + 1) + 4;
  if (!ImGui::BeginTable(id, cols + 1,
                         ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                             ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollX |
                             ImGuiTableFlags_ScrollY,
                         ImVec2(0, h)))
    return;
  ImGui::TableSetupScrollFreeze(1, 1);
  ImGui::TableSetupColumn("token");
  for (int j = 0; j < cols; ++j)
    ImGui::TableSetupColumn(j < static_cast<int>(col_names.size())
                                ? col_names[static_cast<std::size_t>(j)].c_str()
                                : std::to_string(j).c_str());
  ImGui::TableHeadersRow();
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    ImGui::TableNextRow();
    const bool fresh = mark_last && i == m.rows() - 1;
    if (fresh) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(150, 100, 20, 150));
    ImGui::TableNextColumn();
    const std::string name = token_name(state, first_position + static_cast<int>(i));
    ImGui::Text("%s%s", name.c_str(), fresh ? " (new)" : "");
    for (int j = 0; j < cols; ++j) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(num(m(i, j)).c_str());
    }
  }
  ImGui::EndTable();
}

void step_controls(AppState& state, int T) {
  TeachState& t = state.teach;
  t.cache_t = std::clamp(t.cache_t, 0, T - 1);
  ImGui::BeginDisabled(t.cache_t <= 0);
  if (ImGui::Button(state.ui.unicode ? "◀ back" : "< back")) --t.cache_t;
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
  ImGui::SliderInt("##cache_step", &t.cache_t, 0, T - 1, "step %d");
  ImGui::SameLine();
  ImGui::BeginDisabled(t.cache_t >= T - 1);
  if (ImGui::Button(state.ui.unicode ? "next token ▶" : "next token >")) ++t.cache_t;
  ImGui::EndDisabled();
}

void draw_step(AppState& state, const modern::CacheStep& s) {
  TeachState& t = state.teach;
  const modern::Config& c = t.cache_config;
  const int heads = c.num_heads, per_kv = heads / modern::kv_heads(c);
  t.cache_head = std::clamp(t.cache_head, 0, heads - 1);
  const int kv = t.cache_head / per_kv;
  const int S = static_cast<int>(s.keys.front().rows());
  text_wrapped(state, "Step " + std::to_string(s.position) + ": \"" +
                          token_name(state, s.position) +
                          "\" arrives. Only its row is new: "
                          "its query meets the " +
                          std::to_string(S) +
                          (S == 1 ? " cached key (position " : " cached keys (positions ") +
                          std::to_string(s.first_key_position) + ".." + std::to_string(s.position) +
                          "), and its key and value join "
                          "the cache for the tokens after it.");
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  ImGui::SliderInt("query head", &t.cache_head, 0, heads - 1);
  if (per_kv > 1) {
    ImGui::SameLine();
    ImGui::TextDisabled("reads K/V head %d with query heads %d..%d", kv, kv * per_kv,
                        kv * per_kv + per_kv - 1);
  }
  ImGui::TextUnformatted(c.rope ? "query (rotated to its position)" : "query");
  rows_table(state, "q", s.queries[static_cast<std::size_t>(t.cache_head)], s.position, true);
  if (s.latent.size() > 0) {
    ImGui::TextUnformatted("the cache: the latent of every token so far");
    rows_table(state, "latent", s.latent, s.first_key_position, true);
  }
  ImGui::TextUnformatted(s.latent.size() > 0 ? "keys up-projected from the latent"
                         : c.rope            ? "cached keys (rotated)"
                                             : "cached keys");
  rows_table(state, "k", s.keys[static_cast<std::size_t>(kv)], s.first_key_position, true);
  ImGui::TextUnformatted(s.latent.size() > 0 ? "values up-projected from the latent"
                                             : "cached values");
  rows_table(state, "v", s.values[static_cast<std::size_t>(kv)], s.first_key_position, true);
  ImGui::TextUnformatted("scores q · k, then softmax(scores / √head_dim): one row, no mask");
  const core::RowMatrix& sc = s.scores[static_cast<std::size_t>(t.cache_head)];
  const core::RowMatrix& w = s.weights[static_cast<std::size_t>(t.cache_head)];
  core::RowMatrix both(2, sc.cols());
  both << sc, w;
  rows_table(state, "sw", both.transpose(), s.first_key_position, false, {"score", "weight"});
  ImGui::TextUnformatted("output row (out_proj of the heads' contexts)");
  rows_table(state, "out", s.output, s.position, true);
  const bool same = s.max_abs_diff <= 1e-5f;
  char check[160];
  std::snprintf(check, sizeof check,
                "cached result %s full recompute of tokens 0..%d: largest |difference| %.2g",
                same ? "=" : "differs from", s.position, static_cast<double>(s.max_abs_diff));
  ImGui::TextColored(same ? ImVec4(0.45f, 0.85f, 0.5f, 1.0f) : kErrorColour, "%s", check);
  ImGui::Text("the cache now holds %zu bytes (float32)", s.cache_bytes);
}

}  // namespace

void draw_kv_cache(AppState& state) {
  TeachState& t = state.teach;
  if (!begin_learn_window(t, "KV cache, step by step", &t.show_kv_cache, ImVec2(760, 820))) {
    ImGui::End();
    return;
  }
  text_wrapped(state,
               "A model generates one token at a time. Recomputing every key and value at "
               "each step would repeat the work of the steps before, so the attention module "
               "keeps them (the KV cache) and computes only the new token's row. The lab's "
               "inputs arrive here one by one, through the book's classes with use_cache.");
  config_fields(t);
  const int T = static_cast<int>(state.inputs.embeddings.rows());
  if (T < 1 || T > kMaxTokens) {
    ImGui::Text("Shown for 1 to %d tokens (the inputs have %d).", kMaxTokens, T);
    ImGui::End();
    return;
  }
  step_controls(state, T);
  refresh(state);
  if (!t.cache_refusal.empty())
    error_text(state, t.cache_refusal);
  else if (t.cache_result)
    draw_step(state, *t.cache_result);
  ImGui::End();
}

}  // namespace attnscope::gui
