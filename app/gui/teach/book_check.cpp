// book_check.cpp: every tensor chapter 3 prints, checked against the app's
// current run: a green check when it matches to 4 decimals, else the largest
// difference; runs that are not the book's say how to get there.
#include "teach/teach.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

std::string run_text(const core::BookRun& r) {
  std::string s(core::variant_book_name(r.variant));
  if (r.variant == core::Variant::Simple) return s;
  s += ", d_out " + std::to_string(r.d_out) + ", seed " + std::to_string(r.seed);
  if (core::has_heads(r.variant)) s += ", " + std::to_string(r.num_heads) + " heads";
  return s;
}

void set_up_run(AppState& state, const core::BookRun& r) {
  state.load_preset("book");
  core::Config c;
  c.variant = r.variant;
  c.d_out = r.d_out;
  c.num_heads = r.num_heads;
  c.seed = r.seed;
  state.config = c;
  state.explicit_parameters.reset();
  state.mark_dirty();
}

// What Set up would replace that the learner made and cannot redraw: inputs
// edited, imported or from a file, and weights imported or edited ("" when
// none).
std::string work_set_up_replaces(const AppState& state) {
  const bool inputs = state.origin == InputOrigin::Edited || state.origin == InputOrigin::Imported;
  const bool weights = state.explicit_parameters != nullptr;
  if (inputs && weights) return "your edited inputs and your weights";
  if (inputs) return "your edited inputs";
  if (weights) return "your imported or edited weights";
  return "";
}

// Set up, asking first when it would replace the learner's own inputs or
// weights: Replace goes on, Cancel keeps everything.
void ask_then_set_up(AppState& state) {
  std::optional<core::BookRun>& asked = state.teach.book_set_up_asked;
  if (!asked) return;
  const std::string what = work_set_up_replaces(state);
  if (what.empty()) {
    set_up_run(state, *asked);
    asked.reset();
    return;
  }
  constexpr const char* kTitle = "Set up the book's run?##book_set_up";
  if (!ImGui::IsPopupOpen(kTitle)) ImGui::OpenPopup(kTitle);
  if (!ImGui::BeginPopupModal(kTitle, nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  ImGui::PushTextWrapPos(ImGui::GetFontSize() * 28);
  ImGui::TextWrapped("Set up runs %s on the book's six tokens with seeded weights: it replaces %s.",
                     run_text(*asked).c_str(), what.c_str());
  ImGui::TextDisabled("File > Save session keeps them first.");
  ImGui::PopTextWrapPos();
  if (ImGui::Button("Replace")) {
    set_up_run(state, *asked);
    asked.reset();
    ImGui::CloseCurrentPopup();
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGuiKey_Escape)) {
    asked.reset();
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndPopup();
}

}  // namespace

void draw_book_check(AppState& state) {
  if (!begin_learn_window(state.teach, "Book check", &state.teach.show_book, ImVec2(560, 640))) {
    ImGui::End();
    return;
  }
  text_wrapped(state,
               "Every tensor the chapter prints, on the book's six tokens. A badge is green when "
               "the app's numbers equal the printed ones to 4 decimals; amber shows the largest "
               "difference, e.g. after an edit. Other runs name the setup that prints them.");
  ImGui::Separator();
  const core::Trace* t = state.trace.get();
  int id = 0;
  for (const core::BookMatrix& b : core::book_matrices()) {
    ImGui::PushID(id++);
    const bool standalone = b.source == core::BookSource::DropoutOnes;
    if (standalone || (t && core::book_applies(b, *t))) {
      book_badge(b, core::check_book(b, t));
      if (standalone) {  // on its own line: beside the badge it can pass the window's edge
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        text_wrapped(state, "(seed 123, dropout 0.5 on ones(6, 6))");
        ImGui::PopStyleColor();
      }
    } else {
      // The button first and the line wrapped after it: a run's description
      // can be wider than the window, and a button after it would be cut off.
      if (ImGui::SmallButton("Set up")) state.teach.book_set_up_asked = b.run;
      const float indent = ImGui::GetItemRectSize().x + ImGui::GetStyle().ItemSpacing.x;
      ImGui::SameLine();
      ImGui::Indent(indent);  // continuation lines start under the first word
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
      text_wrapped(
          state, std::string(b.name) + " §" + std::string(b.section) + ": run " + run_text(b.run));
      ImGui::PopStyleColor();
      ImGui::Unindent(indent);
    }
    ImGui::PopID();
  }
  ask_then_set_up(state);
  ImGui::End();
}

}  // namespace attnscope::gui
