// walkthrough.cpp: the guided tours: chapter 3 in the book's order, and
// the attention after it.
//
// Sections
//   1. the steps (setup + words)
//   2. setting up a step
//   3. the panel: Back / Next / Leave, text, "try this", book badges
#include <algorithm>

#include "attnscope/base/stages.hpp"
#include "attnscope/io/io.hpp"
#include "teach/teach.hpp"
#include "widgets/widgets.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {

namespace {
constexpr bool TeachState::*open_softmax = &TeachState::show_softmax;
constexpr bool TeachState::*open_normalisation = &TeachState::show_normalisation;
constexpr bool TeachState::*open_masking = &TeachState::show_masking;
constexpr bool TeachState::*open_dropout = &TeachState::show_dropout;
constexpr bool TeachState::*open_heads = &TeachState::show_heads;
constexpr bool TeachState::*open_sizes = &TeachState::show_sizes;
constexpr bool TeachState::*open_kv_cache = &TeachState::show_kv_cache;
constexpr bool TeachState::*open_kv_memory = &TeachState::show_kv_memory;
constexpr bool TeachState::*open_rope = &TeachState::show_rope;

// Every Learn window's flag, for remembering which were open.
constexpr bool TeachState::*kLearnWindows[] = {
    &TeachState::show_softmax, &TeachState::show_normalisation, &TeachState::show_masking,
    &TeachState::show_dropout, &TeachState::show_heads,         &TeachState::show_compare,
    &TeachState::show_weights, &TeachState::show_embedding,     &TeachState::show_sizes,
    &TeachState::show_book,    &TeachState::show_kv_memory,     &TeachState::show_kv_cache,
    &TeachState::show_rope,
};
}  // namespace

// ---------------------------------------------------------------------------
// 1. Steps

