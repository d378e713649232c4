// model_panel.cpp: the left column while a trained model is the source.
//
// Sections
//   1. the Source switch (shown for every source)
//   2. checkpoint: path, config, recent and found models, loading and Cancel
//   3. text and tokens
//   4. layer, head, view
//   5. next token
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "attnscope/model/family_config.hpp"
#include "attnscope/text/tokenizer.hpp"
#include "export/files_ui.hpp"
#include "imgui.h"
#include "imgui_stdlib.h"  // needs imgui.h first
#include "panels/panels.hpp"
#include "platform/fonts.hpp"
#include "platform/native_dialog.hpp"
#include "widgets/text_editor.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

std::string checkpoint_dialog_start(const std::string& near) {
  std::error_code ec;
  std::filesystem::path start(near);
  if (!start.empty() && !std::filesystem::is_directory(start, ec)) start = start.parent_path();
  if (!start.empty() && std::filesystem::is_directory(start, ec)) return start.string();
  for (const std::filesystem::path& f : core::model_search_folders())
    if (std::filesystem::is_directory(f, ec)) return f.string();
  return "";
}

DialogRequest checkpoint_request(const std::string& start) {
  return DialogRequest{
      DialogRequest::Mode::OpenFile,
      "Open a trained model",
      start,
      {{"Checkpoints", {"*.safetensors", "*.pth", "*.bin", "config.json", "*.index.json"}}}};
}

std::shared_ptr<NativeDialog> open_checkpoint_dialog(AppState& state, DialogTool tool,
                                                     const std::string& near) {
  return std::make_shared<NativeDialog>(
      dialog_command(tool, checkpoint_request(checkpoint_dialog_start(near))), state.files.wake_ui);
}

void start_model_browse(AppState& state, DialogTool tool) {
  state.model.browse = open_checkpoint_dialog(state, tool, state.model.path);
}

bool poll_model_browse(AppState& state) {
  ModelState& m = state.model;
  if (!m.browse) return true;
  const std::optional<NativeDialog::Result> result = m.browse->result();
  if (!result) return false;
  m.browse.reset();
  if (result->status == NativeDialog::Result::Status::Failed) m.load_error = result->error;
  if (result->status != NativeDialog::Result::Status::Chosen) return true;
  const std::filesystem::path chosen(result->path);
  m.path = chosen.filename() == "config.json" ? chosen.parent_path().string() : result->path;
  state.open_model(m.path);
  return true;
}

