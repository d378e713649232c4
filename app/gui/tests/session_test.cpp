// session_test.cpp: the session round trip, atomic writes, corrupt files set
// aside with a warning, and where the files live.
#include "state/session.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "attnscope/attention/attention.hpp"
#include "attnscope/base/rng.hpp"
#include "attnscope/io/io.hpp"
#include "attnscope/io/session.hpp"
#include "temp_dir.hpp"

namespace attnscope::gui {
namespace {

namespace fs = std::filesystem;

class Session : public ::testing::Test {
 protected:
  core::testing::TempDir temp_;  // a fresh folder per test, removed afterwards
  const fs::path dir_ = temp_.path();
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST_F(Session, RoundTripRestoresInputsConfigStageCellAndView) {
  AppState a;
  a.load_preset("shiny");
  a.inputs.tokens[1] = "glossy";
  a.inputs.embeddings(2, 1) = 0.123456789f;
  a.config.variant = core::Variant::Multihead;
  a.config.d_out = 4;
  a.config.num_heads = 2;
  a.config.dropout = 0.25;
  a.config.seed = 18446744073709551615ull;
  a.config.qkv_bias = true;
  a.config.training = false;
  a.step = Step::Masked;
  a.head = 1;
  a.pinned = CellRef{"masked_scores", 1, 2, 0};
  a.ui.palette = Palette::ColorBlindSafe;
  a.ui.show_values = false;
  a.ui.row_scale = figure::RowScale::On;
  a.ui.decimals = 6;
  a.ui.ui_scale = 1.25f;
  const fs::path file = dir_ / "session.json";
  ASSERT_EQ(save_session(file, a), "");

  AppState b;
  b.load_preset("book");
  ASSERT_EQ(load_session(file, b).warning, "");
  EXPECT_EQ(b.inputs.tokens, a.inputs.tokens);
  EXPECT_EQ(b.inputs.embeddings, a.inputs.embeddings);  // floats round-trip exactly
  EXPECT_EQ(b.config.variant, core::Variant::Multihead);
  EXPECT_EQ(b.config.d_out, 4);
  EXPECT_EQ(b.config.num_heads, 2);
  EXPECT_EQ(b.config.dropout, 0.25);
  EXPECT_EQ(b.config.seed, 18446744073709551615ull);
  EXPECT_TRUE(b.config.qkv_bias);
  EXPECT_FALSE(b.config.training);
  EXPECT_EQ(b.step, Step::Masked);
  EXPECT_EQ(b.head, 1);
  EXPECT_EQ(b.pinned, a.pinned);
  EXPECT_EQ(b.ui.palette, Palette::ColorBlindSafe);
  EXPECT_FALSE(b.ui.show_values);
  EXPECT_EQ(b.ui.row_scale, figure::RowScale::On);
  EXPECT_EQ(b.ui.decimals, 6);
  EXPECT_FLOAT_EQ(b.ui.ui_scale, 1.25f);
  EXPECT_EQ(b.preset, "shiny");
}

// The row scale is "auto", "on" or "off"; a session saved when it was a
// yes/no keeps its meaning (true: on, false: off), and one from before the
// setting existed gets auto.
TEST_F(Session, TheRowScaleRoundTripsAndOldYesNoValuesKeepTheirMeaning) {
  AppState a;
  a.load_preset("book");
  EXPECT_EQ(a.ui.row_scale, figure::RowScale::Auto);
  const fs::path file = dir_ / "rows.json";
  for (figure::RowScale s : {figure::RowScale::Auto, figure::RowScale::On, figure::RowScale::Off}) {
    a.ui.row_scale = s;
    ASSERT_EQ(save_session(file, a), "");
    AppState b;
    b.ui.row_scale = s == figure::RowScale::On ? figure::RowScale::Off : figure::RowScale::On;
    ASSERT_EQ(load_session(file, b).warning, "");
    EXPECT_EQ(b.ui.row_scale, s) << figure::row_scale_id(s);
  }
  auto load_with = [&](const nlohmann::json* value) {
    nlohmann::json older = nlohmann::json::parse(slurp(file));
    EXPECT_EQ(older["view"]["ui"]["row_scale"], "off");
    if (value)
      older["view"]["ui"]["row_scale"] = *value;
    else
      older["view"]["ui"].erase("row_scale");
    std::ofstream(dir_ / "older.json") << older.dump(1);
    AppState b;
    EXPECT_EQ(load_session(dir_ / "older.json", b).warning, "");
    return b.ui.row_scale;
  };
  const nlohmann::json yes = true, no = false, odd = "sideways";
  EXPECT_EQ(load_with(&yes), figure::RowScale::On);
  EXPECT_EQ(load_with(&no), figure::RowScale::Off);
  EXPECT_EQ(load_with(&odd), figure::RowScale::Auto);
  EXPECT_EQ(load_with(nullptr), figure::RowScale::Auto);
}

// File > Use the desktop's file dialogs is remembered; older sessions have
// them on.
TEST_F(Session, TheDesktopDialogsChoiceIsRemembered) {
  AppState a;
  a.load_preset("book");
  a.files.native_dialogs = false;
  const fs::path file = dir_ / "dialogs.json";
  ASSERT_EQ(save_session(file, a), "");
  AppState b;
  ASSERT_EQ(load_session(file, b).warning, "");
  EXPECT_FALSE(b.files.native_dialogs);
  nlohmann::json older = nlohmann::json::parse(slurp(file));
  older["view"]["files"].erase("desktop_dialogs");
  std::ofstream(dir_ / "older.json") << older.dump(1);
  ASSERT_EQ(load_session(dir_ / "older.json", b).warning, "");
  EXPECT_TRUE(b.files.native_dialogs);
}

// The exported figures' theme is a preference of the app: it comes back on
// the next launch, and a session from before themes opens with light (what
// figures looked like then).
TEST_F(Session, TheExportThemeIsRememberedAndOlderSessionsGetLight) {
  AppState a;
  a.load_preset("book");
  EXPECT_EQ(a.files.theme, figure::Theme::Light);
  a.files.theme = figure::Theme::Dark;
  const fs::path file = dir_ / "theme.json";
  ASSERT_EQ(save_session(file, a), "");
  AppState b;
  ASSERT_EQ(load_session(file, b).warning, "");
  EXPECT_EQ(b.files.theme, figure::Theme::Dark);

  nlohmann::json older = nlohmann::json::parse(slurp(file));
  ASSERT_EQ(older["view"]["files"]["theme"], "dark");
  older["view"]["files"].erase("theme");
  std::ofstream(dir_ / "older.json") << older.dump(1);
  AppState c;
  c.files.theme = figure::Theme::Dark;
  ASSERT_EQ(load_session(dir_ / "older.json", c).warning, "");
  EXPECT_EQ(c.files.theme, figure::Theme::Light);
}

// The first-run card stays dismissed across launches; a session saved
// before the card existed counts as dismissed (its learner knows the app).
TEST_F(Session, TheWelcomeCardIsRememberedAsDismissed) {
  AppState a;
  a.load_preset("book");
  ASSERT_FALSE(a.ui.welcome_dismissed);  // a first launch shows it
  ASSERT_EQ(save_session(dir_ / "fresh.json", a), "");
  AppState b;
  ASSERT_EQ(load_session(dir_ / "fresh.json", b).warning, "");
  EXPECT_FALSE(b.ui.welcome_dismissed);
  a.ui.welcome_dismissed = true;
  ASSERT_EQ(save_session(dir_ / "seen.json", a), "");
  AppState c;
  ASSERT_EQ(load_session(dir_ / "seen.json", c).warning, "");
  EXPECT_TRUE(c.ui.welcome_dismissed);

  nlohmann::json older = nlohmann::json::parse(slurp(dir_ / "fresh.json"));
  ASSERT_EQ(older["view"]["ui"].erase("welcome_dismissed"), 1u) << older.dump(1);
  std::ofstream(dir_ / "older.json") << older.dump(1);
  AppState d;
  ASSERT_EQ(load_session(dir_ / "older.json", d).warning, "");
  EXPECT_TRUE(d.ui.welcome_dismissed);
}

TEST_F(Session, RandomInputsComeBackWithTheSeedThatMadeThem) {
  AppState a;
  a.input_seed = 2024;
  a.draw_random_inputs(5, 4);
  const fs::path file = dir_ / "session.json";
  ASSERT_EQ(save_session(file, a), "");

  AppState b;
  b.load_preset("book");
  ASSERT_EQ(load_session(file, b).warning, "");
  EXPECT_EQ(b.input_seed, 2024u);
  EXPECT_TRUE(b.origin == InputOrigin::Random);  // the panel says which seed made them
  EXPECT_EQ(b.inputs.embeddings, core::random_inputs(5, 4, 2024).embeddings);

  // Edited after the draw: the seed is kept, but no longer claimed for the values.
  a.inputs.embeddings(0, 0) = 0.5f;
  a.inputs_replaced(InputOrigin::Edited);
  ASSERT_EQ(save_session(file, a), "");
  AppState c;
  ASSERT_EQ(load_session(file, c).warning, "");
  EXPECT_EQ(c.input_seed, 2024u);
  EXPECT_EQ(c.origin, InputOrigin::Edited);
}

TEST_F(Session, TypedTextComesBackWithItsSettingsAndTokens) {
  AppState a;
  a.text_source = TextSource{{"Every effort moves you"}, 5, 11, 16};
  ASSERT_TRUE(a.embed_text());
  const fs::path file = dir_ / "session.json";
  ASSERT_EQ(save_session(file, a), "");

  AppState b;
  b.load_preset("book");
  ASSERT_EQ(load_session(file, b).warning, "");
  EXPECT_EQ(b.text_source.typed.text, "Every effort moves you");
  EXPECT_EQ(b.text_source.d_in, 5);
  EXPECT_EQ(b.text_source.seed, 11u);
  EXPECT_EQ(b.text_source.positions, 16);
  EXPECT_TRUE(b.origin == InputOrigin::Text);
  EXPECT_EQ(b.text_source.typed.tokens.size(), 4u);
  EXPECT_EQ(b.inputs.embeddings, a.inputs.embeddings);

  EXPECT_EQ(b.source, Source::Text);

  // A session from before sessions named their source and origin: told by
  // comparing the inputs with what the text makes.
  std::string old = session_json(a);
  for (const std::string key : {"\"origin\"", "\"source\""}) {
    const auto at = old.find(key);
    ASSERT_NE(at, std::string::npos) << old;
    old.replace(at, key.size(), "\"unused_" + key.substr(1));
  }
  ASSERT_EQ(write_file_atomic(dir_ / "old.json", old), "");
  AppState d;
  ASSERT_EQ(load_session(dir_ / "old.json", d).warning, "");
  EXPECT_EQ(d.origin, InputOrigin::Text);
  EXPECT_EQ(d.source, Source::Text);
  EXPECT_EQ(d.text_source.typed.tokens.size(), 4u);

  // Values edited after the text made them: the settings stay, the claim goes.
  a.inputs.embeddings(1, 1) = 0.25f;
  a.inputs_replaced(InputOrigin::Edited);
  ASSERT_EQ(save_session(file, a), "");
  AppState c;
  ASSERT_EQ(load_session(file, c).warning, "");
  EXPECT_EQ(c.text_source.typed.text, "Every effort moves you");
  EXPECT_EQ(c.origin, InputOrigin::Edited);
  EXPECT_EQ(c.source, Source::Inputs);
  EXPECT_EQ(c.inputs.embeddings(1, 1), 0.25f);
}

TEST_F(Session, ASessionFromBeforeTheInputSeedLoadsWithTheDefaultOne) {
  AppState a;
  a.load_preset("book");
  a.input_seed = 9;
  std::string text = session_json(a);
  const std::string field = "\"input_seed\": 9";
  const auto at = text.find(field);
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, field.size(), "\"random_seed\": 123");  // what such sessions held
  const fs::path file = dir_ / "old.json";
  ASSERT_EQ(write_file_atomic(file, text), "");
  AppState b;
  b.input_seed = 5;
  ASSERT_EQ(load_session(file, b).warning, "");
  EXPECT_EQ(b.input_seed, core::kDefaultInputSeed);
  EXPECT_EQ(b.inputs.tokens, a.inputs.tokens);
  EXPECT_FALSE(b.origin == InputOrigin::Random);
}

TEST_F(Session, AnInvalidButWellFormedConfigIsRestoredAsIs) {
  AppState a;
  a.load_preset("book");
  a.config.variant = core::Variant::Multihead;
  a.config.d_out = 3;  // not divisible by 2 heads: the user was mid-edit
  a.config.num_heads = 2;
  ASSERT_EQ(save_session(dir_ / "s.json", a), "");
  AppState b;
  EXPECT_EQ(load_session(dir_ / "s.json", b).warning, "");
  EXPECT_EQ(b.config.d_out, 3);
  b.recompute_if_dirty();
  EXPECT_FALSE(b.error.empty());
}

TEST_F(Session, MissingFileChangesNothing) {
  AppState s;
  s.load_preset("book");
  const SessionRestore r = load_session(dir_ / "none.json", s);
  EXPECT_EQ(r.warning, "");
  EXPECT_EQ(r.text, "");
  EXPECT_TRUE(r.may_save);
  EXPECT_EQ(s.inputs.tokens.size(), 6u);
}

TEST_F(Session, CorruptFileIsSetAsideAsBakWithAWarning) {
  for (const char* junk :
       {"{not json", "[1, 2]", "{\"attnscope_session\": 1, \"run\": {\"embeddings\": \"x\"}}",
        "{\"attnscope_session\": 1, \"run\": {\"tokens\": [\"a\"], \"embeddings\": [[1], [2]]}}"}) {
    const fs::path file = dir_ / "session.json";
    { std::ofstream(file) << junk; }
    AppState s;
    s.load_preset("book");
    const SessionRestore r = load_session(file, s);
    const std::string& warning = r.warning;
    EXPECT_EQ(warning.find("Your last session " + file.string() + " could not be restored ("), 0u)
        << warning;
    EXPECT_EQ(warning.find(file.string() + ": "), std::string::npos) << "named once: " << warning;
    EXPECT_NE(warning.find("session.json.bak"), std::string::npos) << warning;
    EXPECT_FALSE(r.newer_version);
    EXPECT_FALSE(fs::exists(file));
    EXPECT_EQ(slurp(r.set_aside_as), junk);
    fs::remove(r.set_aside_as);                  // the next one is .bak again
    EXPECT_EQ(s.inputs.tokens.front(), "Your");  // defaults kept
  }
}

TEST_F(Session, ARestoredSessionReturnsTheFileTextForTheAutosave) {
  AppState a;
  a.load_preset("shiny");
  ASSERT_EQ(save_session(dir_ / "session.json", a), "");
  AppState b;
  const SessionRestore r = load_session(dir_ / "session.json", b);
  EXPECT_EQ(r.warning, "");
  EXPECT_EQ(r.text, slurp(dir_ / "session.json"));
  EXPECT_EQ(r.text, session_json(b));  // restoring and saving again gives the same bytes
}

TEST_F(Session, SettingAsideNeverReplacesAnEarlierBak) {
  const fs::path file = dir_ / "session.json";
  const std::vector<std::string> junk = {"{one", "{two", "{three"};
  for (const auto& text : junk) {
    { std::ofstream(file) << text; }
    AppState s;
    const SessionRestore r = load_session(file, s);
    EXPECT_NE(r.warning.find(r.set_aside_as.string()), std::string::npos) << r.warning;
    EXPECT_TRUE(r.may_save);
  }
  EXPECT_EQ(slurp(dir_ / "session.json.bak"), "{one");
  EXPECT_EQ(slurp(dir_ / "session.json.bak-1"), "{two");
  EXPECT_EQ(slurp(dir_ / "session.json.bak-2"), "{three");
  EXPECT_FALSE(fs::exists(file));
}

// A session format this build does not know: kept whole, the user told which
// file and why, the app on its defaults.
std::string future_session(long long version) {
  AppState a;
  a.load_preset("shiny");
  a.step = Step::Softmax;
  std::string text = session_json(a);
  const std::string field = "\"attnscope_session\": 1";
  const auto at = text.find(field);
  EXPECT_NE(at, std::string::npos) << text.substr(0, 80);
  text.replace(at, field.size(), "\"attnscope_session\": " + std::to_string(version));
  return text + " ";
}

TEST_F(Session, ANewerFormatVersionIsKeptAsBakAndTheAppStartsFromDefaults) {
  const fs::path file = dir_ / "session.json";
  { std::ofstream(dir_ / "session.json.bak") << "an earlier one"; }
  const std::string text = future_session(core::kSessionVersion + 1);
  { std::ofstream(file) << text; }
  AppState s;
  s.load_preset("book");
  const SessionRestore r = load_session(file, s);
  EXPECT_TRUE(r.newer_version);
  EXPECT_TRUE(r.may_save);
  EXPECT_EQ(r.set_aside_as, dir_ / "session.json.bak-1");
  EXPECT_EQ(r.text, "");
  EXPECT_NE(r.warning.find(file.string()), std::string::npos) << r.warning;
  EXPECT_NE(r.warning.find("newer attnscope (session format 2; this attnscope reads format 1)"),
            std::string::npos)
      << r.warning;
  EXPECT_NE(r.warning.find("kept as " + (dir_ / "session.json.bak-1").string()), std::string::npos)
      << r.warning;
  EXPECT_NE(r.warning.find("started from the defaults"), std::string::npos) << r.warning;
  EXPECT_EQ(slurp(dir_ / "session.json.bak-1"), text);  // byte for byte
  EXPECT_EQ(slurp(dir_ / "session.json.bak"), "an earlier one");
  EXPECT_FALSE(fs::exists(file));
  EXPECT_EQ(s.inputs.tokens.front(), "Your");  // the defaults, not the shiny preset
  EXPECT_EQ(s.step, Step::Inputs);
}

TEST_F(Session, WithoutSettingAsideANewerSessionStaysWhereItIs) {
  const fs::path file = dir_ / "session.json";
  const std::string text = future_session(7);
  { std::ofstream(file) << text; }
  AppState s;
  const SessionRestore r = load_session(file, s, /*set_aside=*/false);
  EXPECT_TRUE(r.newer_version);
  EXPECT_EQ(slurp(file), text);
  EXPECT_TRUE(r.set_aside_as.empty());
  EXPECT_NE(r.warning.find("session format 7"), std::string::npos) << r.warning;
}

TEST_F(Session, AFileThatCannotBeSetAsideIsNeverSavedOver) {
  // Files in /proc cannot be renamed, not even by root: the unreadable
  // "session" stays where it is, so the app must not overwrite it.
  const fs::path file = "/proc/self/status";
  AppState s;
  const SessionRestore r = load_session(file, s);
  EXPECT_FALSE(r.may_save) << r.warning;
  EXPECT_NE(r.warning.find("will not save this session over it"), std::string::npos) << r.warning;
}

TEST(SessionVersion, ReadsOnlyTheTopLevelField) {
  EXPECT_EQ(session_version(R"({"attnscope_session": 3, "run": {}})"), 3);
  EXPECT_EQ(session_version(R"({"run": {"attnscope_session": 9}, "attnscope_session": 1})"), 1);
  EXPECT_EQ(session_version(R"({"view": {"x": [1, {"attnscope_session": 5}]}})"), std::nullopt);
  EXPECT_EQ(session_version(R"({"attnscope_session": "2"})"), std::nullopt);
  EXPECT_EQ(session_version(R"({"attnscope_session": 18446744073709551615})"),
            std::numeric_limits<long long>::max());
  EXPECT_EQ(session_version(R"([{"attnscope_session": 2}])"), std::nullopt);
  EXPECT_EQ(session_version("{not json"), std::nullopt);
  EXPECT_EQ(session_version(""), std::nullopt);
  // Stops at the field: the rest need not even be JSON.
  EXPECT_EQ(session_version(R"({"attnscope_session": 4, oops)"), 4);
}

TEST_F(Session, FingerprintChangesWithEverythingTheSessionHolds) {
  AppState s;
  s.load_preset("book");
  s.recompute_if_dirty();
  const std::uint64_t base = session_fingerprint(s);
  EXPECT_EQ(session_fingerprint(s), base);
  auto differs = [&](const char* what, auto&& change) {
    AppState t;
    t.load_preset("book");
    t.recompute_if_dirty();
    change(t);
    EXPECT_NE(session_fingerprint(t), base) << what;
    EXPECT_NE(session_json(t), session_json(s)) << what;
  };
  differs("token", [](AppState& t) { t.inputs.tokens[0] = "My"; });
  differs("embedding", [](AppState& t) { t.inputs.embeddings(5, 2) += 1e-6f; });
  differs("variant", [](AppState& t) { t.config.variant = core::Variant::Causal; });
  differs("d_out", [](AppState& t) { t.config.d_out = 3; });
  differs("dropout", [](AppState& t) { t.config.dropout = 0.1; });
  differs("seed", [](AppState& t) { t.config.seed = 7; });
  differs("bias", [](AppState& t) { t.config.qkv_bias = true; });
  differs("stage", [](AppState& t) { t.step = Step::Softmax; });
  differs("head", [](AppState& t) { t.head = 1; });
  differs("pinned", [](AppState& t) { t.pinned = CellRef{"weights", -1, 1, 2}; });
  differs("palette", [](AppState& t) { t.ui.palette = Palette::Greys; });
  differs("window", [](AppState& t) { t.ui.window_width = 900; });
  differs("input seed", [](AppState& t) { t.input_seed = 7; });
  differs("export folder", [](AppState& t) { t.files.export_folder = "/tmp/x"; });
  differs("weights", [](AppState& t) {
    core::TorchGenerator gen(1);
    t.explicit_parameters = std::make_shared<const core::Parameters>(
        core::init_parameters(t.config, static_cast<int>(t.inputs.embeddings.cols()), gen));
  });
}

TEST_F(Session, AFolderNameThatIsNotUtf8IsSavedNotRefused) {
  AppState s;
  s.load_preset("book");
  s.files.export_folder = "/tmp/caf\xe9";  // Latin-1 bytes: a valid Linux path
  const fs::path file = dir_ / "session.json";
  EXPECT_EQ(save_session(file, s), "");
  AppState b;
  EXPECT_EQ(load_session(file, b).warning, "");
}

TEST_F(Session, AtomicWriteReplacesTheFileAndLeavesNoTemporary) {
  const fs::path file = dir_ / "sub" / "x.json";
  ASSERT_EQ(write_file_atomic(file, "one"), "");
  ASSERT_EQ(write_file_atomic(file, "two"), "");
  EXPECT_EQ(slurp(file), "two");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_ / "sub")) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST_F(Session, AtomicWriteReportsAnUnwritableDirectory) {
  { std::ofstream(dir_ / "file") << "x"; }
  EXPECT_NE(write_file_atomic(dir_ / "file" / "x.json", "y"), "");
}

TEST(ConfigDir, FollowsXdgConfigHomeThenHome) {
  const char* old_xdg = std::getenv("XDG_CONFIG_HOME");
  const std::string keep = old_xdg ? old_xdg : "";
  const char* old_home = std::getenv("HOME");
  const std::string keep_home = old_home ? old_home : "";
  ::setenv("XDG_CONFIG_HOME", "/tmp/xdg-test", 1);
  EXPECT_EQ(config_dir(), fs::path("/tmp/xdg-test/attnscope"));
  ::setenv("XDG_CONFIG_HOME", "relative/is/ignored", 1);
  ::setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(config_dir(), fs::path("/home/someone/.config/attnscope"));
  if (old_xdg)
    ::setenv("XDG_CONFIG_HOME", keep.c_str(), 1);
  else
    ::unsetenv("XDG_CONFIG_HOME");
  if (old_home) ::setenv("HOME", keep_home.c_str(), 1);
}

}  // namespace
}  // namespace attnscope::gui