namespace {

// Data table: the second tour, one literal record each, on the book's six
// tokens (cross-attention last, on the translation example).
const std::vector<WalkStep>& after_chapter3_steps() {
  using core::Variant;
  static const std::vector<WalkStep> kSteps = {
      {"ch04/03", "Generating with a KV cache", Variant::Multihead, 4, 2, 123, 0.0, Step::Context,
       "", 0, 0,
       "A GPT writes one token at a time, and each new token's query needs the keys and values "
       "of every token before it. Those never change, so gpt_with_kv_cache.py keeps them "
       "(cache_k, cache_v) and each step projects only the newest token: one query row against "
       "the cached keys.",
       "In the KV cache window, step through the six tokens: the new key row is marked, and "
       "\"cached result = full recompute\" holds at every step, with its largest difference.",
       open_kv_cache},
      {"ch04/03", "What the cache costs", Variant::Multihead, 4, 2, 123, 0.0, Step::Context, "", 0,
       0,
       "The cache holds two rows of d_out numbers per token, per layer: it grows linearly with "
       "the context. For the book's 8B-sized example (32 layers, 32 heads of 128, 32,768 "
       "tokens, bfloat16) that is 17.18 GB, more than the weights.",
       "In the KV-cache memory window, pick a preset and a dtype and drag along the plot: every "
       "line is linear, and the mechanisms of the next steps lower their slope.",
       open_kv_memory},
      {"ch04/04", "Grouped-query attention", Variant::GroupedQuery, 8, 4, 123, 0.0, Step::KvGroups,
       "", 0, 0,
       "GroupedQueryAttention keeps 4 query heads but computes keys and values for only 2: "
       "heads 0 and 1 read K/V head 0, heads 2 and 3 read K/V head 1 (repeat_interleave). "
       "The cache holds 2 heads instead of 4, half the memory. The heads strip shows the "
       "keys each query head reads: tiles of one group are the same.",
       "Set groups to 4 (plain multi-head attention) and then to 3: 3 does not divide 4 heads, "
       "and the controls say which values would.",
       nullptr, "book", 2},
      {"ch04/04", "One K/V head: multi-query attention", Variant::GroupedQuery, 8, 4, 123, 0.0,
       Step::KvGroups, "", 0, 0,
       "With a single group every query head reads the same keys and values: multi-query "
       "attention. The cache shrinks by the number of heads; the heads still differ, because "
       "each has its own queries and so its own scores.",
       "Step on to Scores (→): the keys are shared but the four score tiles are not.", nullptr,
       "book", 1},
      {"ch04/05", "Latent attention: squeeze, then expand", Variant::Latent, 8, 2, 123, 0.0,
       Step::Latent, core::stage_id::latent_kv, 1, 0,
       "MultiHeadLatentAttention sends every token through W_DKV into a small latent C_kv and "
       "brings keys and values back up from it with W_UK and W_UV. The cache keeps only the "
       "latent. Here latent_dim is 4, half of d_out: a cache of 4 numbers per token instead of "
       "16.",
       "Drag latent in the controls: the keys change, and at 16 (2 × d_out) the latent stops "
       "saving anything.",
       nullptr, "book", 1, 0, 4},
      {"ch04/05", "Keys and values from the latent", Variant::Latent, 8, 2, 123, 0.0,
       Step::Projections, core::stage_id::keys, 1, 0,
       "Queries still come straight from X; keys are C_kv·W_UK and values C_kv·W_UV. The "
       "inspector shows a key as a sum over the latent's 4 columns, not over the inputs.",
       "Step back (←) to the latent and forward to the scores: from here on it is plain "
       "multi-head attention.",
       nullptr, "book", 1, 0, 4},
      {"ch04/06", "A sliding window", Variant::SlidingWindow, 4, 2, 123, 0.0, Step::WindowMask, "",
       0, 0,
       "MultiHeadAttentionWithSWA keeps the causal mask and hides more: with a window of 3, "
       "query i sees only keys i − 2 … i. The cache needs only the last 3 keys and values, "
       "however long the text grows.",
       "Drag window to 1 (each token sees only itself) and up to 6 (plain causal attention).",
       nullptr, "book", 1, 3},
      {"ch04/06", "Weights inside the window", Variant::SlidingWindow, 4, 2, 123, 0.0,
       Step::Softmax, core::stage_id::weights, 5, 3,
       "After the softmax each row spreads its weight over at most 3 keys: \"step\" (row 5) "
       "weighs \"with\", \"one\" and itself, and the earlier tokens get exactly 0.",
       "Hover the last row: three weights sum to 1.", nullptr, "book", 1, 3},
      {"RoPE", "Rotary positions", Variant::Multihead, 4, 2, 123, 0.0, Step::Rotate, "", 0, 0,
       "Llama and Qwen add no position vectors to the tokens. apply_rope turns each pair of a "
       "head's query and key columns by an angle that grows with the position, fast in the "
       "first pairs and slowly in the last; values are not turned.",
       "In the Rotary positions window hover the angle grid, then shift every position by c: "
       "the scores stay the same, to float precision.",
       open_rope, "book", 1, 0, 0, true},
      {"RoPE", "Scores that depend on distance", Variant::Multihead, 4, 2, 123, 0.0, Step::Scores,
       core::stage_id::scores, 1, 0,
       "Both sides are turned, so a rotated query times a rotated key depends on how far apart "
       "the two tokens are, not on where they stand. This is why RoPE models can read text "
       "longer than they were trained on, with care.",
       "Drag theta: a small base turns every pair fast and the scores change most.", nullptr,
       "book", 1, 0, 0, true},
      {"Cross", "Cross-attention: two sentences", Variant::Cross, 4, 2, 123, 0.0, Step::Scores,
       core::stage_id::scores, 3, 2,
       "An encoder-decoder translator reads one sentence and writes another: its queries come "
       "from the English words written so far, its keys and values from the German sentence. "
       "The scores are 7 × 8, English rows by German columns, and there is no causal mask.",
       "Type another sentence in \"keys and values from\" and press Enter: the columns follow "
       "it. That is the end of the tour.",
       nullptr, "translate"},
  };
  return kSteps;
}

// Data table: the tour's steps, one literal record each, in the book's order.
const std::vector<WalkStep>& chapter3_steps() {
  using core::Variant;
  static const std::vector<WalkStep> kSteps = {
      {"3.3.1", "Scores for one query", Variant::Simple, 2, 1, 123, 0.0, Step::Scores,
       core::stage_id::scores, 1, 1,
       "Take \"journey\" as the query, x⁽²⁾. Its score with every token is a dot product, "
       "ω_2j = x⁽²⁾ · x_j, so the journey row of this matrix is the book's attn_scores_2. "
       "Vectors that point the same way get large scores.",
       "Drag journey's second value (0.87) in the embeddings table and watch the journey row "
       "and column change; the book badge then shows how far you are from the book.",
       nullptr},
      {"3.3.1", "From scores to weights", Variant::Simple, 2, 1, 123, 0.0, Step::Softmax,
       core::stage_id::weights, 1, 1,
       "Scores are normalised into weights that sum to 1. Dividing by the row sum would do "
       "that too (the book's attn_weights_2_tmp), but softmax exponentiates first: every weight "
       "stays positive and larger scores get a larger share.",
       "Compare the two rows in the Normalisation window that just opened: softmax gives "
       "journey→journey 0.2379, plain division 0.2278.",
       open_normalisation},
      {"3.3.1", "The context vector z⁽²⁾", Variant::Simple, 2, 1, 123, 0.0, Step::Context,
       core::stage_id::context, 1, 0,
       "journey's context vector is the sum of all six input vectors, each multiplied by "
       "journey's weight for it: z⁽²⁾ = Σ_j α_2j x_j = [0.4419, 0.6515, 0.5683]. It is a blend "
       "of the inputs, leaning towards the tokens journey attends to.",
       "Look at the inspector on the right: it lists each weight × input term of the "
       "highlighted cell. Click another cell of the journey row.",
       nullptr},
      {"3.3.2", "All queries at once", Variant::Simple, 2, 1, 123, 0.0, Step::Softmax,
       core::stage_id::weights, 4, 4,
       "Doing this for every token is two matrix products: scores = X·Xᵀ and context = "
       "weights · X. Each row is one query's softmax, so every row sums to 1; the whole matrix "
       "is the book's attn_weights.",
       "Press → to step to Context (all_context_vecs), then edit any embedding: only the cells "
       "that read it change.",
       nullptr},
      {"3.4.1", "Trainable weights", Variant::SelfAttentionV1, 2, 1, 123, 0.0, Step::Projections,
       core::stage_id::queries, 1, 0,
       "SelfAttention_v1 gives the inputs three learnable projections: Q = X·W_query, "
       "K = X·W_key, V = X·W_value, each 3×2. With seed 123 they are the book's torch.rand "
       "matrices, and journey's query is query_2 = [0.4306, 1.4551].",
       "Change the seed in the controls: every W changes and the badges show the difference; "
       "set it back to 123 and they turn green again.",
       nullptr},
      {"3.4.1", "Scores for query 2", Variant::SelfAttentionV1, 2, 1, 123, 0.0, Step::Scores,
       core::stage_id::scores, 1, 1,
       "Scores are now query · key instead of input · input: ω_22 = q⁽²⁾ · k⁽²⁾ = 1.8524, the "
       "highlighted cell. Queries and keys come from different matrices, so the scores matrix is "
       "no longer symmetric.",
       "Compare journey→starts with starts→journey (row 1, column 2 against row 2, column 1; "
       "rows and columns count from 0, as in the inspector and in PyTorch): they differ now.",
       nullptr},
      {"3.4.1", "Scaled softmax for query 2", Variant::SelfAttentionV1, 2, 1, 123, 0.0,
       Step::Softmax, core::stage_id::weights, 1, 1,
       "Before the softmax the scores are divided by √d_k = √2. Without it, large dot products "
       "in wide layers push softmax towards one-hot rows with tiny gradients. journey's row is "
       "the book's attn_weights_2 = [0.1500, 0.2264, 0.2199, …].",
       "In Softmax unfolded set √d_k to off, then to a large value: the weights get more peaked "
       "or flatter and the row's entropy falls or rises.",
       open_softmax},
      {"3.4.1", "Context from values", Variant::SelfAttentionV1, 2, 1, 123, 0.0, Step::Context,
       core::stage_id::context, 1, 0,
       "The context vector is now a weighted sum of value vectors, z⁽²⁾ = Σ_j α_2j v_j = "
       "[0.3061, 0.8210]. Doing every row at once gives the book's sa_v1(inputs).",
       "Click the other column of the journey row and follow the terms in the inspector.", nullptr},
      {"3.4.2", "The compact class, nn.Linear", Variant::SelfAttentionV2, 2, 1, 789, 0.0,
       Step::Context, core::stage_id::context, 1, 0,
       "SelfAttention_v2 uses nn.Linear layers instead of torch.rand matrices. Their Kaiming "
       "uniform start gives small weights of both signs, so with seed 789 the outputs are small "
       "too: the book's sa_v2(inputs).",
       "Step back to Q/K/V: the badges compare the W matrices with the printed .weight "
       "(which nn.Linear stores transposed).",
       nullptr},
      {"3.5.1", "Hiding the future", Variant::Causal, 2, 1, 789, 0.0, Step::Masked,
       core::stage_id::masked_scores, 1, 2,
       "A language model predicts the next token, so a query may only look at itself and "
       "earlier tokens. As in the book's CausalAttention, masked_fill_ sets every raw score "
       "above the diagonal to −∞ (hatched) before the division by √d_k: the book's printed "
       "masked = [[0.2899, −∞, …], …]. exp(−∞) = 0, so those keys get no weight.",
       "The Masking window shows the book's two ways (zero then renormalise, or −∞ then "
       "softmax) agree, and what goes wrong without renormalising.",
       open_masking},
      {"3.5.1", "Causal attention weights", Variant::Causal, 2, 1, 789, 0.0, Step::Softmax,
       core::stage_id::weights, 1, 1,
       "Each row now spreads its weight over the tokens up to itself: the first row is "
       "[1, 0, …, 0] and journey's is [0.5517, 0.4483, 0, …]. Every row still sums to 1.",
       "Drag a value of the last token (step): only the last row of the weights changes, "
       "because no earlier query can see it.",
       nullptr},
      {"3.5.2", "Dropout on the weights", Variant::Causal, 2, 1, 789, 0.5, Step::Dropout,
       core::stage_id::dropped_weights, 2, 0,
       "In training, nn.Dropout(0.5) zeroes each weight with probability ½ and doubles the "
       "rest (× 1/(1−p)), so rows stop summing to 1 but each weight keeps its expected value. "
       "Here the mask is drawn after the weights' seed 789; the book's example reseeds with 123.",
       "In the Dropout lab, average over many seeds and watch the error shrink; switch the "
       "controls to eval and the mask becomes all ones.",
       open_dropout},
      {"3.5.3", "The CausalAttention class", Variant::Causal, 2, 1, 123, 0.0, Step::Context,
       core::stage_id::context, 1, 0,
       "CausalAttention packs the projections, the scaling, the mask buffer and dropout into "
       "one module. With seed 123 and dropout 0.0 it prints the book's context_vecs for the "
       "first item of the batch.",
       "Raise dropout in the controls: the output changes, and the badge says the book printed "
       "it at dropout 0.0. Switch the controls to eval and it matches again.",
       nullptr},
      {"3.6.1", "Stacking heads: the wrapper", Variant::MultiheadWrapper, 2, 2, 123, 0.0,
       Step::Concat, core::stage_id::output, 1, 2,
       "MultiHeadAttentionWrapper runs two independent CausalAttention heads and puts their "
       "6×2 outputs side by side: 6×4. Head 0 is built first from seed 123, so its columns "
       "repeat the previous step's numbers.",
       "Click the tiles in the heads grid to focus a head, or set heads to 4: the output "
       "widens to 8 columns.",
       nullptr},
      {"3.6.2", "Splitting heads", Variant::Multihead, 2, 2, 123, 0.0, Step::SplitHeads,
       core::stage_id::queries, 1, 0,
       "MultiHeadAttention computes Q with one d_out-wide W_query and then cuts it into heads "
       "with .view and .transpose(1, 2). With d_out = 2 and 2 heads, each head gets one "
       "column, and one matrix product computes every head's queries.",
       "The Head split window colours each head's columns from Q through the transpose and "
       "back to the concatenation.",
       open_heads},
      {"3.6.2", "Mixing heads: out_proj", Variant::Multihead, 2, 2, 123, 0.0, Step::OutProj,
       core::stage_id::output, 1, 0,
       "The heads' context vectors are put side by side again (6×2) and mixed by out_proj, a "
       "2×2 Linear layer with a bias. The result is the book's output of MultiHeadAttention.",
       "The Sizes window counts this module's parameters and those of a GPT-2 sized layer "
       "(2,360,064). That is the end: leave the walkthrough and keep exploring.",
       open_sizes},
  };
  return kSteps;
}

}  // namespace