namespace {

// A heading between sections (ImGui 1.86 has no SeparatorText).
void section(const char* title) {
  ImGui::Spacing();
  ImGui::TextDisabled("%s", title);
  ImGui::Separator();
}

void help(const char* text) {
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", text);
}

// ---------------------------------------------------------------------------
// 2. Checkpoint

// Browse...: the desktop's file dialog (zenity, kdialog), else the app's own.
void draw_browse(AppState& state) {
  if (state.model.browse) {  // draw_checkpoint polls it
    ImGui::SameLine();
    ImGui::TextDisabled("choosing...");
    return;
  }
  const DialogTool tool = state.files.dialog_tool();
  ImGui::SameLine();
  if (ImGui::Button("Browse...")) {
    if (tool == DialogTool::Builtin)
      open_file_dialog(state, FileDialog::OpenModel);
    else
      start_model_browse(state, tool);
  }
  help(tool == DialogTool::Builtin
           ? "Choose a model's folder, .safetensors, .pth or config.json (also File > Open model)"
           : "Choose a .safetensors, .pth or a folder's config.json in the desktop's file dialog");
}

void draw_model_list(AppState& state) {
  ModelState& m = state.model;
  if (!m.recent.empty() && ImGui::BeginCombo("##recent", "Recent models")) {
    for (const std::string& p : m.recent)
      if (ImGui::Selectable(p.c_str())) {
        state.open_model(p);
        break;  // open_model may reorder `recent` once the load is in
      }
    ImGui::EndCombo();
  }
  if (ImGui::Button("Find models on this computer")) {
    m.found = core::find_models();
    m.found_scanned = true;
  }
  help("Lists the models in the Hugging Face cache and in attnscope's models folder");
  draw_browse(state);
  if (ImGui::Button("Get a model from the Hub...")) open_get_model_window(state);
  help("Download GPT-2 (or any GPT-2-style model) from the Hugging Face Hub, with progress");
  if (!m.found_scanned) return;
  if (m.found.empty()) {
    std::string where;
    for (const auto& f : core::model_search_folders()) where += "\n  " + f.string();
    ImGui::TextDisabled("No model in:%s", where.c_str());
    return;
  }
  for (std::size_t k = 0; k < m.found.size(); ++k) {
    const core::FoundModel& f = m.found[k];
    ImGui::PushID(static_cast<int>(k));
    if (ImGui::Selectable((f.name + "  (" + f.where + ")").c_str(),
                          f.path.string() == m.model_path))
      state.open_model(f.path.string());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", f.path.string().c_str());
    ImGui::PopID();
  }
}

// A family model's facts, one per line: what its config says about its
// attention (the K/V heads, RoPE, q/k norm, the window) and its size.
std::vector<std::string> family_facts(const FamilyModelOpen& f) {
  const core::FamilyConfig& c = f.model->config();
  char line[256];
  std::vector<std::string> out;
  out.push_back(
      std::string(core::model_family_name(c.family)) + ": " + std::to_string(c.num_hidden_layers) +
      " layers, d = " + std::to_string(c.hidden_size) + ", vocabulary " +
      std::to_string(c.vocab_size) + ", up to " + std::to_string(f.max_tokens()) + " tokens here");
  std::snprintf(line, sizeof line, "%d query heads, %d K/V head%s (%s), head_dim %d",
                c.num_attention_heads, c.num_key_value_heads, c.num_key_value_heads > 1 ? "s" : "",
                c.num_key_value_heads == c.num_attention_heads ? "multi-head"
                : c.num_key_value_heads == 1                   ? "multi-query"
                                                               : "grouped-query",
                c.head_dim);
  out.push_back(line);
  std::snprintf(line, sizeof line, "RoPE theta %.0f%s", c.rope_theta,
                c.rope_scaling.enabled ? ", llama3 scaling" : "");
  std::string rope = line;
  if (c.rope_scaling.enabled) {
    std::snprintf(line, sizeof line, " x%g (from %d positions)", c.rope_scaling.factor,
                  c.rope_scaling.original_max_position_embeddings);
    rope += line;
  }
  out.push_back(rope);
  const auto sliding = static_cast<int>(std::count(c.sliding.begin(), c.sliding.end(), true));
  if (sliding > 0) {
    std::snprintf(line, sizeof line, "sliding window %d on %d of %d layers%s", c.sliding_window,
                  sliding, c.num_hidden_layers, c.gemma ? "" : "");
    std::string window = line;
    if (c.gemma) {
      std::snprintf(line, sizeof line, " (their RoPE theta %.0f)", c.rope_local_base_freq);
      window += line;
    }
    out.push_back(window);
  }
  std::string extras;
  if (c.qk_norm) extras += "q/k RMSNorm per head, ";
  if (c.q_bias) extras += "q/k/v bias, ";
  extras += c.activation == core::FamilyActivation::Silu ? "SwiGLU MLP" : "GeGLU MLP";
  extras += c.tie_word_embeddings ? ", tied embeddings" : ", its own LM head";
  if (c.final_logit_softcapping > 0) extras += ", logits softcapped";
  out.push_back(extras);
  return out;
}

void draw_checkpoint(AppState& state) {
  ModelState& m = state.model;
  poll_model_browse(state);  // also while the section is folded
  if (m.family) {
    ImGui::Text("%s", m.family->name.c_str());
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    for (const std::string& fact : family_facts(*m.family)) ImGui::TextWrapped("%s", fact.c_str());
    ImGui::PopStyleColor();
  }
  if (m.model) {
    const core::Gpt2Config& c = m.model->config();
    ImGui::Text("%s", m.model->name().c_str());
    char size[128];
    std::snprintf(size, sizeof size, "%d layers × %d heads, d = %d, up to %d tokens", c.n_layer,
                  c.n_head, c.n_embd, c.n_positions);
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("%s", size);  // a narrow panel wraps it, never cuts it
    ImGui::PopStyleColor();
  }
  // A load that needs a config file opens the section and marks the field.
  const bool wants_config = m.load_error.find(kConfigFieldWords) != std::string::npos;
  if (wants_config) ImGui::SetNextItemOpen(true);
  if (!ImGui::CollapsingHeader("Checkpoint", m.is_open() ? 0 : ImGuiTreeNodeFlags_DefaultOpen)) {
    error_text(state, m.load_error);
    return;
  }
  const float open_w = ImGui::CalcTextSize("Open").x + ImGui::GetStyle().FramePadding.x * 2;
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - open_w -
                          ImGui::GetStyle().ItemSpacing.x);
  const bool entered = ImGui::InputTextWithHint("##path", "folder, .safetensors or .pth", &m.path,
                                                ImGuiInputTextFlags_EnterReturnsTrue);
  help("A Hugging Face GPT-2 folder, a .safetensors file, or the book's model.pth");
  ImGui::SameLine();
  ImGui::BeginDisabled(m.path.empty());
  if ((ImGui::Button("Open") || entered) && !m.path.empty()) state.open_model(m.path);
  ImGui::EndDisabled();
  ImGui::SetNextItemWidth(-1);
  if (wants_config) {
    ImGui::PushStyleVar(ImGuiStyleVar_FrameBorderSize, 2.0f);
    ImGui::PushStyleColor(ImGuiCol_Border, kErrorColour);
  }
  ImGui::InputTextWithHint(
      "##config", wants_config ? "config file: needed for this model" : "config file (optional)",
      &m.config);
  if (wants_config) {
    ImGui::PopStyleColor();
    ImGui::PopStyleVar();
    error_text(state, m.load_error);  // right under the field it is about
  }
  help("The book's GPT_CONFIG as JSON for a .pth (else config.json beside it is read)");
  if (m.loader->loading()) {
    ImGui::Text("Loading %s (%.1f s)", m.loader->path().c_str(), m.loader->seconds());
    const int done = m.loader->blocks_done(), all = m.loader->blocks();
    char blocks[64];
    if (all > 0)
      std::snprintf(blocks, sizeof blocks, "%d of %d blocks", done, all);
    else
      std::snprintf(blocks, sizeof blocks, "reading the config");
    ImGui::ProgressBar(all > 0 ? static_cast<float>(done) / static_cast<float>(all) : 0.0f,
                       ImVec2(-ImGui::GetFontSize() * 5, 0), blocks);
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) m.loader->cancel();
    help("Stop waiting for this model; the current one stays");
  }
  if (!wants_config) error_text(state, m.load_error);
  draw_model_list(state);
}

