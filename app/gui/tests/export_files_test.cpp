// export_files_test.cpp: the app's file features without a window: stage
// exports (names, never overwriting, the notice, unwritable folders), Export
// all (every stage + data + a session that reproduces the run), session save
// -> open -> identical trace, and every bad import giving its message and
// changing nothing. PNG bytes come from a stand-in renderer here; the real
// off-screen renderer is tested under Xvfb (export_png_test.cpp).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "attnscope/attention/attention.hpp"
#include "attnscope/base/rng.hpp"
#include "attnscope/book/pytorch_code.hpp"
#include "attnscope/formats/formats.hpp"
#include "attnscope/io/io.hpp"
#include "attnscope/io/session.hpp"
#include "attnscope/io/weights.hpp"
#include "export/export_job.hpp"
#include "export/files.hpp"
#include "figure/heatmap_figure.hpp"
#include "state/session.hpp"
#include "temp_dir.hpp"

namespace attnscope::gui {
namespace {

namespace fs = std::filesystem;

class Files : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "out");
    state_.load_preset("book");
    state_.config.variant = core::Variant::MultiheadWrapper;
    state_.config.num_heads = 2;
    state_.files.export_folder = dir_ / "out";
    // A stand-in for the GL renderer: a figure-sized image, 1 px per logical px x scale.
    state_.files.render_png = [](const figure::Heatmap& h, int scale) {
      const figure::Scene sc = figure::layout_heatmap(h);
      RenderedImage img;
      img.width = sc.width * scale;
      img.height = sc.height * scale;
      img.rgba.assign(
          static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.height) * 4, 200);
      return img;
    };
    state_.finish_recompute();
    ASSERT_TRUE(state_.trace);
  }
  void TearDown() override { ::chmod((dir_ / "out").c_str(), 0755); }  // so temp_ can go
  std::set<std::string> files_in(const fs::path& d) {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(d)) names.insert(e.path().filename().string());
    return names;
  }
  fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  core::testing::TempDir temp_;  // a fresh folder per test, removed afterwards
  const fs::path dir_ = temp_.path();
  AppState state_;
};

// Everything a bad import must leave as it was.
struct Snapshot {
  explicit Snapshot(const AppState& s)
      : tokens(s.inputs.tokens),
        embeddings(s.inputs.embeddings),
        variant(s.config.variant),
        d_out(s.config.d_out),
        params(s.explicit_parameters),
        version(s.trace_version) {}
  void expect_same(const AppState& s) const {
    EXPECT_EQ(s.inputs.tokens, tokens);
    EXPECT_EQ(s.inputs.embeddings, embeddings);
    EXPECT_EQ(s.config.variant, variant);
    EXPECT_EQ(s.config.d_out, d_out);
    EXPECT_EQ(s.explicit_parameters, params);
    EXPECT_FALSE(s.dirty);
    EXPECT_EQ(s.trace_version, version);
  }
  std::vector<std::string> tokens;
  core::RowMatrix embeddings;
  core::Variant variant;
  int d_out;
  std::shared_ptr<const core::Parameters> params;
  std::uint64_t version;
};

void expect_same_trace(const core::Trace& a, const core::Trace& b) {
  ASSERT_EQ(a.stages.size(), b.stages.size());
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.explicit_weights, b.explicit_weights);
  for (std::size_t k = 0; k < a.stages.size(); ++k) {
    EXPECT_EQ(a.stages[k].id, b.stages[k].id);
    EXPECT_EQ(a.stages[k].head, b.stages[k].head);
    // Bit for bit; NaN-free, and -inf == -inf.
    EXPECT_TRUE(a.stages[k].data().cwiseEqual(b.stages[k].data()).all()) << a.stages[k].id;
  }
}