const std::vector<WalkStep>& walkthrough_steps(Tour tour) {
  return tour == Tour::AfterChapter3 ? after_chapter3_steps() : chapter3_steps();
}

const std::vector<WalkStep>& current_walk(const AppState& state) {
  return walkthrough_steps(static_cast<Tour>(state.teach.walk_tour));
}

// ---------------------------------------------------------------------------
// 2. Setting up a step

void apply_walk_step(AppState& state, int k) {
  const auto& steps = current_walk(state);
  k = std::clamp(k, 0, static_cast<int>(steps.size()) - 1);
  const WalkStep& s = steps[static_cast<std::size_t>(k)];
  state.teach.walk_step = k;
  state.load_preset(s.preset);  // the book's six tokens, as printed
  // The book's classes on them, also when a model was shown: its words are
  // about these numbers (set_source keeps the model loaded for Leave).
  if (state.source != Source::Inputs) state.set_source(Source::Inputs);
  core::Config c;
  c.variant = s.variant;
  c.d_out = s.d_out;
  c.num_heads = s.num_heads;
  c.seed = s.seed;
  c.dropout = s.dropout;
  c.qkv_bias = false;
  c.training = true;
  c.num_kv_groups = s.kv_groups;
  if (s.window_size > 0) c.window = s.window_size;
  if (s.latent_dim > 0) c.latent_dim = s.latent_dim;
  c.rope = s.rope;
  state.config = c;
  state.ui.typed_refusal.clear();
  state.ui.memory_error.clear();
  state.explicit_parameters.reset();
  state.ui.heads_refusal.clear();
  state.step = s.step;
  state.head = 0;
  // Per-head stages of the head variants are pinned in head 0.
  const std::string_view pin = s.pin_stage;
  const int head =
      core::has_heads(s.variant) && pin != core::stage_id::output && pin != core::stage_id::concat
          ? 0
          : -1;
  state.pinned = !pin.empty() ? CellRef{s.pin_stage, head, s.pin_row, s.pin_col} : CellRef{};
  // The window the previous step opened closes unless this step needs it: it
  // would cover what this step talks about. Windows the learner opened stay.
  TeachState& t = state.teach;
  bool TeachState::*const before = t.walk_opened;
  if (before && before != s.window) t.*before = false;
  if (!s.window || before == s.window) {
    t.walk_opened = s.window;
  } else if (t.*s.window) {
    t.walk_opened = nullptr;  // already open: the learner's, left to them
  } else {
    t.*s.window = true;
    t.walk_opened = s.window;
  }
  if (s.window == open_softmax) {
    t.softmax_row = s.pin_row;
    t.scale_mode = 0;
  }
  state.mark_dirty();
}