// ---------------------------------------------------------------------------
// 3. Text

// Keep the last tokens: offered when the text is refused for its length,
// and a note (with the way back) while it is on.
void draw_keep_last(AppState& state) {
  ModelState& m = state.model;
  const std::string limit = std::to_string(m.max_tokens());
  if (m.too_long && !m.keep_last) {
    if (ImGui::Button(("Keep the last " + limit + " tokens").c_str())) {
      m.keep_last = true;
      state.model_text_changed();
    }
    help(
        "Read only the end of the text, as the book's generate crops its input to "
        "context_size; the first tokens drop out of every view");
    return;
  }
  if (!m.keep_last) return;
  if (m.dropped > 0) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_PlotHistogram));
    ImGui::TextWrapped(
        "Keeping the last %s tokens: the first %d of the text's %d are not read (token 0 "
        "below is token %d of the text).",
        limit.c_str(), m.dropped, m.dropped + m.max_tokens(), m.dropped);
    ImGui::PopStyleColor();
  } else {
    ImGui::TextDisabled("Keep the last %s tokens is on: a longer text drops its first tokens.",
                        limit.c_str());
  }
  if (ImGui::SmallButton("Read the whole text")) {
    m.keep_last = false;
    state.model_text_changed();
  }
  help("Turn keeping the last tokens off: a text longer than the model's context is refused");
}