TEST_F(Files, AStageIsExportedUnderTheNamingRuleAndNeverOverwritten) {
  const core::Stage& w = *state_.trace->find("weights", 1);
  const auto a = export_stage(state_, w, ExportKind::Npy);
  const auto b = export_stage(state_, w, ExportKind::Npy);
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  EXPECT_TRUE(a->filename().string().starts_with("weights_h1_multihead_wrapper_"));
  EXPECT_EQ(a->extension(), ".npy");
  // The same second: -1. A slow (sanitized) run may cross into the next
  // second between the two exports: then the later second names b.
  const std::string sa = a->stem().string(), sb = b->stem().string();
  if (sb.starts_with(sa))
    EXPECT_EQ(sb, sa + "-1");
  else
    EXPECT_GT(sb, sa) << "the clock ticked between the two exports";
  EXPECT_EQ(core::parse_npy(core::read_import_file(*a), "a", core::NpyRank::Matrix,
                            core::NonFinite::Allow),
            w.data());
  // The notice names the full path.
  EXPECT_FALSE(state_.files.notice.error);
  EXPECT_EQ(state_.files.notice.path, b->string());
  EXPECT_EQ(state_.files.recent_folders.front(), (dir_ / "out").string());
}

TEST_F(Files, EveryKindOfExportWritesItsFormat) {
  const core::Stage& m = *state_.trace->find("masked_scores", 0);
  for (ExportKind k :
       {ExportKind::Png, ExportKind::Svg, ExportKind::Csv, ExportKind::Npy, ExportKind::Json}) {
    const auto p = export_stage(state_, m, k, 2);
    ASSERT_TRUE(p) << state_.files.notice.message;
    EXPECT_EQ(p->extension().string(), std::string(export_extension(k)));
    const std::string bytes = core::read_import_file(*p);
    if (k == ExportKind::Png) {
      EXPECT_EQ(bytes.substr(1, 3), "PNG");
    }
    if (k == ExportKind::Svg) {
      // Drawn as the screen draws it: the palette and the −∞ cells.
      EXPECT_NE(bytes.find("class=\"cell masked\""), std::string::npos);
      EXPECT_NE(bytes.find("\xE2\x88\x92\xE2\x88\x9E"), std::string::npos);
    }
    if (k == ExportKind::Json) {
      EXPECT_EQ(core::parse_stage_json(bytes, "j").stage.data().size(), m.data().size());
    }
  }
}

TEST_F(Files, SvgUsesThePaletteAndNumberSettingOnScreen) {
  const core::Stage& s = *state_.trace->find("scores", 0);
  state_.ui.palette = Palette::ColorBlindSafe;
  state_.ui.show_values = false;
  const std::string svg = stage_bytes(state_, *state_.trace, s, ExportKind::Svg, 1);
  const auto range = figure::value_range(s.data(), figure::ScaleKind::Diverging);
  // The screen's texture colours (colorize), cell for cell.
  const auto c = figure::colorize(s.data(), range, figure::Colormap::PuOr).at(1, 2);
  EXPECT_NE(svg.find(figure::hex(c)), std::string::npos);
  EXPECT_EQ(svg.find("class=\"value\""), std::string::npos);
}

TEST_F(Files, SvgColoursEachRowOnItsOwnScaleWhenTheScreenDoes) {
  const core::Stage& s = *state_.trace->find("weights", 0);
  const auto rows =
      figure::colorize_rows(s.data(), figure::ScaleKind::Sequential, figure::Colormap::Viridis);
  const auto range = figure::value_range(s.data(), figure::ScaleKind::Sequential);
  const auto whole = figure::colorize(s.data(), range, figure::Colormap::Viridis);
  // Row 1 of a causal weights matrix: on the matrix's scale its larger
  // weight is below the top, on its own scale it is the top.
  const int top = s.data()(1, 0) > s.data()(1, 1) ? 0 : 1;
  ASSERT_NE(rows.at(top, 1), whole.at(top, 1));
  const std::string matrix_svg = stage_bytes(state_, *state_.trace, s, ExportKind::Svg, 1);
  EXPECT_EQ(matrix_svg.find("row max"), std::string::npos);
  state_.ui.row_scale = figure::RowScale::On;
  const std::string row_svg = stage_bytes(state_, *state_.trace, s, ExportKind::Svg, 1);
  // Every cell rect's fill, in order: the row-by-row colours (weights hold no -inf).
  std::vector<std::string> fills;
  const std::string cell = "<rect class=\"cell\"";
  for (auto at = row_svg.find(cell); at != std::string::npos; at = row_svg.find(cell, at + 1)) {
    const auto f = row_svg.find("fill=", at);
    fills.push_back(row_svg.substr(f, row_svg.find("/>", f) - f));
  }
  ASSERT_EQ(fills.size(), static_cast<std::size_t>(s.data().size()));
  for (int r = 0; r < rows.height; ++r)
    for (int c = 0; c < rows.width; ++c)
      EXPECT_NE(
          fills[static_cast<std::size_t>(r * rows.width + c)].find(figure::hex(rows.at(c, r))),
          std::string::npos)
          << r << "," << c;
  EXPECT_NE(row_svg.find("row max"), std::string::npos);
  EXPECT_NE(row_svg.find(figure::kRowScopeNote), std::string::npos);
}

