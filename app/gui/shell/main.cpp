// main.cpp: attnscope, the desktop app. Owns the AppState, the GLFW window
// and the frame loop; everything drawn comes from draw_ui (ui.cpp).
//
// Sections
//   1. wake-ups: GLFW callbacks that tell the idle loop something happened
//   2. window helpers
//   3. setup: the state and session, the window and ImGui, the worker; shutdown
//   4. one frame, shared by every mode
//   5. the modes: the interactive loop (wait when idle, draw a few frames
//      after every event, nothing while minimised, autosave shortly after
//      changes), --screenshot, --bench-frames, --export-png
#include <GLFW/glfw3.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/formats/files.hpp"
#include "attnscope/io/io.hpp"
#include "export/dropped.hpp"
#include "export/files.hpp"
#include "export/png.hpp"
#include "icon/app_icon.hpp"
#include "imgui.h"
#include "imgui_impl_glfw.h"
#include "imgui_impl_opengl3.h"
#include "platform/fonts.hpp"
#include "platform/keyboard_queue.hpp"
#include "render/figure_renderer.hpp"
#include "render/gl_texture.hpp"
#include "shell/autosave.hpp"
#include "shell/frame_bench.hpp"
#include "shell/launch_options.hpp"
#include "shell/ui.hpp"
#include "state/app_state.hpp"
#include "state/session.hpp"

namespace gui = attnscope::gui;
namespace core = attnscope::core;

