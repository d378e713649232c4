// kv_memory_panel.cpp: how big the KV cache grows, as the book's memory
// estimators compute it (core::kv_memory_table): a model shape (a preset or
// edited), a dtype and a context length; the table at that length with the
// READMEs' printed numbers as badges, and a plot of every mechanism against
// the context length.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "teach/teach.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

constexpr const char* kDtypes[] = {"fp32", "bf16", "fp16", "fp8", "int8"};
constexpr int kMaxContext = 16 << 20;  // 16M tokens: far past any preset's context

// One colour per mechanism, in kv_memory_table's order.
ImU32 mechanism_colour(std::size_t row) {
  static const ImU32 colours[] = {IM_COL32(230, 120, 90, 255), IM_COL32(90, 170, 240, 255),
                                  IM_COL32(240, 200, 80, 255), IM_COL32(200, 130, 220, 255),
                                  IM_COL32(110, 210, 140, 255)};
  return colours[row % (sizeof colours / sizeof colours[0])];
}

// The context a preset opens at: the README's run for the book's examples
// (so their badges show), else the model's own context length.
int opening_context(const core::KvModelShape& preset) {
  for (const core::KvBookPrint& p : core::kv_book_prints())
    if (p.preset == preset.id) return static_cast<int>(p.context);
  return preset.context_length;
}

void choose_preset(TeachState& t, const core::KvModelShape& preset) {
  t.kv_shape = preset;
  t.kv_context = opening_context(preset);
}

// GB as the scripts print it, or MB below 1 GB (a short context's cache).
std::string readable_bytes(double bytes) {
  if (bytes >= 1e9) return core::format_gb(static_cast<std::uint64_t>(bytes));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MB", bytes / 1e6);
  return buf;
}

// "32k", "1.5M", "900": a context length for an axis.
std::string short_tokens(double n) {
  char buf[32];
  if (n >= 1048576)
    std::snprintf(buf, sizeof buf, "%.3gM", n / 1048576.0);
  else if (n >= 1024)
    std::snprintf(buf, sizeof buf, "%.3gk", n / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%.0f", n);
  return buf;
}

void shape_fields(TeachState& t) {
  core::KvModelShape& s = t.kv_shape;
  const core::KvModelShape before = s;
  const float w = ImGui::GetFontSize() * 7;
  auto field = [&](const char* label, int* v, const char* tip) {
    ImGui::SetNextItemWidth(w);
    ImGui::InputInt(label, v, 0, 0, ImGuiInputTextFlags_AutoSelectAll);  // typing replaces it
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tip);
  };
  field("emb_dim", &s.emb_dim, "the model's width (--emb_dim)");
  ImGui::SameLine();
  field("n_heads", &s.n_heads, "query heads (--n_heads)");
  ImGui::SameLine();
  field("K/V heads", &s.n_kv_heads,
        "grouped-query attention's K/V heads; the scripts' --n_kv_groups is n_heads / this");
  field("n_layers", &s.n_layers, "transformer blocks (--n_layers)");
  ImGui::SameLine();
  field("head_dim", &s.head_dim, "0: the scripts' ceil(emb_dim / n_heads)");
  ImGui::SameLine();
  field("latent", &s.latent_dim, "MLA's cached latent per token (--latent_dim); 0: no MLA row");
  field("window", &s.sliding_window,
        "sliding-window layers keep this many tokens (--sliding_window_size); 0: no SWA rows");
  ImGui::SameLine();
  field("SWA", &s.swa_layers, "--swa_ratio a:b: a sliding-window layers ...");
  ImGui::SameLine();
  field("full", &s.full_layers, "... for every b full-attention layers");
  // An edited shape is the learner's own: no preset's badges apply.
  const bool edited = s.emb_dim != before.emb_dim || s.n_heads != before.n_heads ||
                      s.n_kv_heads != before.n_kv_heads || s.n_layers != before.n_layers ||
                      s.head_dim != before.head_dim || s.latent_dim != before.latent_dim ||
                      s.sliding_window != before.sliding_window ||
                      s.swa_layers != before.swa_layers || s.full_layers != before.full_layers;
  if (edited && core::find_kv_model_preset(s.id)) {
    s.name = "Your shape (from " + s.name + ")";
    s.id = "custom";
  }
}