TEST_F(Files, AMissingOrUnwritableFolderGivesAClearMessageAndWritesNothing) {
  state_.files.export_folder = dir_ / "missing";
  EXPECT_FALSE(export_stage(state_, state_.trace->stages[0], ExportKind::Csv));
  EXPECT_TRUE(state_.files.notice.error);
  EXPECT_NE(state_.files.notice.message.find("missing"), std::string::npos)
      << state_.files.notice.message;
  EXPECT_FALSE(fs::exists(dir_ / "missing"));  // a chosen folder is never created
  if (::geteuid() != 0) {                      // root writes anywhere
    state_.files.export_folder = dir_ / "out";
    ::chmod((dir_ / "out").c_str(), 0555);
    EXPECT_FALSE(export_stage(state_, state_.trace->stages[0], ExportKind::Csv));
    EXPECT_NE(state_.files.notice.message.find("permission denied"), std::string::npos)
        << state_.files.notice.message;
    EXPECT_TRUE(files_in(dir_ / "out").empty());
  }
}

TEST_F(Files, WithoutAGlContextPngExportSaysSoAndWritesNothing) {
  state_.files.render_png = nullptr;
  EXPECT_FALSE(export_stage(state_, state_.trace->stages[0], ExportKind::Png, 2));
  EXPECT_NE(state_.files.notice.message.find("OpenGL"), std::string::npos);
  EXPECT_TRUE(files_in(dir_ / "out").empty());
}

TEST_F(Files, ExportAllWritesEveryStageAsPngAndDataPlusASessionThatReproducesIt) {
  state_.files.all_format = core::DataFormat::Csv;
  state_.files.png_scale = 1;
  const auto folder = export_all_stages(state_);
  ASSERT_TRUE(folder) << state_.files.notice.message;
  EXPECT_EQ(folder->parent_path(), dir_ / "out");
  EXPECT_TRUE(folder->filename().string().starts_with("attnscope_multihead_wrapper_"));
  const auto names = files_in(*folder);
  const std::size_t n = state_.trace->stages.size();
  std::size_t pngs = 0, csvs = 0;
  for (const auto& f : names) {
    pngs += f.ends_with(".png");
    csvs += f.ends_with(".csv");
  }
  EXPECT_EQ(pngs, n);
  EXPECT_EQ(csvs, n);
  ASSERT_TRUE(names.count("session.json"));
  const core::Session s = core::load_session(*folder / "session.json");
  expect_same_trace(core::run_session(s), *state_.trace);
  EXPECT_EQ(state_.files.notice.path, folder->string());
}

TEST_F(Files, ExportAllIsAllOrNothing) {
  int calls = 0;
  state_.files.render_png = [&calls](const figure::Heatmap&, int) -> RenderedImage {
    if (++calls == 3) throw std::runtime_error("the GPU gave up");
    return RenderedImage{1, 1, {0, 0, 0, 255}};
  };
  EXPECT_FALSE(export_all_stages(state_));
  EXPECT_TRUE(state_.files.notice.error);
  EXPECT_NE(state_.files.notice.message.find("the GPU gave up"), std::string::npos);
  EXPECT_TRUE(files_in(dir_ / "out").empty());  // the new folder is gone again
}

// ---------------------------------------------------------------------------
// Export all as a job beside the frames (export/export_job.hpp)

