// teach.hpp: the Learn features of the app: a guided walkthrough of
// chapter 3, book-check badges, and one window per mechanism. Each window is
// one file with `void draw_<name>(AppState&)`; all numbers come from
// core/teach.hpp, these files only lay out and colour.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "state/app_state.hpp"

namespace attnscope::gui {

// The "Learn" menu (called from the menu bar).
void draw_learn_menu(AppState& state);
// Every open Learn window, and the walkthrough (called once per frame, last).
void draw_learn_windows(AppState& state);
// Book badges and "Learn more" links for the stepper's current step.
void draw_stage_learn_links(AppState& state);

// One walkthrough step: how it sets up the app, and what it says.
struct WalkStep {
  const char* section;  // the book's section, "3.3.1"
  const char* title;
  core::Variant variant;
  int d_out, num_heads;
  std::uint64_t seed;
  double dropout;
  Step step;
  const char* pin_stage;  // cell to highlight ("" none)
  int pin_row, pin_col;
  const char* text;          // what is happening and why
  const char* try_this;      // what to do next
  bool TeachState::*window;  // the Learn window it opens (TeachState::show_*), or nullptr
  // The classes after chapter 3 (the second tour):
  const char* preset = "book";  // the inputs it loads
  int kv_groups = 1;            // GroupedQuery's num_kv_groups
  int window_size = 0;          // SlidingWindow's window (0: unset)
  int latent_dim = 0;           // Latent's latent_dim (0: the book's default)
  bool rope = false;            // RoPE on the queries and keys
};
// The guided tours: chapter 3 in the book's order, and the attention that
// came after it (the bonus material's KV cache, GQA, MLA, SWA and RoPE).
enum class Tour { Chapter3, AfterChapter3 };
const std::vector<WalkStep>& walkthrough_steps(Tour tour = Tour::Chapter3);
// The steps of the tour `state` is on (TeachState::walk_tour).
const std::vector<WalkStep>& current_walk(const AppState& state);
// Sets up the app for step `k` of the walkthrough (inputs, config, stage, pin),
// closing the Learn window the previous step opened unless step k needs it.
void apply_walk_step(AppState& state, int k);
// Starts tour `tour` at step `k`; remembers the run and windows to return to.
void start_walkthrough(AppState& state, int k = 0, Tour tour = Tour::Chapter3);
// Ends the walkthrough. `restore`: back to the run, stage, pinned cell and
// Learn windows the learner had before starting; otherwise keep the step's.
void leave_walkthrough(AppState& state, bool restore);

// What leave_walkthrough restores.
struct WalkReturn {
  // The source and what made the inputs: a model or typed text is shown again.
  Source source = Source::Inputs;
  InputOrigin origin = InputOrigin::Preset;
  int layer = 0;                      // the model's layer ...
  ModelView view = ModelView::Model;  // ... and view (the head is `head`)
  core::Inputs inputs;
  core::Config config;
  std::string preset;
  std::shared_ptr<const core::Parameters> explicit_parameters;
  Step step = Step::Inputs;
  int head = 0;
  CellRef pinned;
  std::vector<bool> windows;            // which Learn windows were open (kLearnWindows order)
  int softmax_row = 1, scale_mode = 0;  // Softmax unfolded's settings, which steps set
};

// The walkthrough panel, drawn at the foot of the right column under the
// inspector (ui.cpp) so that it never covers the inspector or the matrices.
void draw_walkthrough(AppState& state);
// Its height in a column of height `column_h`.
float walkthrough_height(float column_h);
void draw_book_check(AppState& state);
void draw_softmax_unfolded(AppState& state);
void draw_normalisation(AppState& state);
void draw_masking(AppState& state);
void draw_dropout_lab(AppState& state);
void draw_sizes(AppState& state);
void draw_kv_memory(AppState& state);
void draw_kv_cache(AppState& state);
void draw_rope(AppState& state);
void draw_head_split(AppState& state);
void draw_compare(AppState& state);
void draw_weights_editor(AppState& state);
void draw_embedding_space(AppState& state);

// Shared helpers (teach_util.cpp).
// A small badge: green with a check mark when the app matches the book,
// amber with the largest difference otherwise. Returns its width.
void book_badge(const core::BookMatrix& book, const core::BookCheck& check);
// A compact book badge for the title of stage `s`'s heatmap (✓ book, or the
// largest difference), covering every book tensor read off that stage.
// Its width, 0 when the book prints nothing of the stage in this run.
float stage_book_badge_width(const AppState& state, const core::Stage& s);
// Draws it at `at` (HeatmapResult::title_end); leaves the cursor alone.
void stage_book_badge(const AppState& state, const core::Stage& s, ImVec2 at);
// Draws `m` with the app's heatmap widget under `title`, in a box of `size`.
void teach_heatmap(AppState& state, const std::string& slot, std::string id, int head,
                   const core::RowMatrix& m, const std::string& title, ImVec2 size);
// "1,234,567": a count with thousands commas.
std::string grouped(long long n);
// "0.2264" in the table font.
std::string num(float v, int decimals = 4);
// Top-left corners for the labels (of `sizes`) of dots at `points`, in
// order: beside each dot, each clear of the labels placed before it where
// one of a few spots nearby allows, all inside `bounds` (min x, min y,
// max x, max y). Embedding space names its tokens with it.
std::vector<ImVec2> place_point_labels(const std::vector<ImVec2>& points,
                                       const std::vector<ImVec2>& sizes, ImVec4 bounds);
// Opens a Learn window at a sensible size; false when collapsed. A window
// seen for the first time is cascaded by how many were placed before
// (`teach.learn_windows_placed`, which it counts up).
bool begin_learn_window(TeachState& teach, const char* title, bool* open, ImVec2 size);

}  // namespace attnscope::gui