void start_walkthrough(AppState& state, int k, Tour tour) {
  TeachState& t = state.teach;
  t.walk_tour = static_cast<int>(tour);
  if (!t.walk_active) {
    auto back = std::make_shared<WalkReturn>();
    back->source = state.source;
    back->origin = state.origin;
    back->layer = state.model.layer;
    back->view = state.model.view;
    back->inputs = state.inputs;
    back->config = state.config;
    back->preset = state.preset;
    back->explicit_parameters = state.explicit_parameters;
    back->step = state.step;
    back->head = state.head;
    back->pinned = state.pinned;
    for (bool TeachState::*w : kLearnWindows) back->windows.push_back(t.*w);
    back->softmax_row = t.softmax_row;
    back->scale_mode = t.scale_mode;
    t.walk_return = std::move(back);
    t.walk_opened = nullptr;
  }
  t.walk_active = true;
  t.walk_apply = k;
}

void leave_walkthrough(AppState& state, bool restore) {
  TeachState& t = state.teach;
  t.walk_active = false;
  t.walk_apply = -1;
  t.walk_opened = nullptr;
  const std::shared_ptr<WalkReturn> back = std::move(t.walk_return);
  t.walk_return.reset();
  if (!restore || !back) return;
  state.inputs = back->inputs;
  state.origin = back->origin;
  state.config = back->config;
  state.preset = back->preset;
  state.explicit_parameters = back->explicit_parameters;
  // The inputs are back as they were, so the source needs no re-embedding;
  // a model's text is encoded again (set_source) and its view restored.
  if (back->source == Source::Model)
    state.set_source(Source::Model);
  else
    state.source = back->source;
  state.model.layer = back->layer;
  state.select_layer(back->layer);  // clamped, should another model have come in meanwhile
  state.model.view = back->view;
  state.step = back->step;
  state.head = back->head;
  state.pinned = back->pinned;
  for (std::size_t k = 0; k < std::size(kLearnWindows) && k < back->windows.size(); ++k)
    t.*kLearnWindows[k] = back->windows[k];
  t.softmax_row = back->softmax_row;
  t.scale_mode = back->scale_mode;
  state.mark_dirty();
}