void choices(TeachState& t) {
  const float font = ImGui::GetFontSize();
  ImGui::SetNextItemWidth(font * 16);
  if (ImGui::BeginCombo("model", t.kv_shape.name.c_str())) {
    for (const core::KvModelShape& p : core::kv_model_presets())
      if (ImGui::Selectable(p.name.c_str(), p.id == t.kv_shape.id)) choose_preset(t, p);
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 6);
  if (ImGui::BeginCombo("dtype", t.kv_shape.dtype.c_str())) {
    for (const char* d : kDtypes)
      if (ImGui::Selectable(d, t.kv_shape.dtype == d)) t.kv_shape.dtype = d;
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(font * 8);
  ImGui::InputInt("tokens", &t.kv_context, 1024, 8192);
  t.kv_context = std::clamp(t.kv_context, 1, kMaxContext);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("the context length the table is for (--context_length), batch 1");
  shape_fields(t);
}

void table(AppState& state, const std::vector<core::KvMemoryRow>& rows) {
  const TeachState& t = state.teach;
  if (!ImGui::BeginTable(
          "kv_rows", 5,
          ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit))
    return;
  for (const char* c : {"mechanism", "KV cache", "bytes", "MHA ÷ this", "the book prints"})
    ImGui::TableSetupColumn(c);
  ImGui::TableHeadersRow();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const core::KvMemoryRow& r = rows[i];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(mechanism_colour(i)), "%s",
                       r.mechanism.c_str());
    ImGui::TableNextColumn();
    const std::string gb = core::format_gb(r.bytes);
    ImGui::TextUnformatted(gb.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(grouped(static_cast<long long>(r.bytes)).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%.2f×",
                r.bytes ? static_cast<double>(rows[0].bytes) / static_cast<double>(r.bytes) : 0.0);
    ImGui::TableNextColumn();
    const core::KvBookPrint* print = core::find_kv_book_print(
        t.kv_shape, static_cast<std::uint64_t>(t.kv_context), t.kv_shape.dtype, r.mechanism);
    if (!print) continue;
    const bool same = print->printed == gb;
    ImGui::TextColored(same ? ImVec4(0.45f, 0.85f, 0.5f, 1.0f) : ImVec4(1.0f, 0.45f, 0.4f, 1.0f),
                       "%s %s (%s README)",
                       same ? "the same," : "differs:", std::string(print->printed).c_str(),
                       std::string(print->readme).c_str());
  }
  ImGui::EndTable();
}

// Bytes of every mechanism at `tokens`, in kv_memory_table's order.
std::vector<double> bytes_at(const TeachState& t, int bytes_per_elem, double tokens) {
  std::vector<double> out;
  for (const core::KvMemoryRow& r : core::kv_memory_table(
           t.kv_shape, static_cast<std::uint64_t>(std::max(1.0, tokens)), bytes_per_elem))
    out.push_back(static_cast<double>(r.bytes));
  return out;
}