namespace {

// ---------------------------------------------------------------------------
// 1. Wake-ups

// Set by SIGINT/SIGTERM so that Ctrl+C in the terminal still saves the
// session; a signal handler can only touch a sig_atomic_t.
volatile std::sig_atomic_t g_stop_signal = 0;
void on_signal(int) { g_stop_signal = 1; }

static_assert(gui::KeyboardQueue::kRelease == GLFW_RELEASE &&
              gui::KeyboardQueue::kPress == GLFW_PRESS &&
              gui::KeyboardQueue::kRepeat == GLFW_REPEAT);

// Counted by every input callback; the loop draws frames while it grows.
struct Wake {
  int events = 0;
  // Key releases, counted apart: while typing waits for the worker's run
  // they draw no frame of their own (the next frame hands them to ImGui).
  int releases = 0;
  bool scale_changed = false;
  // Keys and typed characters go to ImGui one frame's worth at a time, in
  // order (keyboard_queue.hpp): a press and release in one poll are both seen.
  std::optional<gui::KeyboardQueue> keyboard;
  std::vector<std::string> dropped;  // paths dropped onto the window, for the next frame
};

Wake& wake_of(GLFWwindow* w) { return *static_cast<Wake*>(glfwGetWindowUserPointer(w)); }

// Installed before ImGui's backend, which chains to them.
void install_wake_callbacks(GLFWwindow* w) {
  glfwSetMouseButtonCallback(w, [](GLFWwindow* win, int, int, int) { ++wake_of(win).events; });
  glfwSetScrollCallback(w, [](GLFWwindow* win, double, double) { ++wake_of(win).events; });
  glfwSetCursorPosCallback(w, [](GLFWwindow* win, double, double) { ++wake_of(win).events; });
  glfwSetCursorEnterCallback(w, [](GLFWwindow* win, int) { ++wake_of(win).events; });
  glfwSetWindowFocusCallback(w, [](GLFWwindow* win, int) { ++wake_of(win).events; });
  glfwSetWindowSizeCallback(w, [](GLFWwindow* win, int, int) { ++wake_of(win).events; });
  glfwSetFramebufferSizeCallback(w, [](GLFWwindow* win, int, int) { ++wake_of(win).events; });
  glfwSetWindowRefreshCallback(w, [](GLFWwindow* win) { ++wake_of(win).events; });
  glfwSetWindowContentScaleCallback(w, [](GLFWwindow* win, float, float) {
    ++wake_of(win).events;
    wake_of(win).scale_changed = true;
  });
}

// Replaces the backend's key and character callbacks (after
// ImGui_ImplGlfw_InitForOpenGL): both go through the keyboard queue, which
// hands them to the backend in order, a frame's worth at a time.
void install_keyboard_callbacks(GLFWwindow* w) {
  wake_of(w).keyboard.emplace([w](const gui::KeyboardQueue::Event& e) {
    if (e.is_char)
      ImGui_ImplGlfw_CharCallback(w, e.codepoint);
    else
      ImGui_ImplGlfw_KeyCallback(w, e.key, e.scancode, e.action, e.mods);
  });
  glfwSetKeyCallback(w, [](GLFWwindow* win, int key, int scancode, int action, int mods) {
    Wake& wake = wake_of(win);
    ++(action == GLFW_RELEASE ? wake.releases : wake.events);
    // Ctrl+Q quits even when ImGui has the keyboard (a text field is active);
    // GLFW's modifiers are the X server's, never a frame behind.
    if (key == GLFW_KEY_Q && action == GLFW_PRESS && (mods & GLFW_MOD_CONTROL))
      glfwSetWindowShouldClose(win, GLFW_TRUE);
    wake.keyboard->key(key, scancode, action, mods);
  });
  glfwSetCharCallback(w, [](GLFWwindow* win, unsigned codepoint) {
    Wake& wake = wake_of(win);
    ++wake.events;
    wake.keyboard->character(codepoint);
  });
  glfwSetDropCallback(w, [](GLFWwindow* win, int count, const char** paths) {
    Wake& wake = wake_of(win);
    ++wake.events;
    for (int k = 0; k < count; ++k) wake.dropped.emplace_back(paths[k]);
  });
}

// After a frame: the keyboard input that waited goes to ImGui now.
void after_frame_keys(Wake& wake) {
  if (wake.keyboard->frame_done())  // draw the frame that sees it
    ++(wake.keyboard->delivered_only_releases() ? wake.releases : wake.events);
}

// ---------------------------------------------------------------------------
// 2. Window helpers

// The X11 class "attnscope" ties the window to the launcher entry
// (StartupWMClass in the .desktop file), so docks group it under its icon.
void set_class_hints() {
  glfwWindowHintString(GLFW_X11_CLASS_NAME, "attnscope");
  glfwWindowHintString(GLFW_X11_INSTANCE_NAME, "attnscope");
}

// The window's icon: the installed icon's shapes at the sizes window
// managers ask for most (app/icon).
void set_window_icon(GLFWwindow* window) {
  constexpr int kSizes[] = {16, 32, 48, 64, 128};
  std::vector<std::vector<unsigned char>> pixels;
  std::vector<GLFWimage> images;
  for (int size : kSizes) pixels.push_back(attnscope::icon::rgba(size));
  for (std::size_t k = 0; k < pixels.size(); ++k)
    images.push_back(GLFWimage{kSizes[k], kSizes[k], pixels[k].data()});
  glfwSetWindowIcon(window, static_cast<int>(images.size()), images.data());
}

GLFWwindow* create_window(int width, int height, const char*& glsl) {
  set_class_hints();
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glsl = "#version 330 core";
  if (GLFWwindow* w = glfwCreateWindow(width, height, "attnscope", nullptr, nullptr)) return w;
  // Older drivers: any context from 3.0 on does.
  glfwDefaultWindowHints();
  set_class_hints();
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  glsl = "#version 130";
  return glfwCreateWindow(width, height, "attnscope", nullptr, nullptr);
}

std::string glfw_error() {
  const char* what = nullptr;
  glfwGetError(&what);
  return what ? what : "unknown reason";
}

// Minimised (iconified), or a framebuffer with no pixels (what some
// platforms report for a minimised window): nothing to draw into.
bool nothing_to_draw(GLFWwindow* w) {
  int fbw = 0, fbh = 0;
  glfwGetFramebufferSize(w, &fbw, &fbh);
  return glfwGetWindowAttrib(w, GLFW_ICONIFIED) || fbw <= 0 || fbh <= 0;
}

// The autosave's news for the user: a banner in the window and one line on
// stderr. True when there was news (the frame must be drawn).
bool show_autosave_report(gui::Autosave& autosave, gui::AppState& state, Wake& wake) {
  const auto report = autosave.take_report();
  if (!report) return false;
  if (report->failed) {
    state.ui.autosave_warning = report->message;
    std::cerr << "warning: " << report->message << "\n";
  } else {
    state.ui.autosave_warning.clear();
    std::cerr << "note: " << report->message << "\n";
  }
  ++wake.events;  // draw the banner (or its removal) over the next frames
  return true;
}

// Writes imgui.ini (window positions of the Learn windows) atomically, like
// the session, instead of ImGui's own fopen/fwrite that a kill can truncate.
void save_imgui_ini(const std::string& path) {
  if (path.empty()) return;
  std::size_t size = 0;
  const char* text = ImGui::SaveIniSettingsToMemory(&size);
  if (const std::string err = gui::write_file_atomic(path, std::string_view(text, size));
      !err.empty())
    std::cerr << "warning: the window layout was not saved: " << err << "\n";
  ImGui::GetIO().WantSaveIniSettings = false;
}

// ---------------------------------------------------------------------------
// 3. Setup: the session, the launch flags, the window, ImGui, the worker

// What the modes share: the options, the state, the window and the frame
// bookkeeping. It never moves (GLFW holds a pointer to `wake`).
struct App {
  gui::LaunchOptions opts;
  gui::AppState state;
  std::filesystem::path session_file;  // empty: no config folder
  gui::SessionRestore restored;
  GLFWwindow* window = nullptr;
  Wake wake;
  std::string ini_path;  // imgui.ini; empty: not read or written
  std::optional<gui::OffscreenFigureRenderer> figure_renderer;

