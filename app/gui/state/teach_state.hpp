// teach_state.hpp: what the Learn features remember between frames (part of
// AppState as `teach`): the walkthrough's position, which Learn windows are
// open, their settings, and compare's pinned run A. UI state only: every
// number these views show is computed by core (attnscope/teach.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "attnscope/analysis/kv_memory.hpp"
#include "attnscope/attention/modern.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/base/trace.hpp"
#include "attnscope/book/teach.hpp"

namespace attnscope::gui {

struct WalkReturn;  // teach/teach.hpp

struct TeachState {
  // Walkthrough.
  bool walk_active = false;  // the walkthrough panel is showing
  int walk_step = 0;         // index into the tour's walkthrough_steps()
  int walk_tour = 0;         // which tour (teach.hpp's Tour): 0 chapter 3, 1 after it
  int walk_apply = -1;       // a step to set up at the end of this frame (-1: none)
  // The Learn window the current step opened (it was closed before), which
  // the next step closes unless it needs it too; nullptr: none.
  bool TeachState::*walk_opened = nullptr;
  // The run and windows the learner had before starting: Leave restores them.
  std::shared_ptr<WalkReturn> walk_return;

  // Learn windows placed so far (begin_learn_window cascades new ones by it).
  int learn_windows_placed = 0;

  // Book check's Set up waiting for the learner to say the edited inputs
  // (or imported weights) may be replaced.
  std::optional<core::BookRun> book_set_up_asked;

  // Open Learn windows.
  bool show_softmax = false, show_normalisation = false, show_masking = false, show_dropout = false,
       show_heads = false, show_compare = false, show_weights = false, show_embedding = false,
       show_sizes = false, show_book = false, show_kv_memory = false, show_kv_cache = false,
       show_rope = false;

  // Softmax unfolded.
  int softmax_row = 1;
  int scale_mode = 0;           // 0 the trace's √d_k, 1 off (÷ 1), 2 custom
  float custom_divisor = 1.0f;  // used when scale_mode == 2

  // Dropout lab: the average is computed on demand (a button), not per frame.
  int average_seeds = 100;
  int average_first_seed = 1;  // the seeds are first .. first + n − 1
  double average_p = 0.5;      // the p it was computed with
  std::optional<core::DropoutAverage> average;
  std::uint64_t average_trace_version = 0;  // the trace it was computed for
  int average_count = 0;                    // bumps per computation (texture slot)

  // Weights editor: why the last typed value was refused (empty: none was).
  std::string weights_refusal;

  // Compare: run A as pinned; B is always the current trace.
  std::shared_ptr<const core::Trace> compare_a;
  std::string compare_a_inputs;  // what made A's inputs, as the panel names them ("" unknown)
  int compare_pins = 0;          // bumps on every pin (texture slot)
  std::string compare_stage = core::stage_id::weights;
  int compare_head = 0;

  // KV-cache memory: the shape estimated (a preset's copy, maybe edited;
  // an empty id until the window first opens) at kv_context tokens.
  core::KvModelShape kv_shape;
  int kv_context = 0;
  bool kv_log_x = false;

  // KV cache, step by step: the class it runs, the step and query head
  // shown, and that step as computed for `cache_key` (inputs, class, step).
  core::modern::Config cache_config = [] {
    core::modern::Config c;
    c.kind = core::modern::Kind::Multihead;  // the cache as gpt_with_kv_cache.py adds it
    return c;
  }();
  int cache_t = 0, cache_head = 0;
  std::string cache_key;
  std::optional<core::modern::CacheStep> cache_result;
  std::string cache_refusal;

  // Rotary positions: the angle grid's size and theta; the shift test's c.
  int rope_head_dim = 16, rope_positions = 32, rope_shift = 100;
  double rope_theta = 10000.0;

  // Embedding space.
  int space_x = 0, space_y = 1, space_z = 2;  // which dimensions the axes show
  bool space_3d = false;
  float yaw = 0.6f, pitch = 0.4f;  // 3-D view rotation, radians
  int space_drag = -1;             // token being dragged, -1 none
};

}  // namespace attnscope::gui