// A 2 x 2 image per figure: these tests are about the job, not the pixels
// (figure-sized images of one colour take stb tens of ms each).
RenderedImage tiny_png(const figure::Heatmap&, int) {
  return RenderedImage{2, 2, std::vector<std::uint8_t>(16, 200)};
}

// Frames' worth of poll_export until the export has finished (or 10 s).
void poll_until_done(AppState& state) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (state.files.exporting() && std::chrono::steady_clock::now() < deadline) {
    poll_export(state);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_FALSE(state.files.exporting()) << "the export did not finish";
}

// The worker writes the data files while the UI has rendered nothing; each
// step hands it one more figure, and the count only grows, to every file.
TEST_F(Files, ExportJobProgressAdvancesWithEachRenderedFigure) {
  state_.files.render_png = tiny_png;
  ASSERT_TRUE(start_export_all(state_));
  const std::shared_ptr<ExportJob> job = state_.files.export_job;
  const auto n = static_cast<int>(state_.trace->stages.size());
  EXPECT_EQ(job->progress().total, 2 * n + 1);
  auto wait_for = [&](int done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (job->progress().done < done && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return job->progress().done;
  };
  EXPECT_EQ(wait_for(n), n);  // the data files: no figure rendered yet
  EXPECT_EQ(job->progress().done, n);
  job->step(state_.files.render_png, 0);  // one figure
  EXPECT_EQ(wait_for(n + 1), n + 1);
  EXPECT_FALSE(job->finished());
  poll_until_done(state_);
  EXPECT_EQ(job->progress().done, 2 * n + 1);
  EXPECT_EQ(job->status(), ExportJob::Status::Done);
  EXPECT_FALSE(state_.files.notice.error) << state_.files.notice.message;
}

// The job names its files as a synchronous export of every stage does.
TEST_F(Files, ExportJobWritesTheFilesASynchronousExportWrites) {
  state_.files.render_png = tiny_png;
  state_.files.all_format = core::DataFormat::Json;
  ASSERT_TRUE(start_export_all(state_));
  const std::shared_ptr<ExportJob> job = state_.files.export_job;
  poll_until_done(state_);
  ASSERT_EQ(job->status(), ExportJob::Status::Done) << job->error();
  std::vector<const core::Stage*> stages;
  for (const core::Stage& st : state_.trace->stages) stages.push_back(&st);
  const fs::path reference = dir_ / "reference";
  fs::create_directories(reference);
  const auto bytes = [](const core::Trace&, const core::Stage&) { return std::string("x"); };
  core::export_stages(*state_.trace, stages, reference, ".png", bytes, job->spec().time);
  core::export_stages(*state_.trace, stages, reference, ".json", bytes, job->spec().time);
  std::set<std::string> expected = files_in(reference);
  expected.insert("session.json");
  EXPECT_EQ(files_in(job->spec().folder), expected);
  EXPECT_EQ(state_.files.notice.path, job->spec().folder.string());
}

TEST_F(Files, CancellingExportAllLeavesNothingBehind) {
  state_.files.render_png = tiny_png;
  state_.files.export_budget_ms = 0;  // one figure a frame
  ASSERT_TRUE(start_export_all(state_));
  const fs::path folder = state_.files.export_job->spec().folder;
  poll_export(state_);
  poll_export(state_);
  EXPECT_TRUE(fs::exists(folder));
  cancel_export(state_);
  poll_until_done(state_);
  EXPECT_FALSE(fs::exists(folder));
  EXPECT_TRUE(files_in(dir_ / "out").empty());
  EXPECT_NE(state_.files.notice.message.find("cancelled"), std::string::npos)
      << state_.files.notice.message;
}

TEST_F(Files, AWriteThatFailsInTheWorkerRemovesTheFolder) {
  state_.files.render_png = tiny_png;
  ASSERT_TRUE(start_export_all(state_));
  const fs::path folder = state_.files.export_job->spec().folder;
  // session.json is written last and never over a file: this one makes it fail.
  std::ofstream(folder / "session.json") << "taken";
  poll_until_done(state_);
  EXPECT_TRUE(state_.files.notice.error);
  EXPECT_NE(state_.files.notice.message.find("session.json"), std::string::npos)
      << state_.files.notice.message;
  EXPECT_FALSE(fs::exists(folder));
  EXPECT_TRUE(files_in(dir_ / "out").empty());
}

// Closing the app destroys the state: the export stops and takes its folder.
TEST_F(Files, ClosingTheAppDuringExportAllRemovesItsFolder) {
  state_.files.render_png = tiny_png;
  auto app = std::make_unique<AppState>();
  app->load_preset("book");
  app->files.export_folder = dir_ / "out";
  app->files.render_png = state_.files.render_png;
  app->files.export_budget_ms = 0;
  app->finish_recompute();
  ASSERT_TRUE(start_export_all(*app));
  const fs::path folder = app->files.export_job->spec().folder;
  poll_export(*app);
  app.reset();
  EXPECT_FALSE(fs::exists(folder));
  EXPECT_TRUE(files_in(dir_ / "out").empty());
}

// The job holds the trace it started with: a new run on screen meanwhile
// changes none of its files.
TEST_F(Files, ExportAllKeepsTheRunItStartedWith) {
  state_.files.render_png = tiny_png;
  const std::shared_ptr<const core::Trace> before = state_.trace;
  state_.files.export_budget_ms = 0;
  ASSERT_TRUE(start_export_all(state_));
  const std::shared_ptr<ExportJob> job = state_.files.export_job;
  poll_export(state_);
  state_.config.variant = core::Variant::Simple;
  state_.mark_dirty();
  state_.finish_recompute();
  ASSERT_NE(state_.trace, before);
  poll_until_done(state_);
  ASSERT_EQ(job->status(), ExportJob::Status::Done) << job->error();
  std::size_t pngs = 0;
  for (const auto& f : files_in(job->spec().folder)) pngs += f.ends_with(".png");
  EXPECT_EQ(pngs, before->stages.size());
  expect_same_trace(core::run_session(core::load_session(job->spec().folder / "session.json")),
                    *before);
}

TEST_F(Files, SessionSaveThenOpenGivesTheIdenticalTraceWithImportedWeights) {
  // Weights from a "notebook": the seeded ones of another seed.
  core::Config other = state_.config;
  other.seed = 7;
  core::TorchGenerator gen(other.seed);
  const core::Parameters p = core::init_parameters(other, 3, gen);
  write("w.json", core::weights_json(p, other));
  ASSERT_EQ(import_weights(state_, dir_ / "w.json"), "");
  state_.config.dropout = 0.5;  // dropout masks must come back too
  state_.step = Step::Softmax;
  state_.head = 1;
  state_.finish_recompute();
  ASSERT_TRUE(state_.trace->explicit_weights);
  ASSERT_EQ(save_session_file(state_, dir_ / "s.json", false), "");
  EXPECT_NE(save_session_file(state_, dir_ / "s.json", false), "");  // exists: not replaced
  EXPECT_EQ(save_session_file(state_, dir_ / "s.json", true), "");

  AppState b;
  b.load_preset("shiny");
  ASSERT_EQ(open_session_file(b, dir_ / "s.json"), "");
  b.finish_recompute();
  ASSERT_TRUE(b.trace);
  expect_same_trace(*b.trace, *state_.trace);
  EXPECT_EQ(b.step, Step::Softmax);
  EXPECT_EQ(b.head, 1);
  EXPECT_NE(weights_origin(b), "");
  // core reads the same file as a plain session.
  expect_same_trace(core::run_session(core::load_session(dir_ / "s.json")), *state_.trace);
}

TEST_F(Files, ImportedWeightsRunInsteadOfSeededAndResetGoesBack) {
  const core::Trace seeded = *state_.trace;
  core::Config other = state_.config;
  other.seed = 99;
  core::TorchGenerator gen(other.seed);
  write("w.json", core::weights_json(core::init_parameters(other, 3, gen), other));
  ASSERT_EQ(import_weights(state_, dir_ / "w.json"), "");
  EXPECT_EQ(weights_origin(state_), (dir_ / "w.json").string());
  state_.finish_recompute();
  EXPECT_TRUE(state_.trace->explicit_weights);
  EXPECT_FALSE(
      state_.trace->find("weights", 0)->data().isApprox(seeded.find("weights", 0)->data()));
  reset_to_seeded_weights(state_);
  state_.finish_recompute();
  EXPECT_EQ(weights_origin(state_), "");
  expect_same_trace(*state_.trace, seeded);
}

// Random inputs go into the script as torch.manual_seed + torch.rand while
// they are the draw; once edited, as the numbers they now hold.
TEST_F(Files, TheScriptDrawsRandomInputsFromTheirSeed) {
  state_.input_seed = 9;
  state_.draw_random_inputs(5, 4);
  state_.finish_recompute();
  const std::string drawn = run_pytorch_script(state_);
  EXPECT_NE(drawn.find("torch.manual_seed(9)"), std::string::npos);
  EXPECT_NE(drawn.find("torch.rand(5, 4)"), std::string::npos);
  state_.inputs.embeddings(0, 0) = 0.5f;
  state_.mark_dirty();
  state_.finish_recompute();
  const std::string edited = run_pytorch_script(state_);
  EXPECT_EQ(edited.find("torch.rand("), std::string::npos);
  EXPECT_EQ(edited, core::pytorch_script(state_.config, state_.inputs, nullptr));
}

TEST_F(Files, SaveRunAsPythonWritesCoresScriptOfTheRunOnScreenNeverOverwriting) {
  const auto a = save_run_as_python(state_);
  const auto b = save_run_as_python(state_);
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a->filename().string().starts_with("run_multihead_wrapper_"));
  EXPECT_EQ(a->extension(), ".py");
  EXPECT_EQ(b->stem().string(), a->stem().string() + "-1");  // the same second: -1
  EXPECT_EQ(state_.files.notice.path, b->string());
  EXPECT_FALSE(state_.files.notice.error);
  const std::string seeded = core::read_import_file(*a);
  EXPECT_EQ(seeded, core::pytorch_script(state_.config, state_.inputs, nullptr));
  EXPECT_EQ(run_pytorch_script(state_), seeded);

  // With imported weights the script copies them in after the construction.
  core::Config other = state_.config;
  other.seed = 99;
  core::TorchGenerator gen(other.seed);
  const core::Parameters w = core::init_parameters(other, 3, gen);
  write("w.json", core::weights_json(w, other));
  ASSERT_EQ(import_weights(state_, dir_ / "w.json"), "");
  state_.finish_recompute();
  const auto c = save_run_as_python(state_);
  ASSERT_TRUE(c);
  const std::string imported = core::read_import_file(*c);
  EXPECT_EQ(imported, core::pytorch_script(state_.config, state_.inputs, &w));
  EXPECT_NE(imported.find("mha.heads[1].W_key.weight.copy_(W_key_1.T)"), std::string::npos);

  // Weights that no longer fit the run on screen: a message, no file.
  const auto before = files_in(dir_ / "out");
  core::Config wider = state_.config;
  wider.d_out = 3;
  state_.explicit_parameters =
      std::make_shared<const core::Parameters>(core::init_parameters(wider, 3, gen));
  EXPECT_FALSE(save_run_as_python(state_));
  EXPECT_TRUE(state_.files.notice.error);
  EXPECT_NE(state_.files.notice.message.find("weights this run used were replaced"),
            std::string::npos);
  EXPECT_EQ(files_in(dir_ / "out"), before);
}