  int busy_frames = 3;       // frames to draw before the next wait: ImGui settles over a few
  int frame = 0;             // frames drawn
  std::uint64_t inputs = 0;  // input events the frames drawn so far have taken in
  std::uint64_t shown_version = 0;
  unsigned reported_gl_errors = 0;
  std::string status_file;  // $ATTNSCOPE_STATUS_FILE; empty: none (write_status)
  double ui_cpu_ms = 0;     // the UI thread's CPU time for the last frame's UI (draw_ui)
};

// The calling thread's CPU time in milliseconds.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// The state: the book's preset, the last session (unless a flag says
// otherwise), then the launch flags. Returns an exit code when a flag is bad.
std::optional<int> setup_state(App& app) {
  const gui::LaunchOptions& opts = app.opts;
  gui::AppState& state = app.state;
  state.load_preset("book");
  const auto dir = gui::config_dir();
  app.session_file = dir.empty() ? dir : dir / "session.json";
  // A save cut short (the app was killed mid-write) leaves its temporary file.
  if (opts.save_session() && !dir.empty()) core::remove_stale_temp_files(dir);
  if (opts.restore_session() && !dir.empty()) {
    app.restored = gui::load_session(app.session_file, state, opts.save_session());
    state.ui.session_warning = app.restored.warning;
    if (!app.restored.warning.empty()) std::cerr << "warning: " << app.restored.warning << "\n";
  }
  try {
    gui::apply_launch_options(opts, state, !app.restored.text.empty());
  } catch (const core::ParseError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  // FILE, after the flags: the file a launcher or the shell asked to open.
  if (opts.open_file) gui::open_dropped_file(state, *opts.open_file);
  // A screenshot, a frame benchmark or an export is about the run its flags
  // name, not a learner's first visit: no welcome card in the picture.
  if (opts.screenshot || opts.bench_frames || opts.export_png) {
    state.ui.welcome_dismissed = true;
    // ... and a model the session reopens is in it: wait for its load.
    state.poll_model_loader(true);
  }
  // imgui.ini lives next to the session, never in the working directory;
  // main reads and writes it (atomically), not ImGui.
  app.ini_path = dir.empty() || !opts.save_session() ? std::string() : (dir / "imgui.ini").string();
  return std::nullopt;
}

// The GLFW window and its GL context, ImGui with its backends, fonts and
// style, GL textures for the heatmaps and the off-screen figure renderer.
// Returns an exit code when there is no display or no OpenGL 3.
std::optional<int> setup_window(App& app) {
  const gui::LaunchOptions& opts = app.opts;
  gui::AppState& state = app.state;
  // Before the window exists: a desktop (or a test) that sees the window may
  // send SIGTERM at once, and the default action would end the app unsaved.
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  if (!glfwInit()) {
    std::cerr << "error: attnscope needs a graphical session, but no display could be opened ("
              << glfw_error() << "); run it from a desktop session, or under xvfb-run\n";
    return 1;
  }
  const char* glsl = nullptr;
  if (opts.export_png) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);  // --export-png: off screen only
  app.window = create_window(state.ui.window_width, state.ui.window_height, glsl);
  GLFWwindow* window = app.window;
  if (!window) {
    std::cerr << "error: attnscope needs a graphical session with OpenGL 3, but no window could be "
                 "created ("
              << glfw_error() << ")\n";
    glfwTerminate();
    return 1;
  }
  set_window_icon(window);
  glfwSetWindowUserPointer(window, &app.wake);
  install_wake_callbacks(window);
  glfwMakeContextCurrent(window);
  glfwSwapInterval(opts.bench_frames ? 0 : 1);  // --bench-frames: as fast as frames go

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  if (!app.ini_path.empty()) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(app.ini_path, ec))
      ImGui::LoadIniSettingsFromDisk(app.ini_path.c_str());
  }
  float xs = 1.0f, ys = 1.0f;
  glfwGetWindowContentScale(window, &xs, &ys);
  state.ui.content_scale = xs;
  // A screenshot shows the app as laid out, not wherever the pointer happens to be.
  if (opts.screenshot) io.ConfigFlags |= ImGuiConfigFlags_NoMouse;
  gui::rebuild_fonts(state.ui);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  install_keyboard_callbacks(window);
  ImGui_ImplOpenGL3_Init(glsl);
  state.textures.set_factory([] { return std::make_unique<gui::GlTexture>(); });
  // Heatmap figures off screen (PNG export, --export-png): needs the GL context.
  const gui::OffscreenFigureRenderer& renderer = app.figure_renderer.emplace();
  state.files.render_png = [&renderer](const attnscope::figure::Heatmap& h, int scale) {
    return renderer.render(h, scale);
  };
  state.files.wake_ui = [] { glfwPostEmptyEvent(); };
  state.files.render_grid_png = [&renderer](const attnscope::figure::HeadGrid& g, int scale) {
    return renderer.render(g, scale);
  };
  return std::nullopt;
}

