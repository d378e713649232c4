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
      if (ImGui::SmallButton("Set up")) set_up_run(state, b.run);
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
  ImGui::End();
}

}  // namespace attnscope::gui