TEST_F(Files, ImportedEmbeddingsReplaceTheInputsWithTheirTokenNames) {
  write("e.csv", ",x,y,z\nI,0.1,0.2,0.3\nlike,0.4,0.5,0.6\ncats,0.7,0.8,0.9\n");
  ASSERT_EQ(import_embeddings(state_, dir_ / "e.csv"), "");
  EXPECT_EQ(state_.inputs.tokens, (std::vector<std::string>{"I", "like", "cats"}));
  EXPECT_FLOAT_EQ(state_.inputs.embeddings(2, 1), 0.8f);
  EXPECT_NE(state_.files.notice.message.find("e.csv"), std::string::npos);
}

TEST_F(Files, EveryBadImportGivesItsMessageAndChangesNothing) {
  struct Case {
    std::string file, content, expect;
    bool weights;
  };
  const std::vector<Case> cases = {
      {"missing.csv", "", "no such file", false},
      {"ragged.csv", "1,2,3\n4,5\n", "line 2 has 2 cells", false},
      {"word.csv", "1,2,abc\n", "'abc' is not a number", false},
      {"nan.csv", "1,2,nan\n", "finite", false},
      {"rows.csv", "1,2,3\n4,5,6\n", "2 rows but there are 6 tokens", false},
      {"three.npy", std::string("\x93NUMPY\x01\x00", 8), "", false},
      {"bad.json", "{\"embeddings\": [[1, 2], [3]]}", "", false},
      {"missing.json", "", "no such file", true},
      {"short.json", "{\"W_query\": [[1, 0], [0, 1], [1, 1]], \"W_key\": [[1, 0], [0, 1], [1, 1]]}",
       "W_value is missing", true},
      {"shape.json",
       "{\"W_query\": [[1, 0, 0], [0, 1, 0]], \"W_key\": [[1, 0], [0, 1], [1, 1]], "
       "\"W_value\": [[1, 0], [0, 1], [1, 1]]}",
       "W_query", true},
      {"notjson.json", "{W_query", "", true},
  };
  state_.config.variant = core::Variant::Causal;
  state_.mark_dirty();
  state_.finish_recompute();
  for (const Case& c : cases) {
    if (!c.content.empty()) write(c.file, c.content);
    const Snapshot before(state_);
    const std::string err = c.weights ? import_weights(state_, dir_ / c.file)
                                      : import_embeddings(state_, dir_ / c.file);
    EXPECT_NE(err, "") << c.file;
    EXPECT_NE(err.find(c.file), std::string::npos) << "names the file: " << err;
    if (!c.expect.empty()) {
      EXPECT_NE(err.find(c.expect), std::string::npos) << err;
    }
    before.expect_same(state_);
  }
}