// The engine's thread: recomputing never blocks a frame; the worker wakes
// the idle loop when a result is ready. --screenshot computes on this
// thread instead, so that the picture shows the final trace.
void start_worker(App& app) {
  if (app.opts.screenshot) return;
  app.state.start_worker([] { glfwPostEmptyEvent(); });
  app.state.recompute_if_dirty();  // post the first job now; the first frame need not wait
}

// The worker, imgui.ini (when kept), GL textures, ImGui and the window, in that order.
void shut_down(App& app) {
  app.state.worker.reset();  // before GLFW goes: the worker's wake-up calls glfwPostEmptyEvent
  app.state.files.native.reset();  // closes a desktop file dialog still open, for the same reason
  app.state.model.browse.reset();
  if (!app.ini_path.empty()) save_imgui_ini(app.ini_path);
  app.state.textures.clear();  // GL textures go before the context
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(app.window);
  glfwTerminate();
}

// ---------------------------------------------------------------------------
// 4. One frame, shared by every mode

// What a frame left in the back buffer.
struct FrameDrawn {
  int fbw = 0, fbh = 0;  // the framebuffer's size
  bool adopted = false;  // a new trace was shown in it
};

// Draws one frame into the back buffer (the caller swaps): fonts rebuilt
// when the scale changed, the UI, a GL error reported once per kind, the
// F12 screenshot; keeps `busy_frames` up while something is settling.
FrameDrawn draw_frame(App& app) {
  gui::AppState& state = app.state;
  Wake& wake = app.wake;
  if (wake.events > 0 || wake.releases > 0) {
    app.busy_frames = 3;
    app.inputs += static_cast<std::uint64_t>(wake.events + wake.releases);
    wake.events = 0;
    wake.releases = 0;
  } else if (app.busy_frames > 0) {
    --app.busy_frames;
  }
  for (const std::string& path : wake.dropped) gui::open_dropped_file(state, path);
  wake.dropped.clear();
  // A model loads on its own thread: keep drawing (the elapsed time) until it is in.
  if (state.model.loader->loading()) app.busy_frames = std::max(app.busy_frames, 1);
  if (wake.scale_changed) {
    wake.scale_changed = false;
    float xs = 1.0f, ys = 1.0f;
    glfwGetWindowContentScale(app.window, &xs, &ys);
    state.ui.content_scale = xs;
    state.ui.fonts_dirty = true;
  }
  if (state.ui.fonts_dirty) {
    state.ui.fonts_dirty = false;
    ImGui_ImplOpenGL3_DestroyFontsTexture();
    gui::rebuild_fonts(state.ui);
    ImGui_ImplOpenGL3_CreateFontsTexture();
    app.busy_frames = 3;
  }

  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  const double ui_start = thread_cpu_ms();
  ImGui::NewFrame();
  gui::draw_ui(state);
  ImGui::Render();
  app.ui_cpu_ms = thread_cpu_ms() - ui_start;
  FrameDrawn out;
  glfwGetFramebufferSize(app.window, &out.fbw, &out.fbh);
  // Cleared in the columns' colour: they draw no background (ui.cpp).
  const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_ChildBg];
  gui::clear_framebuffer(out.fbw, out.fbh, bg.x, bg.y, bg.z);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  // A GL error is a bug (a zero-size viewport, a texture too large): say
  // so once per kind, with the framebuffer size, instead of failing silently.
  if (const unsigned err = gui::gl_error(); err != 0 && app.reported_gl_errors < 8) {
    ++app.reported_gl_errors;
    std::cerr << "warning: OpenGL error " << gui::gl_error_name(err) << " in frame " << app.frame
              << " (framebuffer " << out.fbw << "x" << out.fbh << ")\n";
  }
  // F12 / View > Screenshot: the back buffer, once the menu that asked has closed.
  if (state.files.screenshot_countdown > 0 && --state.files.screenshot_countdown == 0)
    gui::save_window_screenshot(state, gui::read_window(out.fbw, out.fbh));
  if (state.files.screenshot_countdown > 0) app.busy_frames = std::max(app.busy_frames, 1);
  ++app.frame;
  after_frame_keys(wake);
  // Typing while the worker computes the text's run: the frame that shows
  // the typed character is enough until the result wakes the loop. The
  // settling frames would only redraw the same screen, and in software GL
  // each takes the CPU the run needs (on 2 cores, 3 frames made a
  // keystroke's new attention ~70 ms later).
  if (state.computing() && !state.preparing() && ImGui::GetIO().WantTextInput) app.busy_frames = 0;
  if (state.dirty || state.preparing()) app.busy_frames = std::max(app.busy_frames, 1);
  out.adopted = state.trace_version != app.shown_version;           // a new trace this frame
  if (out.adopted) app.busy_frames = std::max(app.busy_frames, 3);  // the layout settles over a few
  app.shown_version = state.trace_version;
  return out;
}