// ---------------------------------------------------------------------------
// 3. The panel

float walkthrough_height(float column_h) {
  const float font = ImGui::GetFontSize();
  return std::min(std::max(column_h * 0.5f, font * 16.0f), column_h * 0.7f);
}

void draw_walkthrough(AppState& state) {
  TeachState& t = state.teach;
  const auto& steps = current_walk(state);
  const int n = static_cast<int>(steps.size());
  t.walk_step = std::clamp(t.walk_step, 0, n - 1);
  const WalkStep& s = steps[static_cast<std::size_t>(t.walk_step)];
  const bool after = t.walk_tour == static_cast<int>(Tour::AfterChapter3);

  // A child of fixed height at the foot of the right column: Back and Next
  // sit on its first line, so they stay in one place whatever a step says,
  // and the text scrolls when it is longer than the panel.
  ImGui::BeginChild("walkthrough", ImVec2(0, 0), true);
  if (after)
    ImGui::TextDisabled("After chapter 3 · step %d of %d · %s", t.walk_step + 1, n, s.section);
  else
    ImGui::TextDisabled("Walkthrough · step %d of %d · §%s", t.walk_step + 1, n, s.section);
  ImGui::BeginDisabled(t.walk_step == 0);
  if (ImGui::Button("< Back")) t.walk_apply = t.walk_step - 1;
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Previous step (P or Backspace)");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(t.walk_step + 1 >= n);
  if (ImGui::Button("Next >")) t.walk_apply = t.walk_step + 1;
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Next step (N or Enter)");
  ImGui::EndDisabled();
  ImGui::SameLine();
  bool leave = false, keep = false;
  if (ImGui::Button("Leave")) leave = true;
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "End the walkthrough and go back to the run, stage and windows you had "
        "before it started.");
  ImGui::Separator();

  ImGui::BeginChild("walk text", ImVec2(0, 0), false);
  if (state.ui.font_heading) ImGui::PushFont(state.ui.font_heading);
  text_wrapped(state, s.title);
  if (state.ui.font_heading) ImGui::PopFont();
  text_wrapped(state, s.text);
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.55f, 0.85f, 0.55f, 1.0f));
  text_wrapped(state, std::string("Try this: ") + s.try_this);
  ImGui::PopStyleColor();
  // The book's numbers this step shows, checked against the app's.
  if (state.trace) {
    const StepMatrices mats = step_matrices(state.step, *state.trace, state.head);
    for (const core::Stage* m : mats.outputs)
      for (const core::BookMatrix* b : core::book_matrices_for_stage(*state.trace, m->id))
        book_badge(*b, core::check_book(*b, state.trace.get()));
  }
  if (ImGui::SmallButton("Set up this step again")) t.walk_apply = t.walk_step;
  if (ImGui::SmallButton("Keep this run and leave")) keep = true;
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("End the walkthrough and keep everything as it is now.");
  ImGui::EndChild();
  ImGui::EndChild();
  if (leave || keep) leave_walkthrough(state, leave);
}

}  // namespace attnscope::gui
