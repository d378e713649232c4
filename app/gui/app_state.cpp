// app_state.cpp: the recompute point, selection upkeep.
#include "app_state.hpp"

#include <algorithm>

#include "attnscope/attention.hpp"
#include "attnscope/embedding.hpp"
#include "attnscope/inspect.hpp"
#include "attnscope/io.hpp"
#include "attnscope/weights.hpp"
#include "stage_info.hpp"

namespace attnscope::gui {

namespace {

// The embeddings' shape and bytes, hashed: tells whether the drawn inputs were edited.
std::uint64_t embeddings_hash(const core::RowMatrix& m) {
  const std::string_view bytes(reinterpret_cast<const char*>(m.data()),
                               static_cast<std::size_t>(m.size()) * sizeof(float));
  return std::hash<std::string_view>{}(bytes) ^
         (static_cast<std::uint64_t>(m.rows()) << 32 | static_cast<std::uint64_t>(m.cols()));
}

}  // namespace

void AppState::start_worker(std::function<void()> notify) {
  worker = std::make_unique<ComputeWorker>(std::move(notify));
}

void AppState::recompute_if_dirty() {
  if (dirty) {
    dirty = false;
    if (inputs_random && embeddings_hash(inputs.embeddings) != inputs_random_hash)
      inputs_random = false;  // edited since they were drawn
    if (inputs_text && embeddings_hash(inputs.embeddings) != inputs_text_hash)
      inputs_text = false;  // edited since the text made them
    ++requested_version;    // jobs in flight are stale from here on
    if (incoming) {         // ... and so is a result still being prepared
      incoming.reset();
      textures.drop_prepared();
    }
    error = core::validate(config, inputs);
    if (error.empty() && explicit_parameters)
      error = core::validate_parameters(*explicit_parameters, config,
                                        static_cast<int>(inputs.embeddings.cols()));
    if (!error.empty()) {
      settled_version = requested_version;  // keep the last good trace on screen
    } else if (worker) {
      keep_only_the_view();
      worker->post(ComputeJob{config, inputs, explicit_parameters, requested_version});
    } else {
      settled_version = requested_version;
      adopt(
          run_job(ComputeJob{config, inputs, explicit_parameters, requested_version}, sync_cache));
      return;
    }
  }
  if (!worker) return;
  // A finished job: adopted only when it answers the newest request; older
  // ones (the inputs changed since) are dropped, never shown.
  if (std::optional<ComputeResult> r = worker->take(); r && r->version == requested_version) {
    if (r->trace && trace)
      incoming = std::move(r);  // its heatmaps are prepared first, below
    else
      adopt(std::move(*r));  // an error, or the first trace (nothing to keep on screen)
  }
  if (incoming && textures.prepare(*incoming->trace, trace_version + 1, upload_budget_ms)) {
    textures.commit_prepared(trace_version + 1);
    adopt(std::move(*incoming));  // frees the previous trace and its textures
    incoming.reset();
    worker->release_when_idle();
  }
}

void AppState::keep_only_the_view() {
  // Two full traces (the one on screen and the one being built) would be
  // 2 x ~320 MiB at T = 1024, d = 768, 12 heads. What stays on screen while
  // the worker computes is the current step: keep the whole-layer stages
  // (small), every stage of the focused and the pinned head (the matrices
  // above and the inspector's breakdown), and the head grid's stage of every
  // head. Other steps come back with the new trace. Only a trace nobody else
  // holds (else nothing would be freed) and that run_job built (not const).
  constexpr std::size_t kSlimAbove = 64u << 20;
  const std::shared_ptr<core::Trace> own = own_trace.lock();
  if (!own || own != trace || own.use_count() != 2 || trace_bytes(*own) <= kSlimAbove) return;
  const int focused = stage_head();
  const int pinned_head = pinned.valid() ? pinned.head : -1;
  const std::string_view grid = per_head_stage(step, trace->config.variant);
  // The same numbers stay: the same trace_version, the textures stay valid.
  drop_stages(*own, [&](const core::Stage& s) {
    return s.head < 0 || s.head == focused || s.head == pinned_head || s.id == grid;
  });
}

void AppState::adopt(ComputeResult r) {
  settled_version = r.version;
  if (!r.trace) {
    error = r.error;
    return;
  }
  own_trace = r.trace;
  trace = std::move(r.trace);  // the previous trace is freed here, not later
  nonfinite = std::move(r.nonfinite);
  ++trace_version;
  fix_selection();
}

void AppState::finish_recompute() {
  recompute_if_dirty();
  if (!worker || !computing()) return;
  worker->wait_idle();
  recompute_if_dirty();
  if (incoming) {  // no frames to spread the uploads over: show it now
    textures.drop_prepared();
    adopt(std::move(*incoming));
    incoming.reset();
  }
}

std::vector<Step> AppState::steps() const {
  return steps_for(trace ? trace->config.variant : config.variant);
}

void AppState::step_by(int delta) {
  const auto all = steps();
  auto it = std::find(all.begin(), all.end(), step);
  const long at = it == all.end() ? 0 : it - all.begin();
  const long to = std::clamp(at + delta, 0L, static_cast<long>(all.size()) - 1);
  step = all[static_cast<std::size_t>(to)];
}

int AppState::stage_head() const {
  if (!trace) return -1;
  return core::stage_head(*trace, head);
}

void AppState::fix_selection() {
  const auto all = steps();
  if (std::find(all.begin(), all.end(), step) == all.end()) {
    // The latest step of the new pipeline that comes before the old one.
    Step best = all.front();
    for (Step s : all)
      if (static_cast<int>(s) <= static_cast<int>(step)) best = s;
    step = best;
  }
  if (!trace) return;
  head = std::clamp(head, 0, std::max(0, trace->heads_shown() - 1));

  if (pinned.valid()) {
    const core::Stage* s = trace->find(pinned.stage, pinned.head);
    if (!s) {  // e.g. the variant gained or lost heads
      pinned.head = pinned.head < 0 ? core::stage_head(*trace, head) : -1;
      s = trace->find(pinned.stage, pinned.head);
    }
    if (!s || pinned.row >= s->data().rows() || pinned.col >= s->data().cols()) pinned = CellRef{};
  }
}

void AppState::draw_random_inputs(int tokens, int dims) {
  inputs = core::random_inputs(tokens, dims, input_seed);
  inputs_random = true;
  inputs_text = false;
  inputs_random_hash = embeddings_hash(inputs.embeddings);
  mark_dirty();
}

void AppState::recognise_random_inputs() {
  const auto T = inputs.embeddings.rows();
  const auto D = inputs.embeddings.cols();
  // The first value decides most cases without drawing them all (the draws are serial).
  inputs_random =
      T >= 1 && T <= core::kMaxTokens && D >= 1 && D <= core::kMaxDim &&
      core::random_inputs(1, 1, input_seed).embeddings(0, 0) == inputs.embeddings(0, 0) &&
      core::random_inputs(static_cast<int>(T), static_cast<int>(D), input_seed).embeddings ==
          inputs.embeddings;
  if (inputs_random) inputs_random_hash = embeddings_hash(inputs.embeddings);
}

bool AppState::embed_text() {
  try {
    const TextSource& t = text_source;
    core::Inputs made =
        core::chapter2_inputs(core::tokenize_text(t.text, t.d_in, t.seed, t.positions));
    text_tokens = core::Gpt2Tokenizer::builtin().encode(t.text);
    inputs = std::move(made);
  } catch (const core::ParseError& e) {
    text_error = e.what();
    return false;
  } catch (const std::invalid_argument& e) {
    text_error = e.what();
    return false;
  }
  text_error.clear();
  inputs_random = false;
  inputs_text = true;
  inputs_text_hash = embeddings_hash(inputs.embeddings);
  mark_dirty();
  return true;
}

void AppState::recognise_text_inputs() {
  inputs_text = false;
  try {
    const TextSource& t = text_source;
    const core::Inputs made =
        core::chapter2_inputs(core::tokenize_text(t.text, t.d_in, t.seed, t.positions));
    inputs_text =
        made.tokens == inputs.tokens && made.embeddings.rows() == inputs.embeddings.rows() &&
        made.embeddings.cols() == inputs.embeddings.cols() && made.embeddings == inputs.embeddings;
  } catch (const std::exception&) {
    return;  // settings that cannot be embedded made nothing on screen
  }
  if (inputs_text) {
    inputs_text_hash = embeddings_hash(inputs.embeddings);
    text_tokens = core::Gpt2Tokenizer::builtin().encode(text_source.text);  // for the chips
  }
}

bool AppState::load_preset(const std::string& name) {
  auto p = core::find_preset(name);
  if (!p) return false;
  inputs = std::move(*p);
  preset = name;
  inputs_text = false;
  mark_dirty();
  return true;
}

}  // namespace attnscope::gui