// The Get a model window's download as the status file names it.
const char* pull_state_id(gui::ModelDownload::State s) {
  switch (s) {
    case gui::ModelDownload::State::Running:
      return "running";
    case gui::ModelDownload::State::Done:
      return "done";
    case gui::ModelDownload::State::Failed:
      return "failed";
    case gui::ModelDownload::State::Cancelled:
      return "cancelled";
    default:
      return "idle";
  }
}

// $ATTNSCOPE_STATUS_FILE: after every frame on screen, what it shows, one
// "key value" line each (frame, inputs, source, tokens, text_bytes,
// shown_tokens, busy, error, pull: the Get a model window's download, model: the
// open model's path, ui_ms: the UI thread's CPU time for the frame's UI, get_window: 1 while the
// Get a model window is open, typing: 1 while a text field has the keyboard). Tests that drive the
// window from outside (xdotool) wait with it for the frame that shows their edit (inputs: the input
// events taken in so far, so a test knows which frame saw its click), and tell an app that died
// from one that is slow, without reading pixels. Written to a temporary file and renamed, so a
// reader never sees half of it; not synced to disk.
void write_status(App& app) {
  const gui::AppState& state = app.state;
  const gui::ModelState& m = state.model;
  int shown = 0;
  if (state.model_source())
    shown = m.overview ? m.overview->tokens : 0;
  else if (state.trace)
    shown = state.trace->num_tokens();
  std::string error = state.error;
  std::replace(error.begin(), error.end(), '\n', ' ');
  const bool busy = state.dirty || state.computing() || state.preparing() || m.loader->loading();
  const std::string text =
      "frame " + std::to_string(app.frame) + "\ninputs " + std::to_string(app.inputs) +
      "\nsource " + std::string(gui::source_id(state.source)) + "\ntokens " +
      std::to_string(state.model_source() ? m.typed.tokens.size() : state.inputs.tokens.size()) +
      "\ntext_bytes " + std::to_string(m.typed.text.size()) + "\nshown_tokens " +
      std::to_string(shown) + "\nbusy " + (busy ? "1" : "0") + "\nerror " + error + "\npull " +
      pull_state_id(m.get.download->state()) + "\nmodel " + m.model_path + "\nui_ms " +
      std::to_string(app.ui_cpu_ms) + "\nget_window " + (m.get.open ? "1" : "0") + "\ntyping " +
      (ImGui::GetIO().WantTextInput ? "1" : "0") + "\n";
  const std::string tmp = app.status_file + ".tmp";
  bool written = false;
  if (std::FILE* f = std::fopen(tmp.c_str(), "wb")) {
    written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    written = std::fclose(f) == 0 && written;
  }
  std::error_code ec;
  if (written) std::filesystem::rename(tmp, app.status_file, ec);
  if (!written || ec) {
    std::cerr << "warning: cannot write the status file '" << app.status_file
              << "'; no more status is written\n";
    app.status_file.clear();
  }
}