void draw_text(AppState& state) {
  ModelState& m = state.model;
  section("Text");
  if (text_editor("##model_text", m.typed.text, ImVec2(-1, text_editor_height(4)),
                  state.ui.text_edit))
    state.model_text_changed();
  help("Type: the model's tokenizer splits the text as you go and the views follow");
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("%zu / %d tokens; click one to look from it", m.typed.tokens.size(),
                     m.max_tokens());
  ImGui::PopStyleColor();
  error_text(state, m.typed.error);
  draw_keep_last(state);
  if (!m.typed.error.empty() && state.showing_model())
    ImGui::TextDisabled("The views still show the last text that ran (%d tokens).",
                        state.trace->num_tokens());
  if (m.typed.tokens.empty()) return;
  const int shown = m.query < 0 ? static_cast<int>(m.typed.tokens.size()) - 1 : m.query;
  // As tall as the chips need (their widths summed over the row's width),
  // within a few rows: a long text scrolls inside.
  const ImGuiStyle& style = ImGui::GetStyle();
  float width = 0;
  for (const core::Token& t : m.typed.tokens)
    width += ImGui::CalcTextSize(drawable_text(core::printable_token(t.text)).c_str()).x +
             2 * style.FramePadding.x + 2;
  const float rows = std::ceil(width / std::max(ImGui::GetContentRegionAvail().x * 0.85f, 1.0f));
  const float row_h = ImGui::GetFrameHeight() + style.ItemSpacing.y;
  ImGui::BeginChild("chips", ImVec2(0, std::min(rows, 7.0f) * row_h + style.ItemSpacing.y), false);
  const float max_x = ImGui::GetContentRegionAvail().x + ImGui::GetCursorPosX();
  for (std::size_t i = 0; i < m.typed.tokens.size(); ++i)
    if (draw_token_chip(m.typed.tokens[i], i, max_x, static_cast<int>(i) == shown)) {
      m.query = static_cast<int>(i);
      m.next_at = static_cast<int>(i);
      state.mark_dirty();  // the next tokens after it
    }
  ImGui::EndChild();
}

// ---------------------------------------------------------------------------
// 4. Layer, head, view

void draw_selection(AppState& state) {
  ModelState& m = state.model;
  if (!m.is_open()) return;
  section("Layer and head");
  int layer = m.layer;
  if (ImGui::SliderInt("layer", &layer, 0, m.num_layers() - 1)) state.select_layer(layer);
  help("PgUp / PgDn");
  int h = state.head;
  if (ImGui::SliderInt("head", &h, 0, m.num_heads() - 1)) state.select_head(h);
  help("[ and ]");
  int view = static_cast<int>(m.view);
  // Side by side while they fit, else the next one starts a line.
  auto same_line_if_fits = [](const char* next) {
    const ImGuiStyle& st = ImGui::GetStyle();
    const float w = ImGui::GetFrameHeight() + st.ItemInnerSpacing.x + ImGui::CalcTextSize(next).x;
    const float right = ImGui::GetItemRectMax().x + st.ItemSpacing.x + w;
    if (right <= ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x) ImGui::SameLine();
  };
  ImGui::RadioButton("All heads", &view, static_cast<int>(ModelView::Model));
  help("Every layer × head as a small map; click one to open it");
  same_line_if_fits("One head");
  ImGui::RadioButton("One head", &view, static_cast<int>(ModelView::Head));
  help("The stepper: every stage of this head, from the block's input to its output");
  same_line_if_fits("Head view");
  ImGui::RadioButton("Head view", &view, static_cast<int>(ModelView::Tokens));
  help("Lines from one token to the tokens it attends to, for the heads of this layer");
  m.view = static_cast<ModelView>(view);
}

