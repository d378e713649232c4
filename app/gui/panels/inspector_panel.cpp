// inspector_panel.cpp: the arithmetic behind the pinned cell. Every number
// comes from the trace or from core's explain_* functions; the panel only
// lays them out.
//
// Sections
//   1. helpers (vectors as text, table setup)
//   2. a score: q_i and k_j term by term, their sum, ÷ √d_k
//   3. a weight: the whole softmax row
//   4. a context entry: the weighted sum of value rows
//   5. anything else: the row and where it comes from
//   6. the panel
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "attnscope/analysis/inspect.hpp"
#include "attnscope/base/stages.hpp"
#include "panels/panels.hpp"
#include "render/heatmap.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/widgets.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {

namespace {

// ---------------------------------------------------------------------------
// 1. Helpers

std::string num(const AppState& s, float v) { return format_value(v, 4, s.ui.unicode); }

std::string vec_text(const AppState& s, const float* v, Eigen::Index n,
                     Eigen::Index max_shown = 6) {
  std::string out = "[";
  for (Eigen::Index k = 0; k < n && k < max_shown; ++k) out += (k ? ", " : "") + num(s, v[k]);
  if (n > max_shown) out += s.ui.unicode ? ", …" : ", ...";
  return out + "]";
}

// "label = [a, b, c]" with the entries wrapping between numbers, never inside one.
void vector_line(const AppState& s, const std::string& label, const float* v, Eigen::Index n,
                 Eigen::Index max_shown = 16) {
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(0, ImGui::GetStyle().ItemSpacing.y));
  ImGui::TextUnformatted(display(s, label + " = [").c_str());
  for (Eigen::Index k = 0; k < n && k < max_shown; ++k) {
    const std::string item = num(s, v[k]) + (k + 1 < n ? ", " : "]");
    ImGui::SameLine();
    if (ImGui::GetCursorScreenPos().x + ImGui::CalcTextSize(item.c_str()).x > right)
      ImGui::NewLine();
    ImGui::TextUnformatted(item.c_str());
  }
  if (n > max_shown) {
    ImGui::SameLine();
    ImGui::TextUnformatted(s.ui.unicode ? "…]" : "...]");
  }
  ImGui::PopStyleVar();
}

std::string token(const core::Trace& t, int i) {
  if (i < 0 || i >= t.num_tokens()) return "?";
  return "'" + t.tokens[static_cast<std::size_t>(i)] + "'";
}

// A token as a table's row label: short enough to leave room for numbers.
std::string token_cell(const AppState& s, const core::Trace& t, int i) {
  std::string name = i >= 0 && i < t.num_tokens() ? t.tokens[static_cast<std::size_t>(i)] : "?";
  return fit_text(name, ImGui::CalcTextSize("journey").x, s.ui.unicode);
}

void heading(const AppState& s, const std::string& text) {
  ImGui::Spacing();
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.80f, 0.45f, 1.0f));
  text_wrapped(s, text);
  ImGui::PopStyleColor();
}

// Tables of numbers: fixed-width digits, tight cells (the panel is narrow).
void mono_push(const AppState& s) {
  if (s.ui.font_mono) ImGui::PushFont(s.ui.font_mono);
  ImGui::PushStyleVar(ImGuiStyleVar_CellPadding, ImVec2(3, 2));
}
void mono_pop(const AppState& s) {
  ImGui::PopStyleVar();
  if (s.ui.font_mono) ImGui::PopFont();
}

constexpr ImGuiTableFlags kTable = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                   ImGuiTableFlags_BordersOuterH | ImGuiTableFlags_SizingFixedFit |
                                   ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX;

// A table as tall as its rows, but at most `max_rows` rows before scrolling.
ImVec2 table_size(int rows, int max_rows = 14) {
  const float row_h = ImGui::GetTextLineHeightWithSpacing() + 2;
  return ImVec2(0, row_h * static_cast<float>(std::min(rows, max_rows) + 1) + 6);
}

const ImU32 kPinnedRow = IM_COL32(255, 200, 60, 70);