TEST_F(Files, ABadSessionFileGivesItsMessageAndChangesNothing) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"junk.json", "{not json"},
      {"newer.json", "{\"attnscope_session\": 2, \"run\": {}}"},
      {"typo.json",
       "{\"attnscope_session\": 1, \"run\": {\"tokens\": [\"a\"], \"embeddings\": [[1]]}, "
       "\"wieghts\": {}}"},
      {"weights.json",
       "{\"attnscope_session\": 1, \"run\": {\"variant\": \"causal\", \"tokens\": [\"a\"], "
       "\"embeddings\": [[1, 2]]}, "
       "\"weights\": {\"W_query\": [[1]]}}"},
  };
  for (const auto& [name, text] : cases) {
    write(name, text);
    const Snapshot before(state_);
    const std::string err = open_session_file(state_, dir_ / name);
    EXPECT_NE(err.find(name), std::string::npos) << err;
    before.expect_same(state_);
  }
  EXPECT_NE(open_session_file(state_, dir_ / "newer.json").find("newer"), std::string::npos);
}

TEST_F(Files, AnInvalidEditIsSavedAsADraftBesideTheLastGoodRun) {
  state_.config.variant = core::Variant::Multihead;
  state_.config.d_out = 3;  // not divisible by 2 heads
  state_.mark_dirty();
  state_.finish_recompute();
  ASSERT_FALSE(state_.error.empty());
  ASSERT_EQ(save_session_file(state_, dir_ / "draft.json", false), "");
  // core sees the last good run (the trace on screen) ...
  expect_same_trace(core::run_session(core::load_session(dir_ / "draft.json")), *state_.trace);
  // ... and the app gets the edits back.
  AppState b;
  ASSERT_EQ(open_session_file(b, dir_ / "draft.json"), "");
  EXPECT_EQ(b.config.d_out, 3);
  EXPECT_EQ(b.config.variant, core::Variant::Multihead);
}

TEST(Screenshot, NamesFollowTheExportRule) {
  EXPECT_TRUE(screenshot_stem(std::chrono::system_clock::now()).starts_with("screenshot_20"));
}

}  // namespace
}  // namespace attnscope::gui
