// get_model_window.cpp: the Get a model window. A short list of models with
// their size and licence, a field for any Hub repo, and a pull's progress
// (per file and in total, with speed and time left), Cancel, and Open when
// the model is in the cache. The pull runs on its own thread
// (state/model_download.hpp); this draws a copy of its progress.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include "attnscope/hub/cache.hpp"
#include "imgui.h"
#include "imgui_stdlib.h"
#include "panels/panels.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

const ImVec4 kDoneColour(0.55f, 0.85f, 0.55f, 1.0f);

void start_pull(AppState& state, const core::hub::RepoRef& ref) {
  GetModel& g = state.model.get;
  g.field_error.clear();
  g.download->start(ref);
}

std::string ref_text(const core::hub::RepoRef& ref) {
  return ref.revision == "main" ? ref.repo : ref.repo + "@" + ref.revision;
}

// Opens a pulled model and closes the window: the learner watches it load.
void open_pulled(AppState& state, const std::string& snapshot) {
  state.open_model(snapshot);
  state.model.get.open = false;
}

void draw_catalog(AppState& state) {
  GetModel& g = state.model.get;
  const ImGuiTableFlags flags =
      ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp;
  if (!ImGui::BeginTable("catalog", 4, flags)) return;
  ImGui::TableSetupColumn("Model", ImGuiTableColumnFlags_WidthStretch, 3.0f);
  ImGui::TableSetupColumn("Download", ImGuiTableColumnFlags_WidthStretch, 1.0f);
  ImGui::TableSetupColumn("Licence", ImGuiTableColumnFlags_WidthStretch, 1.0f);
  ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthStretch, 1.0f);
  ImGui::TableHeadersRow();
  const std::vector<CatalogModel>& catalog = model_catalog();
  for (std::size_t k = 0; k < catalog.size(); ++k) {
    const CatalogModel& c = catalog[k];
    const core::hub::RepoRef ref{std::string(c.repo), "main"};
    ImGui::PushID(c.repo.data(), c.repo.data() + c.repo.size());
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(c.title.data(), c.title.data() + c.title.size());
    ImGui::TextDisabled("%.*s", static_cast<int>(c.repo.size()), c.repo.data());
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%.*s", static_cast<int>(c.note.size()), c.note.data());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(c.size.data(), c.size.data() + c.size.size());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(c.licence.data(), c.licence.data() + c.licence.size());
    ImGui::TableNextColumn();
    const bool this_one = g.download->running() && g.download->ref().repo == c.repo;
    if (const auto& cached = g.in_cache[k]; cached && !this_one) {
      if (ImGui::Button("Open")) open_pulled(state, cached->snapshot);
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("In the cache (commit %.7s): %s", cached->commit.c_str(),
                          cached->snapshot.c_str());
    } else {
      ImGui::BeginDisabled(g.download->running());
      if (ImGui::Button("Get")) start_pull(state, ref);
      ImGui::EndDisabled();
    }
    ImGui::PopID();
  }
  ImGui::EndTable();
}

// Any repo by name: "org/name" or "org/name@revision".
void draw_repo_field(AppState& state) {
  GetModel& g = state.model.get;
  ImGui::TextUnformatted("Any model on the Hub:");
  const float get_w = ImGui::CalcTextSize("Get").x + ImGui::GetStyle().FramePadding.x * 2;
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - get_w -
                          ImGui::GetStyle().ItemSpacing.x);
  if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere(0);
  const bool entered = ImGui::InputTextWithHint("##repo", "org/name or org/name@revision", &g.field,
                                                ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  ImGui::BeginDisabled(g.download->running() || g.field.empty());
  const bool clicked = ImGui::Button("Get##field");
  ImGui::EndDisabled();
  if ((clicked || entered) && !g.field.empty() && !g.download->running()) {
    try {
      start_pull(state, core::hub::parse_repo_ref(g.field));
    } catch (const std::exception& e) {
      g.field_error = e.what();
    }
  }
  error_text(state, g.field_error);
}

// One file's line: its name, a bar of its bytes, and what is happening to it.
void draw_file_row(const core::hub::FileProgress& f) {
  using core::hub::FileState;
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(f.name.c_str());
  ImGui::TableNextColumn();
  const double total = f.total ? static_cast<double>(*f.total) : 0.0;
  const float fraction =
      f.state == FileState::Cached || f.state == FileState::Done
          ? 1.0f
          : (total > 0 ? static_cast<float>(static_cast<double>(f.done) / total) : 0.0f);
  const std::string bytes =
      total > 0 ? byte_size_text(static_cast<double>(f.done)) + " of " + byte_size_text(total)
                : byte_size_text(static_cast<double>(f.done));
  ImGui::ProgressBar(fraction, ImVec2(-1, 0), bytes.c_str());
  ImGui::TableNextColumn();
  const char* what = "waiting";
  switch (f.state) {
    case FileState::Queued:
      what = "waiting";
      break;
    case FileState::Waiting:
      what = "another pull has it";
      break;
    case FileState::Cached:
      what = "in the cache";
      break;
    case FileState::Downloading:
      what = "downloading";
      break;
    case FileState::Checking:
      what = "checking";
      break;
    case FileState::Done:
      what = "checked";
      break;
    case FileState::Failed:
      what = "failed";
      break;
  }
  ImGui::TextUnformatted(what);
}