// ---------------------------------------------------------------------------
// 5. Next token

void draw_next_tokens(AppState& state) {
  ModelState& m = state.model;
  if (!m.overview || !state.showing_model()) return;
  const ModelOverview& o = *m.overview;
  section("Next token");
  const int last = o.tokens - 1;
  // The run's token: the text box may hold a text refused since.
  const std::vector<std::string>& ran = state.trace->tokens;
  const std::string after = o.next_at >= 0 && o.next_at < static_cast<int>(ran.size())
                                ? ran[static_cast<std::size_t>(o.next_at)]
                                : "";
  ImGui::TextDisabled("after token %d \"%s\"%s", o.next_at, token_label(after).c_str(),
                      o.next_at == last ? " (the last)" : "");
  const float bar_w = ImGui::GetContentRegionAvail().x * 0.45f;
  // As many decimals as tell the rows apart (an untrained model's are all
  // near 1 / vocabulary); tokens on one line each, control characters escaped.
  std::vector<double> probabilities;
  for (const core::NextToken& t : o.next) probabilities.push_back(t.probability);
  const std::vector<std::string> pct = percent_texts(probabilities);
  for (std::size_t k = 0; k < o.next.size(); ++k) {
    const core::NextToken& t = o.next[k];
    ImGui::ProgressBar(static_cast<float>(t.probability), ImVec2(bar_w, 0), pct[k].c_str());
    ImGui::SameLine();
    ImGui::Text("\"%s\"", token_label(t.token).c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("token id %d", t.id);
  }
  if (o.next_at != last && ImGui::Button("Show the last position")) {
    m.next_at = -1;
    m.query = -1;
    state.mark_dirty();
  }
  if (!o.next_last.empty()) {
    const std::string label = "Append \"" + token_label(o.next_last[0].token) + "\"";
    // Only onto the text that ran: a refused text is not what it follows.
    const bool refused = !m.typed.error.empty();
    ImGui::BeginDisabled(state.computing() || refused);
    if (ImGui::Button(label.c_str())) state.append_top_token();
    ImGui::EndDisabled();
    if (refused && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
      ImGui::SetTooltip("The text box holds a text that did not run; fix it first");
    help(
        "Add the most likely next token to the text (greedy decoding, as the book's "
        "generate_text_simple) and watch the attention change. A token that stops inside a "
        "character adds U+FFFD, as tiktoken's decode shows it: the text holds characters, "
        "not bytes");
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// 1. Source

void draw_source_switch(AppState& state) {
  static const char* const kNames[] = {"Chapter 3 classes", "Chapter 3 classes on typed text",
                                       "Trained model"};
  int at = static_cast<int>(state.source);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Source");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  if (ImGui::Combo("##source", &at, kNames, 3)) {
    state.set_source(static_cast<Source>(at));
  }
  help(
      "What the matrices come from: the book's attention classes on small inputs, the same "
      "on a sentence (GPT-2 tokens, seeded embeddings, no download), or a trained GPT-2 / "
      "chapter-5 model");
  ImGui::Separator();
}

void draw_model_panel(AppState& state) {
  draw_checkpoint(state);
  draw_text(state);
  draw_text_loss(state);
  draw_selection(state);
  draw_compare_button(state);
  draw_next_tokens(state);
  draw_sampling(state);
}

}  // namespace attnscope::gui
