// test_config_io.cpp: config parsing, presets, resolution and the writers.
#include <nlohmann/json.hpp>
#include <sstream>

#include "attnscope/formats/files.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

using namespace testing;

// The message ParseError carries for `json`, or "" when it parses and resolves.
std::string error_for(const std::string& json) {
  try {
    Config c;
    Inputs in;
    resolve(parse_run_spec(json, "cfg.json"), c, in);
    return "";
  } catch (const ParseError& e) {
    return e.what();
  }
}

TEST(ParseRunSpec, ReadsEveryField) {
  const RunSpec s = parse_run_spec(
      R"({"tokens": ["a", "b"], "embeddings": [[1, 2], [3, 4.5]], "variant": "multihead",
          "d_out": 4, "num_heads": 2, "dropout": 0.1, "seed": 99, "qkv_bias": true,
          "training": false})",
      "x");
  Config c;
  Inputs in;
  resolve(s, c, in);
  EXPECT_EQ(c.variant, Variant::Multihead);
  EXPECT_EQ(c.d_out, 4);
  EXPECT_EQ(c.num_heads, 2);
  EXPECT_DOUBLE_EQ(c.dropout, 0.1);
  EXPECT_EQ(c.seed, 99u);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.training);
  EXPECT_EQ(in.tokens, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(in.embeddings(1, 1), 4.5f);
}

TEST(ParseRunSpec, DefaultsMatchTheDocumentedOnes) {
  Config c;
  Inputs in;
  resolve(parse_run_spec(R"({"embeddings": [[1], [2], [3]]})", "x"), c, in);
  EXPECT_EQ(c.variant, Variant::Simple);
  EXPECT_EQ(c.d_out, 2);
  EXPECT_EQ(c.num_heads, 1);
  EXPECT_EQ(c.dropout, 0.0);
  EXPECT_EQ(c.seed, 123u);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_TRUE(c.training);
  EXPECT_EQ(in.tokens, (std::vector<std::string>{"t0", "t1", "t2"}));
}

TEST(ParseRunSpec, IntegralFloatsAreAcceptedForWholeNumbers) {
  EXPECT_EQ(error_for(R"({"preset": "book", "d_out": 4.0})"), "");
}

TEST(ParseRunSpec, BadInputsNameTheProblem) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "is empty"},
      {"{", "not valid JSON"},
      {"[1, 2]", "must be a JSON object"},
      {R"({"variant": "simple"})", "no embeddings given"},
      {R"({"embeddings": [[1, 2], [3]]})", "ragged"},
      {R"({"embeddings": []})", "empty"},
      {R"({"embeddings": [[]]})", "empty"},
      {R"({"embeddings": [[1, "a"]]})", "embeddings[0][1] must be a number"},
      {R"({"embeddings": [[1e39]]})", "too large for a 32-bit float"},
      {R"({"embeddings": [[1e999]]})", "a number is out of range '1e999'"},
      {R"({"embeddings": [[1]], "tokens": ["a", "b"]})", "2 token names were given for 1 row"},
      {R"({"preset": "book", "d_out": 2.5})", "d_out must be a whole number"},
      {R"({"preset": "book", "d_out": "2"})", "d_out must be a whole number, got a string"},
      {R"({"preset": "book", "d_out": 0})", "d_out (0) must be between 1 and 4096"},
      {R"({"preset": "book", "num_heads": 0})", "num_heads (0) must be between 1 and 64"},
      {R"({"preset": "book", "variant": "multihead", "d_out": 5, "num_heads": 2})",
       "d_out (5) must be divisible by num_heads (2)"},
      {R"({"preset": "book", "dropout": 1.5})", "dropout (1.5) must be between 0 and 1"},
      {R"({"preset": "book", "variant": "transformer"})", "unknown variant 'transformer'"},
      {R"({"preset": "nope"})", "unknown preset 'nope'"},
      {R"({"preset": "book", "colour": 1})", "unknown field 'colour'"},
      {R"({"preset": "book", "seed": -1})", "seed (-1) must be a whole number"},
      {R"({"preset": "book", "qkv_bias": 1})", "qkv_bias must be true or false"},
  };
  for (const auto& [json, expected] : cases) {
    const std::string got = error_for(json);
    EXPECT_NE(got.find(expected), std::string::npos)
        << "input: " << json << "\n  got: " << got << "\n  want: " << expected;
  }
}