// After the frame: swap it to the screen (and say so in the status file,
// when asked for one); the app's Quit closes the window.
void show_frame(App& app) {
  glfwSwapBuffers(app.window);
  if (!app.status_file.empty()) write_status(app);
  if (app.state.ui.quit_requested) glfwSetWindowShouldClose(app.window, GLFW_TRUE);
}

// ---------------------------------------------------------------------------
// 5. The modes

// The interactive loop: wait when idle, draw a few frames after every
// event, draw nothing while minimised, autosave the session shortly after
// changes and on exit.
void run_interactive(App& app) {
  gui::AppState& state = app.state;
  Wake& wake = app.wake;
  GLFWwindow* window = app.window;
  ImGuiIO& io = ImGui::GetIO();
  // The last session, saved shortly after every change (autosave.hpp) and on
  // exit; not when a file that could not be set aside would be overwritten.
  std::unique_ptr<gui::Autosave> autosave;
  if (app.opts.save_session() && !app.session_file.empty() && app.restored.may_save)
    autosave = std::make_unique<gui::Autosave>(app.session_file, app.restored.text);
  using Clock = gui::Autosave::Clock;
  if (autosave) autosave->note_activity(Clock::now());  // launch flags may have changed the run

  bool minimised = false;
  while (!glfwWindowShouldClose(window) && !g_stop_signal) {
    bool draw = true;
    // Typing while the worker runs the text: only a press or a character,
    // the result, or the caret's blink draws a frame (in software GL a frame
    // takes the CPU the run needs).
    const bool typing_wait = state.computing() && !state.preparing() && io.WantTextInput;
    const bool waiting_input = wake.events > 0 || (wake.releases > 0 && !typing_wait);
    if (!minimised && (app.busy_frames > 0 || state.dirty || waiting_input)) {
      glfwPollEvents();
    } else {
      // Idle (or minimised): sleep until input arrives. The timeout serves the
      // text caret's blink, signals and a due autosave; a wake-up with no
      // event draws nothing, unless the worker is computing (its result posts
      // an empty event).
      double timeout = 0.5;
      if (autosave)
        if (const auto due = autosave->time_to_check(Clock::now()))
          timeout = std::clamp(std::chrono::duration<double>(*due).count(), 0.001, 0.5);
      // A download under way: its progress is drawn five times a second.
      const bool pulling = state.model.get.download->running();
      if (pulling) timeout = std::min(timeout, 0.2);
      const auto slept_from = Clock::now();
      glfwWaitEventsTimeout(timeout);
      const bool timed_out =
          Clock::now() - slept_from >= std::chrono::duration<double>(timeout * 0.95);
      // While the desktop's file dialog is open, its closing posts the wake-up.
      const bool elsewhere = state.files.native || state.model.browse || pulling;
      if (typing_wait)
        draw = wake.events > 0 || timed_out || elsewhere ||
               (state.worker && state.worker->has_result());
      else
        draw = wake.events > 0 || wake.releases > 0 || io.WantTextInput || state.dirty ||
               state.computing() || elsewhere;
    }
    if (autosave) {
      if (wake.events > 0) autosave->note_activity(Clock::now());
      autosave->poll(state, Clock::now());
      if (show_autosave_report(*autosave, state, wake)) draw = true;
    }
    if (!app.ini_path.empty() && io.WantSaveIniSettings) save_imgui_ini(app.ini_path);
    // Minimised: no frames at all (a zero-size viewport draws nothing, and
    // ImGui would lay out a window of no size); input waits for the restore.
    const bool was_minimised = minimised;
    minimised = nothing_to_draw(window);
    if (minimised) {
      wake.keyboard->flush();  // keys sent meanwhile: none waits for a frame
      wake.events = 0;
      wake.releases = 0;
      continue;
    }
    if (was_minimised)
      app.busy_frames = 3;  // restored: draw the window again at once
    else if (!draw)
      continue;
    const FrameDrawn drawn = draw_frame(app);
    if (autosave) {
      if (drawn.adopted) autosave->note_activity(Clock::now());  // fix_selection may move the step
      int ww = 0, wh = 0;  // the window size is part of the session's view
      glfwGetWindowSize(window, &ww, &wh);
      if (ww > 0 && wh > 0) {
        state.ui.window_width = ww;
        state.ui.window_height = wh;
      }
    }
    show_frame(app);
  }
  state.worker.reset();  // the engine stops before the last save and before GLFW goes
  if (!autosave) return;
  int w = 0, h = 0;
  glfwGetWindowSize(window, &w, &h);
  if (w > 0 && h > 0 && !glfwGetWindowAttrib(window, GLFW_ICONIFIED)) {
    state.ui.window_width = w;
    state.ui.window_height = h;
  }
  if (const std::string err = autosave->flush(state); !err.empty())
    std::cerr << "warning: the session was not saved: " << err << "\n";
}

