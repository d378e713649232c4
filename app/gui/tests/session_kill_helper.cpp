// session_kill_helper: the app's autosave path (Autosave, its writer thread,
// session_text, core's atomic write) saving in a tight loop, for
// session_kill_test.py, which SIGKILLs it at random moments.
//
//   session_kill_helper loop FILE [N]
//       Like the app's start: removes stale temporary files from FILE's folder
//       (prints "cleaned K"); then saves two different sessions, A and B,
//       alternately through an Autosave without debounce, each write waited
//       for; prints "saved A" or "saved B" after each one. Stops after N
//       writes (exit 0), or never when N is 0 or absent.
//   session_kill_helper check FILE
//       Restores FILE as the app does (load_session) and prints "A" or "B"
//       when its bytes are exactly one of the two; else exits 1 saying why.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "attnscope/base/rng.hpp"
#include "attnscope/formats/files.hpp"
#include "shell/autosave.hpp"
#include "state/app_state.hpp"
#include "state/session.hpp"

namespace gui = attnscope::gui;
namespace core = attnscope::core;

namespace {

// The two sessions are about the same size (~250-300 KB), so their writes
// take about as long and a kill at a random moment leaves either one on disk
// about as often. (With a small A, B was on disk only while A's 1 ms write
// ran, and 50 kills on a loaded machine could miss it every time.)
gui::AppState random_tokens(int count, int dims, std::uint64_t seed) {
  gui::AppState s;
  s.inputs.embeddings.resize(count, dims);
  core::TorchGenerator gen(seed);
  gen.fill_uniform(s.inputs.embeddings, -1.0f, 1.0f);
  s.inputs.tokens.clear();
  for (int t = 0; t < count; ++t) s.inputs.tokens.push_back("tok" + std::to_string(t));
  return s;
}

// A: 256 random tokens of 56 values, causal, at the softmax step, one cell pinned.
gui::AppState session_a() {
  gui::AppState s = random_tokens(256, 56, 98);
  s.config.variant = core::Variant::Causal;
  s.step = gui::Step::Softmax;
  s.pinned = gui::CellRef{"weights", -1, 2, 1};
  s.mark_dirty();
  s.recompute_if_dirty();
  return s;
}

// B: 256 random tokens of 64 values, multihead, at the context step.
gui::AppState session_b() {
  gui::AppState s = random_tokens(256, 64, 99);
  s.config.variant = core::Variant::Multihead;
  s.config.d_out = 8;
  s.config.num_heads = 2;
  s.step = gui::Step::Context;
  s.ui.palette = gui::Palette::Warm;
  s.mark_dirty();
  s.recompute_if_dirty();
  return s;
}

int loop(const std::filesystem::path& file, long writes) {
  const int cleaned = core::remove_stale_temp_files(file.parent_path());
  std::printf("cleaned %d\n", cleaned);
  std::fflush(stdout);
  const gui::AppState a = session_a(), b = session_b();
  gui::Autosave::Options options;
  options.debounce = options.max_delay = std::chrono::milliseconds(0);
  gui::Autosave saver(file, "", options);  // the app's mode: a writer thread
  for (long n = 0; writes <= 0 || n < writes; ++n) {
    const auto now = gui::Autosave::Clock::now();
    saver.note_activity(now);
    saver.poll(n % 2 ? b : a, now);
    saver.wait_idle();
    if (const auto report = saver.take_report(); report && report->failed) {
      std::fprintf(stderr, "error: %s\n", report->message.c_str());
      return 1;
    }
    std::printf("saved %c\n", n % 2 ? 'B' : 'A');
    std::fflush(stdout);
  }
  return 0;
}

int check(const std::filesystem::path& file) {
  std::string text;
  {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "error: %s is missing\n", file.c_str());
      return 1;
    }
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  gui::AppState restored;
  restored.load_preset("book");
  const gui::SessionRestore r = gui::load_session(file, restored, /*set_aside=*/false);
  if (!r.warning.empty()) {
    std::fprintf(stderr, "error: %s\n", r.warning.c_str());
    return 1;
  }
  if (text == gui::session_json(session_a())) {
    std::printf("A\n");
  } else if (text == gui::session_json(session_b())) {
    std::printf("B\n");
  } else {
    std::fprintf(stderr, "error: %s (%zu bytes) restores, but is neither session A nor B\n",
                 file.c_str(), text.size());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc >= 3 ? argv[1] : "";
  if (mode == "loop" && argc <= 4) return loop(argv[2], argc == 4 ? std::atol(argv[3]) : 0);
  if (mode == "check" && argc == 3) return check(argv[2]);
  std::fprintf(stderr, "usage: session_kill_helper loop FILE [N] | check FILE\n");
  return 2;
}