void draw_progress(AppState& state) {
  GetModel& g = state.model.get;
  const ModelDownload& d = *g.download;
  const core::hub::PullProgress& p = d.progress();
  ImGui::Text("%s %s: %s", d.running() ? "Getting" : "Got", ref_text(d.ref()).c_str(),
              p.phase.empty() ? "starting" : p.phase.c_str());
  if (!p.files.empty() &&
      ImGui::BeginTable("files", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp)) {
    ImGui::TableSetupColumn("file", ImGuiTableColumnFlags_WidthStretch, 2.0f);
    ImGui::TableSetupColumn("bytes", ImGuiTableColumnFlags_WidthStretch, 3.0f);
    ImGui::TableSetupColumn("state", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    for (const core::hub::FileProgress& f : p.files) draw_file_row(f);
    ImGui::EndTable();
  }
  const double done = static_cast<double>(p.done), total = static_cast<double>(p.total);
  std::string line =
      total > 0 ? byte_size_text(done) + " of " + byte_size_text(total) : byte_size_text(done);
  if (d.running() && p.bytes_per_second > 0)
    line += " · " + byte_size_text(p.bytes_per_second) + "/s";
  if (const std::string left = d.running() ? time_left_text(p.seconds_left) : ""; !left.empty())
    line += " · " + left;
  const float bar_w = d.running() ? -ImGui::GetFontSize() * 6 : -1;
  ImGui::ProgressBar(total > 0 ? static_cast<float>(std::min(done / total, 1.0)) : 0.0f,
                     ImVec2(bar_w, 0), line.c_str());
  if (!d.running()) return;
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) g.download->cancel();
}

void draw_outcome(AppState& state) {
  GetModel& g = state.model.get;
  const ModelDownload& d = *g.download;
  const core::hub::PullResult& r = d.result();
  switch (d.state()) {
    case ModelDownload::State::Done: {
      char what[256];
      if (r.files_fetched == 0)
        std::snprintf(what, sizeof what, "%s was already complete in the cache (commit %.7s).",
                      ref_text(d.ref()).c_str(), r.commit.c_str());
      else
        std::snprintf(
            what, sizeof what, "%s is in the cache (commit %.7s): %d file%s, %s in %.1f s.",
            ref_text(d.ref()).c_str(), r.commit.c_str(), r.files_fetched,
            r.files_fetched == 1 ? "" : "s",
            byte_size_text(static_cast<double>(r.bytes_transferred)).c_str(), d.seconds());
      ImGui::PushStyleColor(ImGuiCol_Text, kDoneColour);
      text_wrapped(state, what);
      ImGui::PopStyleColor();
      if (ImGui::Button("Open")) open_pulled(state, r.snapshot.string());
      ImGui::SameLine();
      ImGui::TextDisabled("%s", r.snapshot.string().c_str());
      break;
    }
    case ModelDownload::State::Failed:
      error_text(state, r.error);
      if (ImGui::Button("Try again")) start_pull(state, d.ref());
      break;
    case ModelDownload::State::Cancelled:
      text_wrapped(state,
                   "Stopped. What arrived stays in the cache as a partial file; Get carries on "
                   "from there.");
      if (ImGui::Button("Resume")) start_pull(state, d.ref());
      break;
    default:
      break;
  }
}

}  // namespace

void open_get_model_window(AppState& state) { state.model.get.open = true; }

void draw_get_model_window(AppState& state) {
  GetModel& g = state.model.get;
  const bool was_running = g.download->running();
  g.download->poll();  // also while the window is closed: a pull runs on
  if (!g.open) return;
  const ImVec2 screen = ImGui::GetIO().DisplaySize;
  ImGui::SetNextWindowSize(ImVec2(std::min(screen.x * 0.9f, ImGui::GetFontSize() * 44),
                                  std::min(screen.y * 0.9f, ImGui::GetFontSize() * 46)),
                           ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImVec2(screen.x * 0.5f, screen.y * 0.5f), ImGuiCond_FirstUseEver,
                          ImVec2(0.5f, 0.5f));
  if (!ImGui::Begin("Get a model", &g.open)) {
    ImGui::End();
    return;
  }
  text_wrapped(state,
               "Downloads a trained model from the Hugging Face Hub into the Hugging Face cache, "
               "where transformers finds it too (and Find models lists it): " +
                   core::hub::cache_root().string());
  // Which listed models are in the cache: read from disk when the window
  // opens and when a pull ends, not every frame.
  if (ImGui::IsWindowAppearing() || (was_running && !g.download->running()) ||
      g.in_cache.size() != model_catalog().size()) {
    g.in_cache.clear();
    for (const CatalogModel& c : model_catalog())
      g.in_cache.push_back(cached_model({std::string(c.repo), "main"}));
  }
  if (ImGui::IsWindowAppearing()) {  // the environment as a pull reads it
    const auto env = core::hub::pull_options(core::hub::RepoRef{"org/name", "main"});
    g.endpoint = env.endpoint;
    g.offline = env.offline;
  }
  if (g.offline)
    error_text(state,
               "HF_HUB_OFFLINE is set: nothing is downloaded; only models already in the cache "
               "open. Unset it to download.");
  else if (g.endpoint != "https://huggingface.co")
    ImGui::TextDisabled("From %s (HF_ENDPOINT)", g.endpoint.c_str());
  ImGui::Spacing();
  draw_catalog(state);
  ImGui::Spacing();
  draw_repo_field(state);
  ImGui::TextDisabled(
      "attnscope opens GPT-2 and Llama, Mistral, Qwen2, Qwen3 and Gemma 3 text models "
      "(config.json model_type gpt2, llama, mistral, qwen2, qwen3, gemma3_text).");
  if (g.download->state() != ModelDownload::State::Idle) {
    ImGui::Separator();
    if (g.download->running() || !g.download->progress().files.empty()) draw_progress(state);
    draw_outcome(state);
  }
  ImGui::End();
}

}  // namespace attnscope::gui