// --screenshot: frames without idling until the layout stopped changing
// for a few and no font rebuild is pending (or 60 frames), then the back buffer as a PNG. False
// when the file could not be written.
bool run_screenshot(App& app, const std::string& path) {
  int same_frames = 0, last_vertices = -1;
  while (!glfwWindowShouldClose(app.window) && !g_stop_signal) {
    glfwPollEvents();
    const FrameDrawn drawn = draw_frame(app);
    const int vertices = ImGui::GetDrawData()->TotalVtxCount;
    same_frames = vertices == last_vertices ? same_frames + 1 : 0;
    last_vertices = vertices;
    // Glyphs just collected are baked at the next frame: wait for it.
    const bool settled = same_frames >= 3 && !app.state.ui.fonts_dirty;
    if ((app.frame >= 4 && settled) || app.frame >= 60) {
      const auto pixels = gui::read_framebuffer(drawn.fbw, drawn.fbh);
      if (gui::write_png(path, drawn.fbw, drawn.fbh, pixels)) return true;
      std::cerr << "error: cannot write the screenshot to '" << path << "'\n";
      return false;
    }
    show_frame(app);
  }
  return true;
}

// --bench-frames with a model, after the frames: 20 characters typed one
// at a time (stopping early when the text is refused, e.g. too long), each once the previous one's
// attention is on screen, timed from the edit to the frame that shows its result. Frames are drawn
// as the app's loop draws them: one for the keystroke, then none until the worker wakes the loop
// (or the new heatmaps are still being prepared).
void type_into_model(App& app, gui::FrameBench& bench) {
  gui::AppState& state = app.state;
  constexpr int kEdits = 20;
  while (bench.edits_shown() < kEdits && !glfwWindowShouldClose(app.window) && !g_stop_signal) {
    state.model.typed.text += bench.edits_shown() % 2 == 0 ? "e" : " ";
    state.model_text_changed();
    bench.edited();
    for (bool shown = false; !shown && !g_stop_signal;) {
      if (state.computing() && !state.preparing()) glfwWaitEventsTimeout(0.5);
      glfwPollEvents();
      shown = draw_frame(app).adopted;
      show_frame(app);
      if (!state.error.empty()) return;  // e.g. the text outgrew the model: nothing to time
    }
    bench.edit_shown();
  }
}