void plot(AppState& state, const std::vector<core::KvMemoryRow>& rows, int bytes_per_elem) {
  TeachState& t = state.teach;
  ImGui::Checkbox("log scale for tokens", &t.kv_log_x);
  const double x_max = std::max<double>(
      {static_cast<double>(t.kv_context), static_cast<double>(t.kv_shape.context_length), 2.0});
  auto x_of = [&](double u) {  // u in [0, 1] -> tokens
    return t.kv_log_x ? std::pow(x_max, u) : u * x_max;
  };
  auto u_of = [&](double tokens) {
    return t.kv_log_x ? std::log(std::max(tokens, 1.0)) / std::log(x_max) : tokens / x_max;
  };
  const std::vector<double> top = bytes_at(t, bytes_per_elem, x_max);
  const double y_max = std::max(1.0, *std::max_element(top.begin(), top.end()));
  const float font = ImGui::GetFontSize();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float left = font * 5, w = std::max(ImGui::GetContentRegionAvail().x - left, 50.0f),
              h = std::max(ImGui::GetContentRegionAvail().y - font * 3, font * 8);
  const ImVec2 p0(origin.x + left, origin.y + font * 0.5f), p1(p0.x + w, p0.y + h);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRect(p0, p1, IM_COL32(120, 120, 130, 255));
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  for (int k = 0; k <= 4; ++k) {
    const float f = static_cast<float>(k) / 4.0f;
    const float y = p1.y - h * f;
    dl->AddLine(ImVec2(p0.x, y), ImVec2(p1.x, y), IM_COL32(80, 80, 90, 120));
    const std::string label = core::format_gb(static_cast<std::uint64_t>(y_max * k / 4.0));
    dl->AddText(ImVec2(origin.x, y - font * 0.5f), text, label.c_str());
    const float x = p0.x + w * f;
    const std::string tokens = short_tokens(x_of(k / 4.0));
    const float tw = ImGui::CalcTextSize(tokens.c_str()).x;
    dl->AddText(ImVec2(k == 4 ? x - tw : x - tw * 0.5f, p1.y + font * 0.2f), text, tokens.c_str());
  }
  constexpr int kSamples = 160;
  std::vector<std::vector<ImVec2>> lines(rows.size());
  for (int s = 0; s <= kSamples; ++s) {
    const double u = static_cast<double>(s) / kSamples;
    const std::vector<double> b = bytes_at(t, bytes_per_elem, x_of(u));
    for (std::size_t i = 0; i < lines.size() && i < b.size(); ++i)
      lines[i].emplace_back(p0.x + w * static_cast<float>(u),
                            p1.y - h * static_cast<float>(b[i] / y_max));
  }
  for (std::size_t i = 0; i < lines.size(); ++i)
    dl->AddPolyline(lines[i].data(), static_cast<int>(lines[i].size()), mechanism_colour(i), 0,
                    2.0f);
  const float mark = p0.x + w * static_cast<float>(u_of(t.kv_context));
  dl->AddLine(ImVec2(mark, p0.y), ImVec2(mark, p1.y), IM_COL32(255, 255, 255, 140), 1.0f);
  ImGui::InvisibleButton("kv_plot", ImVec2(left + w, h + font * 1.5f));
  if (ImGui::IsItemHovered()) {
    const double u = std::clamp((ImGui::GetIO().MousePos.x - p0.x) / w, 0.0f, 1.0f);
    const double tokens = std::max(1.0, std::round(x_of(u)));
    const std::vector<double> b = bytes_at(t, bytes_per_elem, tokens);
    ImGui::BeginTooltip();
    ImGui::Text("%.0f tokens", tokens);
    for (std::size_t i = 0; i < b.size() && i < rows.size(); ++i)
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(mechanism_colour(i)), "%s %s",
                         rows[i].mechanism.c_str(), readable_bytes(b[i]).c_str());
    ImGui::EndTooltip();
    if (ImGui::IsMouseClicked(0)) t.kv_context = static_cast<int>(tokens);
  }
}

}  // namespace

void draw_kv_memory(AppState& state) {
  TeachState& t = state.teach;
  if (!begin_learn_window(t, "KV-cache memory", &t.show_kv_memory, ImVec2(760, 760))) {
    ImGui::End();
    return;
  }
  if (t.kv_shape.id.empty()) choose_preset(t, *core::find_kv_model_preset("book-8b"));
  text_wrapped(state,
               "While a model generates, every layer keeps the keys and values of all the "
               "tokens so far (the KV cache), so that the next token does not compute them "
               "again. Per layer that is tokens × head_dim × K/V heads × 2 (K and V) × the "
               "bytes of one number. Grouped-query attention caches fewer K/V heads, latent "
               "attention one compressed vector per token, and a sliding-window layer only "
               "its last W tokens. The numbers are those of the book's memory_estimator "
               "scripts (batch 1).");
  choices(t);
  const std::string refusal = core::validate_kv_shape(t.kv_shape);
  if (!refusal.empty()) {
    ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), "%s", refusal.c_str());
    ImGui::End();
    return;
  }
  const int bytes_per_elem = *core::kv_dtype_bytes(t.kv_shape.dtype);
  const std::vector<core::KvMemoryRow> rows =
      core::kv_memory_table(t.kv_shape, static_cast<std::uint64_t>(t.kv_context), bytes_per_elem);
  ImGui::Text("%s, %d tokens, %s: head_dim %d", t.kv_shape.name.c_str(), t.kv_context,
              t.kv_shape.dtype.c_str(), core::kv_head_dim(t.kv_shape));
  table(state, rows);
  text_wrapped(state, "Hover the plot to read any context length; click to take it.");
  plot(state, rows, bytes_per_elem);
  ImGui::End();
}

}  // namespace attnscope::gui