TEST(ParseRunSpec, TooManyTokensIsRejectedBeforeAllocating) {
  std::string json = R"({"embeddings": [)";
  for (int t = 0; t <= kMaxTokens; ++t) json += t ? ",[0]" : "[0]";
  json += "]}";
  EXPECT_NE(error_for(json).find("too many tokens (4097"), std::string::npos);
}

TEST(ReadTextFile, DirectoriesAndMissingFilesAreClearErrors) {
  EXPECT_THROW(read_text_file("/"), ParseError);
  try {
    read_text_file("/no/such/attnscope.json");
    FAIL() << "expected ParseError";
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open '/no/such/attnscope.json'"),
              std::string::npos);
  }
}

TEST(Merge, LaterFieldsWin) {
  RunSpec base = parse_run_spec(R"({"preset": "book", "d_out": 2, "seed": 1})", "a");
  RunSpec top;
  top.d_out = 4;
  const RunSpec m = merge(base, top);
  EXPECT_EQ(*m.d_out, 4);
  EXPECT_EQ(*m.seed, 1u);
  EXPECT_EQ(*m.preset, "book");
}

TEST(Presets, BookAndShinyAreBuiltIn) {
  EXPECT_EQ(preset_names(), (std::vector<std::string>{"book", "shiny", "translate"}));
  const Inputs book = *find_preset("book");
  EXPECT_EQ(book.tokens.front(), "Your");
  EXPECT_EQ(book.embeddings.rows(), 6);
  EXPECT_EQ(book.embeddings(1, 1), 0.87f);
  const Inputs shiny = *find_preset("shiny");
  EXPECT_EQ(shiny.tokens, (std::vector<std::string>{"Hello", "shiny", "sun"}));
  EXPECT_EQ(shiny.embeddings(1, 2), 0.98f);
  EXPECT_FALSE(find_preset("missing").has_value());
}

TEST(Presets, TutorialContextVectorForShiny) {
  // The tutorial: context vector of "shiny" = [0.3992, 0.3858, 0.8610]. It sums
  // terms it had already rounded to 4 decimals (weights, then weighted
  // embeddings), which moves the result by up to ~4e-4, hence the tolerance.
  Config c;
  const Trace t = run_attention(c, *find_preset("shiny"));
  const RowMatrix& ctx = stage(t, "context");
  EXPECT_NEAR(ctx(1, 0), 0.3992f, 5e-4f);
  EXPECT_NEAR(ctx(1, 1), 0.3858f, 5e-4f);
  EXPECT_NEAR(ctx(1, 2), 0.8610f, 5e-4f);
}

TEST(WriteTraceJson, RoundTripsEveryNumberAndMarksInfinity) {
  Config c;
  c.variant = Variant::Causal;
  const Trace t = run_attention(c, book_inputs());
  std::ostringstream out;
  write_trace_json(t, out);
  const auto doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["attnscope_trace"], 1);
  EXPECT_EQ(doc["variant"], "causal");
  EXPECT_EQ(doc["config"]["d_out"], 2);
  ASSERT_EQ(doc["stages"].size(), t.stages.size());
  for (std::size_t k = 0; k < t.stages.size(); ++k) {
    const auto& js = doc["stages"][k];
    const Stage& st = t.stages[k];
    EXPECT_EQ(js["id"], st.id);
    EXPECT_EQ(js["shape"][0], st.data().rows());
    for (Eigen::Index r = 0; r < st.data().rows(); ++r)
      for (Eigen::Index col = 0; col < st.data().cols(); ++col) {
        const auto& v = js["data"][static_cast<std::size_t>(r)][static_cast<std::size_t>(col)];
        if (std::isinf(st.data()(r, col)))
          EXPECT_EQ(v, "-inf");
        else
          EXPECT_EQ(static_cast<float>(v.get<double>()), st.data()(r, col)) << st.id;
      }
  }
}

TEST(WriteTraceText, LabelsRowsAndColumnsWithTokens) {
  const Trace t = run_attention(Config{}, book_inputs());
  std::ostringstream out;
  write_trace_text(t, out);
  const std::string s = out.str();
  EXPECT_NE(s.find("== scores  (6x6) =="), std::string::npos);
  EXPECT_NE(s.find("journey     0.9544   1.4950"), std::string::npos) << s;
}

// A value that rounds to zero at the shown precision has no minus sign.
TEST(FixedText, NoMinusSignOnAValueThatRoundsToZero) {
  EXPECT_EQ(fixed_text(-0.00001, 4), "0.0000");
  EXPECT_EQ(fixed_text(-0.0, 2), "0.00");
  EXPECT_EQ(fixed_text(-0.004, 2), "0.00");
  EXPECT_EQ(fixed_text(-0.006, 2), "-0.01");
  EXPECT_EQ(fixed_text(-1.5, 1), "-1.5");
  EXPECT_EQ(fixed_text(0.25, 2), "0.25");
}