// --bench-frames N: frames as fast as they go until N show a trace, each
// frame's times on stdout, then a summary naming the run and the GL driver.
void run_frame_bench(App& app, int frames) {
  gui::AppState& state = app.state;
  gui::FrameBench bench;
  // A model: its load happened before the window (apply_launch_options).
  const bool model = state.model_source() && state.model.is_open();
  if (model) bench.source_loaded();
  while (!glfwWindowShouldClose(app.window) && !g_stop_signal) {
    // While the worker computes and nothing is being prepared the app's
    // loop sleeps (frames would only take the worker's CPU): so does this.
    if (state.computing() && !state.preparing()) glfwWaitEventsTimeout(0.25);
    bench.begin_frame();
    glfwPollEvents();
    const FrameDrawn drawn = draw_frame(app);
    show_frame(app);
    if (app.frame == 1) bench.first_frame_shown();
    if (drawn.adopted && bench.frames_with_trace() == 0) bench.first_trace_shown();
    bench.end_frame(state.trace != nullptr, drawn.adopted       ? "trace adopted"
                                            : state.computing() ? "computing"
                                                                : nullptr);
    if (bench.frames_with_trace() >= frames) break;
  }
  if (model) type_into_model(app, bench);
  std::string what = "no trace";
  if (const auto& t = state.trace) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s T=%d d_in=%d d_out=%d heads=%d dropout=%g %s, step %s",
                  t->producer().c_str(), t->num_tokens(), t->d_in, t->projected_width(),
                  t->heads_shown(), t->config.dropout, t->config.training ? "training" : "eval",
                  std::string(gui::step_id(state.step)).c_str());
    what = buf;
  }
  int fbw = 0, fbh = 0;
  glfwGetFramebufferSize(app.window, &fbw, &fbh);
  bench.print(stdout, what + "; framebuffer " + std::to_string(fbw) + "x" + std::to_string(fbh) +
                          "; GL " + gui::gl_renderer());
}

// --export-png DIR: every stage as a PNG, before any frame; closes the
// window. Returns the exit code.
int run_export_png(App& app) {
  const int status = gui::export_pngs(app.state, *app.opts.export_png, app.opts.export_scale);
  glfwSetWindowShouldClose(app.window, GLFW_TRUE);  // no frames: straight to shutdown
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  App app;
  if (const auto parsed = gui::parse_launch_options(argc, argv, app.opts); !parsed.run)
    return parsed.exit_code;
  if (const char* status = std::getenv("ATTNSCOPE_STATUS_FILE")) app.status_file = status;
  if (const auto exit_code = setup_state(app)) return *exit_code;
  if (const auto exit_code = setup_window(app)) return *exit_code;

  const gui::LaunchOptions& opts = app.opts;
  int status = 0;
  if (opts.export_png) status = run_export_png(app);
  start_worker(app);
  app.shown_version = app.state.trace_version;
  if (opts.screenshot) {
    if (!run_screenshot(app, *opts.screenshot)) status = 1;
  } else if (opts.bench_frames) {
    run_frame_bench(app, *opts.bench_frames);
  } else {
    run_interactive(app);
  }
  shut_down(app);
  return status;
}