// Begins one of the inspector's tables: these columns under a header row
// that stays in view, the first `frozen_cols` columns too when scrolled sideways.
bool begin_table(const char* id, std::initializer_list<const char*> columns, ImVec2 size,
                 int frozen_cols) {
  if (!ImGui::BeginTable(id, static_cast<int>(columns.size()), kTable, size)) return false;
  ImGui::TableSetupScrollFreeze(frozen_cols, 1);
  for (const char* c : columns) ImGui::TableSetupColumn(c);
  ImGui::TableHeadersRow();
  return true;
}

// Inside a table of keys just begun: when the pinned key changes, scroll it
// to the middle of the table (row `row` of equal-height rows under the
// header). Only on a change, so the learner's own scrolling stays.
void scroll_to_pinned_row(int row) {
  ImGuiStorage* seen = ImGui::GetStateStorage();  // the table's own window
  const ImGuiID key = ImGui::GetID("##pinned_row");
  if (seen->GetInt(key, -1) == row) return;
  seen->SetInt(key, row);
  const float row_h = ImGui::GetTextLineHeight() + 2 * ImGui::GetStyle().CellPadding.y;
  const float visible = ImGui::GetWindowHeight() - row_h;  // below the frozen header
  ImGui::SetScrollY(std::max(0.0f, static_cast<float>(row) * row_h - (visible - row_h) * 0.5f));
}

// ---------------------------------------------------------------------------
// 2. Score