TEST(WriteTraceText, PrintsNoNegativeZero) {
  Inputs in = book_inputs();
  in.embeddings(0, 0) = -0.00001f;
  in.embeddings(1, 1) = -0.0f;
  Config c;
  c.variant = Variant::Simple;
  const Trace t = run_attention(c, in);
  std::ostringstream out;
  write_trace_text(t, out);
  EXPECT_EQ(out.str().find("-0.0000"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("  0.0000"), std::string::npos) << out.str();
}

TEST(WriteTraceText, PrintsHugeValuesInScientificForm) {
  Inputs in = book_inputs();
  in.embeddings(0, 0) = 1e30f;
  Config c;
  c.variant = Variant::Simple;
  std::ostringstream out;
  write_trace_text(run_attention(c, in), out);
  EXPECT_NE(out.str().find(" 1.0000e+30 "), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("1000000015047466219876688855040"), std::string::npos) << out.str();
}

TEST(RandomInputs, AreTorchRandAfterManualSeedOfTheInputSeed) {
  // torch.manual_seed(42); torch.rand(2, 3) in PyTorch 1.13 prints these.
  const Inputs in = random_inputs(2, 3, 42);
  expect_book_matrix(in.embeddings,
                     matrix_from_rows({{0.8823f, 0.9150f, 0.3829f},  //
                                       {0.9593f, 0.3904f, 0.6009f}}),
                     "torch.rand(2, 3)");
  EXPECT_EQ(in.tokens, (std::vector<std::string>{"t0", "t1"}));
}

// One seed for both would make torch.rand(T, D) repeat the uniforms the
// module turns into its weights.
TEST(RandomInputs, TheDefaultInputSeedIsNotTheWeightsDefaultSeed) {
  EXPECT_NE(kDefaultInputSeed, Config{}.seed);
}

TEST(RandomInputs, SizesOutsideTheLimitsAreRefused) {
  EXPECT_THROW(random_inputs(0, 3, 1), ParseError);
  EXPECT_THROW(random_inputs(3, kMaxDim + 1, 1), ParseError);
  EXPECT_EQ(random_inputs(kMaxTokens, 1, 1).embeddings.rows(), kMaxTokens);
}

TEST(ParseRandomShape, ReadsTCommaDAndNamesTheLimitsOtherwise) {
  EXPECT_EQ(parse_random_shape("512,64"), (std::pair<int, int>{512, 64}));
  for (const char* bad : {"", "5", "5,", ",5", "0,3", "3,0", "4097,1", "1,4097", "a,b", "3,3,3",
                          "-1,3", "2.5,3", " 3,3"}) {
    try {
      parse_random_shape(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ParseError& e) {
      EXPECT_EQ(std::string(e.what()), "--random '" + std::string(bad) +
                                           "' must be T,D with T from 1 to 4096 and D from 1 "
                                           "to 4096, e.g. 1024,768");
    }
  }
}

TEST(ParseSeed, NamesTheFlagItReads) {
  EXPECT_EQ(parse_seed("7", "--input-seed"), 7u);
  try {
    parse_seed("-1", "--input-seed");
    ADD_FAILURE() << "accepted -1";
  } catch (const ParseError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--input-seed (-1) must be a whole number", 0), 0u);
  }
}

}  // namespace
}  // namespace attnscope::core

namespace attnscope::core {
namespace {

TEST(Config, SwitchingIntoAMultiHeadClassFromOneHeadGivesTheBooksTwoHeads) {
  EXPECT_EQ(heads_after_switch(Variant::Causal, Variant::Multihead, 1, 2), 2);
  EXPECT_EQ(heads_after_switch(Variant::Simple, Variant::MultiheadWrapper, 1, 3), 2);
  EXPECT_EQ(heads_after_switch(Variant::Causal, Variant::Multihead, 1, 3),
            1);  // 3 / 2 is not whole
  EXPECT_EQ(heads_after_switch(Variant::MultiheadWrapper, Variant::Multihead, 1, 2), 1);  // chosen
  EXPECT_EQ(heads_after_switch(Variant::Causal, Variant::Multihead, 4, 8), 4);            // kept
  EXPECT_EQ(heads_after_switch(Variant::Multihead, Variant::Causal, 2, 2), 2);  // unused there
}

}  // namespace
}  // namespace attnscope::core
