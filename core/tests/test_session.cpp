// test_session.cpp: save -> open gives the identical trace; the view is kept
// as the GUI wrote it; bad session files say what is wrong.
#include <nlohmann/json.hpp>

#include "attnscope/io/session.hpp"
#include "attnscope/io/weights.hpp"
#include "temp_dir.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

Session session_of(Variant v) {
  Session s;
  s.config.variant = v;
  s.config.d_out = 4;
  s.config.num_heads = 2;
  s.config.dropout = 0.1;  // not exact in binary: the file must keep every bit
  s.config.qkv_bias = true;
  s.config.seed = 18446744073709551615ull;
  s.inputs = testing::book_inputs();
  s.inputs.tokens[1] = "jour\"ney\n\u00e9";  // quoting and UTF-8 survive
  s.inputs.embeddings(0, 0) = 1.0f / 3.0f;
  return s;
}

TEST(Session, SaveThenOpenGivesTheIdenticalTraceForEveryVariant) {
  testing::TempDir dir;
  for (Variant v : kAllVariants) {
    const Session s = session_of(v);
    save_session(dir / "s.json", s);
    const Session back = load_session(dir / "s.json");
    EXPECT_EQ(back.config.dropout, s.config.dropout);
    EXPECT_EQ(back.config.seed, s.config.seed);
    EXPECT_FALSE(back.weights.has_value());
    SCOPED_TRACE(std::string(variant_id(v)));
    testing::expect_identical_traces(run_session(back), run_session(s));
  }
}

TEST(Session, ExplicitWeightsAreSavedAndReproduceTheTrace) {
  testing::TempDir dir;
  for (Variant v :
       {Variant::SelfAttentionV1, Variant::Causal, Variant::MultiheadWrapper, Variant::Multihead}) {
    Session s = session_of(v);
    TorchGenerator gen(99);  // weights from another seed: not what the config would draw
    s.weights = init_parameters(s.config, 3, gen);
    save_session(dir / "w.json", s);
    const Session back = load_session(dir / "w.json");
    ASSERT_TRUE(back.weights.has_value());
    SCOPED_TRACE(std::string(variant_id(v)));
    const Trace a = run_session(back), b = run_session(s);
    testing::expect_identical_traces(a, b);
    EXPECT_FALSE(
        testing::same_bits(a.stages[1].data(), run_attention(s.config, s.inputs).stages[1].data()));
  }
}

TEST(Session, RefusesToSaveWeightsThatDoNotFitTheRun) {
  Session s = session_of(Variant::Causal);
  TorchGenerator gen(1);
  s.weights = init_parameters(s.config, 3, gen);
  s.config.d_out = 2;  // the config changed after the weights were loaded
  const std::string msg = error_of([&] { session_json(s); });
  EXPECT_NE(msg.find("set d_out to 4"), std::string::npos) << msg;
}

TEST(Session, KeepsTheViewObjectTheGuiWrote) {
  Session s = session_of(Variant::Causal);
  s.view_json = R"({"stage": "weights", "head": 1, "cell": [2, 3], "palette": "colorblind"})";
  const Session back = parse_session(session_json(s), "s.json");
  EXPECT_EQ(nlohmann::json::parse(back.view_json), nlohmann::json::parse(s.view_json));
}

TEST(Session, RefusesAViewThatIsNotAnObject) {
  Session s = session_of(Variant::Causal);
  s.view_json = "[1]";
  EXPECT_NE(error_of([&] { session_json(s); }).find("view must be a JSON object"),
            std::string::npos);
}

TEST(Session, BadFilesSayWhatIsWrong) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"run": {"preset": "book"}})", "is not an attnscope session"},
      {R"({"attnscope_session": 2, "run": {"preset": "book"}})",
       "was saved by a newer attnscope (session version 2); this attnscope reads version 1"},
      {R"({"attnscope_session": "1", "run": {}})", "bad session version"},
      {R"({"attnscope_session": 1})", "has no \"run\" object"},
      {R"({"attnscope_session": 1, "run": {"embeddings": [[1, 2], [3]]}})", "ragged"},
      {R"({"attnscope_session": 1, "run": {"preset": "book"}, "wieghts": {}})",
       "unknown field 'wieghts'"},
      {R"({"attnscope_session": 1, "run": {"preset": "book"}, "view": 3})",
       "view must be a JSON object"},
      {R"({"attnscope_session": 1, "run": {"preset": "book", "variant": "causal"}, "weights": {"W_query": [[1]]}})",
       "W_query is 1 × 1"},
      {"{", "is not valid JSON"},
  };
  for (const auto& [text, expect] : cases) {
    const std::string msg = error_of([&] { parse_session(text, "s.json"); });
    EXPECT_NE(msg.find(expect), std::string::npos)
        << "expected '" << expect << "' in '" << msg << "'";
    EXPECT_TRUE(msg.starts_with("s.json")) << msg;
  }
}

TEST(Session, OpensAHandWrittenRunWithAPreset) {
  const Session s = parse_session(
      R"({"attnscope_session": 1, "run": {"preset": "book", "variant": "causal"}})", "s.json");
  EXPECT_EQ(s.inputs.tokens.front(), "Your");
  EXPECT_EQ(s.config.variant, Variant::Causal);
  EXPECT_EQ(s.view_json, "{}");
}

TEST(Session, SaveNeverOverwritesWhenAskedNotTo) {
  testing::TempDir dir;
  testing::write_text(dir / "s.json", "keep");
  EXPECT_THROW(save_session(dir / "s.json", session_of(Variant::Simple), Overwrite::Never),
               FileError);
  EXPECT_EQ(testing::read_text(dir / "s.json"), "keep");
  save_session(dir / "s.json", session_of(Variant::Simple));
  EXPECT_NE(testing::read_text(dir / "s.json"), "keep");
  EXPECT_EQ(dir.names(), (std::vector<std::string>{"s.json"}));
}

}  // namespace
}  // namespace attnscope::core