void score_section(AppState& s, const core::Trace& t, int head, int i, int j) {
  const auto b = core::explain_score(t, head, i, j);
  if (!b) return;
  const bool simple = !t.recipe().has(core::BlockPart::Projection);
  const char* qn = simple ? "x_i" : "q_i";
  const char* kn = simple ? "x_j" : "k_j";
  heading(s, std::string("score = ") + qn + " · " + kn + ": multiply term by term, then add");
  ImGui::TextDisabled("%s = row %d %s    %s = row %d %s", qn, i, token(t, i).c_str(), kn, j,
                      token(t, j).c_str());
  mono_push(s);
  const int n = static_cast<int>(b->query.size());
  if (begin_table("score", {"d", qn, kn, "product"}, table_size(n + 1), 0)) {
    ImGuiListClipper clip;
    clip.Begin(n);
    while (clip.Step())
      for (int d = clip.DisplayStart; d < clip.DisplayEnd; ++d) {
        const auto k = static_cast<std::size_t>(d);
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextDisabled("%d", d);
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(num(s, b->query[k]).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(num(s, b->key[k]).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(num(s, b->products[k]).c_str());
      }
    ImGui::TableNextRow();
    ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, kPinnedRow);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(display(s, "Σ").c_str());
    ImGui::TableNextColumn();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted("sum =");
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(num(s, b->sum).c_str());
    ImGui::EndTable();
  }
  mono_pop(s);
  text_wrapped(s, "ω[" + std::to_string(i) + ", " + std::to_string(j) + "] = " + num(s, b->sum));
  // The book's order: the causal mask fills the raw scores, then the
  // softmax divides what is left by √d_k (−∞ stays −∞).
  if (t.recipe().has(core::BlockPart::Mask)) {
    heading(s, "then the causal mask");
    if (b->masked)
      text_wrapped(s, "Key " + token(t, j) + " (column " + std::to_string(j) +
                          ") comes after query " + token(t, i) + " (row " + std::to_string(i) +
                          "), so the mask replaces the score by −∞: its weight will be exactly 0.");
    else
      text_wrapped(s, "Column " + std::to_string(j) + " ≤ row " + std::to_string(i) +
                          ": the key is not in the future, the score is kept.");
  }
  if (b->scaled) {
    heading(s, "then divide by √d_k");
    const float dividend = b->masked ? -std::numeric_limits<float>::infinity() : b->sum;
    text_wrapped(s, num(s, dividend) + " ÷ " + num(s, b->sqrt_dk) + " = " +
                        num(s, b->scaled_value) + "   (d_k = " + std::to_string(b->key.size()) +
                        ")");
  }
}

// ---------------------------------------------------------------------------
// 3. Softmax row

void softmax_section(AppState& s, const core::Trace& t, int head, int i, int j) {
  const auto b = core::explain_softmax(t, head, i);
  if (!b) return;
  heading(s, "weights row " + std::to_string(i) + " " + token(t, i) + " = softmax of its scores");
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  text_wrapped(s,
               "For every key: subtract the row max, take exp, then divide by the sum of all the "
               "exps. Masked (−∞) keys give exp = 0.");
  ImGui::PopStyleColor();
  text_wrapped(s, "max = " + num(s, b->row_max) + "    Σ exp = " + num(s, b->sum));
  mono_push(s);
  const int n = static_cast<int>(b->logits.size());
  const std::string minus_max = display(s, "− max");
  if (begin_table("softmax", {"key", "score", minus_max.c_str(), "exp", "weight"},
                  table_size(n, 12), 1)) {
    if (j >= 0 && j < n) scroll_to_pinned_row(j);
    ImGuiListClipper clip;
    clip.Begin(n);
    while (clip.Step())
      for (int k = clip.DisplayStart; k < clip.DisplayEnd; ++k) {
        const auto u = static_cast<std::size_t>(k);
        ImGui::TableNextRow();
        if (k == j) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, kPinnedRow);
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(token_cell(s, t, k).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(num(s, b->logits[u]).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(num(s, b->shifted[u]).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(num(s, b->exps[u]).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(num(s, b->weights[u]).c_str());
      }
    ImGui::EndTable();
  }
  mono_pop(s);
  if (j >= 0 && j < n) {
    const auto u = static_cast<std::size_t>(j);
    text_wrapped(s, "weight[" + std::to_string(i) + ", " + std::to_string(j) +
                        "] = " + num(s, b->exps[u]) + " ÷ " + num(s, b->sum) + " = " +
                        num(s, b->weights[u]));
  }
}

void dropout_section(AppState& s, const core::Trace& t, int head, int i, int j) {
  const core::Stage* w = t.find(core::stage_id::weights, head);
  const core::Stage* m = t.find(core::stage_id::dropout_mask, head);
  const core::Stage* d = t.find(core::stage_id::dropped_weights, head);
  if (!w || !m || !d) return;
  heading(s, "then dropout");
  const float keep = m->data()(i, j);
  text_wrapped(
      s, num(s, w->data()(i, j)) + " × mask " + num(s, keep) + " = " + num(s, d->data()(i, j)) +
             (keep == 0.0f                                ? "   (dropped)"
              : t.config.training && t.config.dropout > 0 ? "   (kept and scaled up by 1/(1−p))"
                                                          : "   (kept)"));
}

// ---------------------------------------------------------------------------
// 4. Context

void context_section(AppState& s, const core::Trace& t, int head, int i, int c) {
  const auto b = core::explain_context(t, head, i);
  if (!b) return;
  const bool simple = !t.recipe().has(core::BlockPart::Projection);
  const std::string vn = simple ? "x_j" : "v_j";
  const std::string col = "[" + std::to_string(c) + "]";
  heading(s, "z_i = Σ_j w_ij · " + vn + ": every " + (simple ? "input" : "value") +
                 " row scaled by its weight, then added up");
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  text_wrapped(s, "Column " + std::to_string(c) +
                      " of the sum, key by key (click another "
                      "column of Z for the others):");
  ImGui::PopStyleColor();
  mono_push(s);
  const int n = static_cast<int>(b->weights.size());
  const std::string v_col = vn + col, product_col = display(s, "w·" + vn + col);
  // stage-literals: off (an ImGui id)
  if (begin_table("context", {"key j", "w_ij", v_col.c_str(), product_col.c_str()},
                  table_size(n + 1, 12), 1)) {
    // stage-literals: on
    ImGuiListClipper clip;
    clip.Begin(n);
    while (clip.Step())
      for (int k = clip.DisplayStart; k < clip.DisplayEnd; ++k) {
        const auto u = static_cast<std::size_t>(k);
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(token_cell(s, t, k).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(num(s, b->weights[u]).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(num(s, b->values(k, c)).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(num(s, b->weighted(k, c)).c_str());
        if (ImGui::IsItemHovered())
          ImGui::SetTooltip(
              "%s", display(s, "the whole weighted row: " +
                                   vec_text(s, b->weighted.row(k).data(), b->weighted.cols()))
                        .c_str());
      }
    ImGui::TableNextRow();
    ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, kPinnedRow);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(display(s, "Σ").c_str());
    ImGui::TableNextColumn();
    ImGui::TableNextColumn();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(num(s, b->context[static_cast<std::size_t>(c)]).c_str());
    ImGui::EndTable();
  }
  vector_line(s, "z_i", b->context.data(), static_cast<Eigen::Index>(b->context.size()));
  mono_pop(s);
}

// ---------------------------------------------------------------------------
// 5. Other stages

// "q_i[c] is x_i · W[:, c] (+ b[c])", with both vectors from the trace.
void projection_section(AppState& s, const core::Trace& t, const core::Stage& st, int i, int c) {
  const std::string which = st.id == core::stage_id::queries ? "query"
                            : st.id == core::stage_id::keys  ? "key"
                                                             : "value";
  const bool split = t.recipe().split_heads;  // one projection, cut into heads
  const int ph = split ? -1 : st.head;
  const core::Stage* x = t.find(core::stage_id::inputs);
  const core::Stage* w = t.find("W_" + which, ph);
  const core::Stage* bias = t.find("b_" + which, ph);
  if (split && st.head >= 0) {
    const int hd = t.head_dim();
    heading(s, "head " + std::to_string(st.head) + "'s slice: column " + std::to_string(c) +
                   " here is column " + std::to_string(st.head * hd + c) + " of the full " +
                   stage_symbol(st.id) + " (before the split)");
    c = st.head * hd + c;
  }
  if (!x || !w) return;
  heading(s, stage_symbol(st.id) + "[" + std::to_string(i) + ", " + std::to_string(c) +
                 "] = x_i · W_" + which + "[:, " + std::to_string(c) + "]" + (bias ? " + b" : ""));
  const core::RowMatrix col = w->data().col(c);
  mono_push(s);
  vector_line(s, "x_i", x->data().row(i).data(), x->data().cols());
  vector_line(s, "W_" + which + "[:, " + std::to_string(c) + "]", col.data(), col.size());
  if (bias) text_wrapped(s, "b[" + std::to_string(c) + "] = " + num(s, bias->data()(0, c)));
  mono_pop(s);
}

void other_section(AppState& s, const core::Trace& t, const core::Stage& st, int i, int c) {
  if (st.id == core::stage_id::queries || st.id == core::stage_id::keys ||
      st.id == core::stage_id::values) {
    projection_section(s, t, st, i, c);
  } else if (st.id == core::stage_id::output && t.recipe().has(core::BlockPart::OutProj)) {
    const core::Stage* cc = t.find(core::stage_id::concat);
    const core::Stage* w = t.find(core::stage_id::W_out);
    const core::Stage* b = t.find(core::stage_id::b_out);
    if (cc && w && b) {
      heading(s, "output[" + std::to_string(i) + ", " + std::to_string(c) +
                     "] = concat_i · W_out[:, " + std::to_string(c) + "] + b_out[" +
                     std::to_string(c) + "]");
      const core::RowMatrix col = w->data().col(c);
      mono_push(s);
      vector_line(s, "concat_i", cc->data().row(i).data(), cc->data().cols());
      vector_line(s, "W_out[:, " + std::to_string(c) + "]", col.data(), col.size());
      text_wrapped(s, "b_out[" + std::to_string(c) + "] = " + num(s, b->data()(0, c)));
      mono_pop(s);
    }
  } else if (st.id == core::stage_id::concat ||
             (st.id == core::stage_id::output && t.recipe().stacked_heads())) {
    const int width = t.head_dim();  // one head's columns
    const int h = width > 0 ? c / width : 0;
    const core::Stage* ctx = t.find(core::stage_id::context, h);
    heading(s, "column " + std::to_string(c) + " belongs to head " + std::to_string(h) +
                   ": it is head " + std::to_string(h) + "'s context[" + std::to_string(i) + ", " +
                   std::to_string(c - h * width) + "]");
    if (ctx)
      vector_line(s, "head " + std::to_string(h) + "'s z_i", ctx->data().row(i).data(),
                  ctx->data().cols());
  }
  if (st.data().rows() > i) {
    heading(s, "the whole row");
    mono_push(s);
    vector_line(s, "row " + std::to_string(i), st.data().row(i).data(), st.data().cols());
    mono_pop(s);
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// 6. The panel

void draw_inspector_panel(AppState& state) {
  if (state.ui.font_heading) ImGui::PushFont(state.ui.font_heading);
  ImGui::TextUnformatted("Inspector");
  if (state.ui.font_heading) ImGui::PopFont();
  if (!state.trace) return;
  const core::Trace& t = *state.trace;
  const CellRef p = state.pinned;
  if (!p.valid()) {
    text_wrapped(state,
                 "Click any cell of a heatmap to pin it here and see the arithmetic "
                 "behind it: a score term by term, a whole softmax row, or the weighted "
                 "sum behind a context vector. Hover a cell to see its value.");
    return;
  }
  const core::Stage* st = t.find(p.stage, p.head);
  if (!st || p.row >= st->data().rows() || p.col >= st->data().cols()) {
    text_wrapped(state, "The pinned cell is not part of the current result.");
    if (ImGui::Button("Unpin")) state.pinned = CellRef{};
    return;
  }
  const float v = st->data()(p.row, p.col);
  std::string title =
      stage_name(st->id) + " [" + std::to_string(p.row) + ", " + std::to_string(p.col) + "]";
  if (st->head >= 0) title += " · head " + std::to_string(st->head);
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.55f, 0.80f, 1.0f, 1.0f));
  text_wrapped(state, title);
  ImGui::PopStyleColor();
  auto named = [](const std::vector<std::string>* tokens, int i) {
    return tokens && i >= 0 && i < static_cast<int>(tokens->size())
               ? "'" + (*tokens)[static_cast<std::size_t>(i)] + "'"
               : std::string("?");
  };
  if (const auto* keys = col_tokens(*st, t))
    text_wrapped(state, "query " + named(row_tokens(*st, t), p.row) + " (row " +
                            std::to_string(p.row) + ") · key " + named(keys, p.col) + " (column " +
                            std::to_string(p.col) + ")");
  else if (const auto* rows = row_tokens(*st, t))
    text_wrapped(state, "token " + named(rows, p.row) + ", column " + std::to_string(p.col));
  if (state.ui.font_heading) ImGui::PushFont(state.ui.font_heading);
  ImGui::TextUnformatted(("= " + num(state, v)).c_str());
  if (state.ui.font_heading) ImGui::PopFont();
  ImGui::SameLine();
  if (ImGui::SmallButton("Unpin (Esc)")) state.pinned = CellRef{};
  ImGui::Separator();

  const std::string& id = st->id;
  const int head = st->head;
  if (id == core::stage_id::scores || id == core::stage_id::scaled_scores ||
      id == core::stage_id::masked_scores || id == core::stage_id::mask) {
    score_section(state, t, head, p.row, p.col);
  } else if (id == core::stage_id::weights || id == core::stage_id::dropped_weights ||
             id == core::stage_id::dropout_mask) {
    softmax_section(state, t, head, p.row, p.col);
    if (id != core::stage_id::weights) dropout_section(state, t, head, p.row, p.col);
  } else if (id == core::stage_id::context) {
    context_section(state, t, head, p.row, p.col);
  } else {
    other_section(state, t, *st, p.row, p.col);
  }
}

}  // namespace attnscope::gui
