// test_weights.cpp: explicit weights. Reading (JSON, state_dict names, NPY
// folders), checking against the run, and running: a module whose seeded
// weights are handed back explicitly must give the seeded trace bit for bit,
// dropout masks included (what load_state_dict after construction does).
#include "attnscope/formats/formats.hpp"
#include "attnscope/io/weights.hpp"
#include "temp_dir.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

using testing::same_bits;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ParseError& e) {
    return e.what();
  }
  return "";
}

Config config_of(Variant v, bool bias = true) { return testing::every_option(v, bias, 789); }

// The parameters PyTorch's constructor draws for `c` on the book's inputs.
Parameters seeded(const Config& c) {
  TorchGenerator gen(c.seed);
  return init_parameters(c, 3, gen);
}

void expect_same_parameters(const Parameters& a, const Parameters& b) {
  ASSERT_EQ(a.qkv.size(), b.qkv.size());
  for (std::size_t h = 0; h < a.qkv.size(); ++h) {
    for (auto part : {&QkvProjections::query, &QkvProjections::key, &QkvProjections::value}) {
      EXPECT_TRUE(same_bits((a.qkv[h].*part).weight, (b.qkv[h].*part).weight)) << "head " << h;
      EXPECT_TRUE(same_bits((a.qkv[h].*part).bias, (b.qkv[h].*part).bias)) << "head " << h;
    }
  }
  EXPECT_TRUE(same_bits(a.out.weight, b.out.weight));
  EXPECT_TRUE(same_bits(a.out.bias, b.out.bias));
}

TEST(RunWithExplicitParameters, SeededWeightsGivenExplicitlyReproduceTheSeededTraceBitForBit) {
  for (Variant v : kChapter3Variants)
    for (bool training : {true, false})
      for (EnginePath path : {EnginePath::Fast, EnginePath::Reference}) {
        Config c = config_of(v);
        c.training = training;
        const Inputs in = testing::book_inputs();
        SCOPED_TRACE(std::string(variant_id(v)) + (training ? " training" : " eval"));
        testing::expect_identical_traces(run_with_explicit_parameters(c, in, seeded(c), path),
                                         run_attention(c, in, path));
      }
}

TEST(RunWithExplicitParameters, OtherWeightsKeepTheSeededDropoutMask) {
  for (Variant v : {Variant::Causal, Variant::MultiheadWrapper, Variant::Multihead}) {
    const Config c = config_of(v);
    Parameters p = seeded(c);
    for (auto& q : p.qkv) {
      q.query.weight.setConstant(0.25f);
      q.key.weight.setConstant(-0.5f);
    }
    const Trace explicit_run = run_with_explicit_parameters(c, testing::book_inputs(), p);
    const Trace seeded_run = run_attention(c, testing::book_inputs());
    for (int h = -1; h < c.num_heads; ++h) {
      const Stage* a = explicit_run.find("dropout_mask", h);
      const Stage* b = seeded_run.find("dropout_mask", h);
      ASSERT_EQ(a == nullptr, b == nullptr) << h;
      if (a) {
        EXPECT_TRUE(same_bits(a->data(), b->data())) << variant_id(v) << " head " << h;
      }
    }
    EXPECT_TRUE(same_bits(explicit_run.stages[1].data(), p.qkv.front().query.weight));
  }
}

TEST(RunWithExplicitParameters, TheClassesAfterChapter3AndRopeRefuseThemWithAMessage) {
  for (Variant v : kAllVariants) {
    Config c;
    c.variant = v;
    c.d_out = 4;
    c.num_heads = 2;
    c.rope = v == Variant::Multihead;
    if (is_chapter3(v) && !c.rope) continue;
    WeightSet none;
    try {
      (void)parameters_from_weights(none, c, 3);
      ADD_FAILURE() << variant_id(v) << " took explicit weights";
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find("chapter-3 classes"), std::string::npos) << e.what();
    }
    EXPECT_NE(validate_parameters(Parameters{}, c, 3), "") << variant_id(v);
  }
}

TEST(WeightsJson, RoundTripsEveryVariantsParametersExactly) {
  for (Variant v : kChapter3Variants) {
    if (v == Variant::Simple) continue;
    for (bool bias : {false, true}) {
      const Config c = config_of(v, bias);
      const Parameters p = seeded(c);
      const WeightSet set = parse_weights_json(weights_json(p, c), "w.json");
      SCOPED_TRACE(std::string(variant_id(v)) + (bias ? " bias" : ""));
      expect_same_parameters(parameters_from_weights(set, c, 3), p);
    }
  }
}

// A matrix as a JSON list of rows with 9 digits (exact float32).
std::string rows_json(const RowMatrix& m) {
  std::string s = "[";
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    s += r ? ", [" : "[";
    for (Eigen::Index k = 0; k < m.cols(); ++k) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%s%.9g", k ? ", " : "", static_cast<double>(m(r, k)));
      s += buf;
    }
    s += "]";
  }
  return s + "]";
}

std::string flat_json(const RowMatrix& m) {
  std::string s = rows_json(m);
  return s.substr(1, s.size() - 2);  // the single row's list
}

TEST(ParseWeightsJson, TransposesPyTorchStateDictNamesAndIgnoresTheMaskBuffer) {
  const Config c = config_of(Variant::Multihead);
  const Parameters p = seeded(c);
  const auto& q = p.qkv.front();
  const std::string json = "{\"W_query.weight\": " + rows_json(q.query.weight.transpose()) +
                           ", \"W_query.bias\": " + flat_json(q.query.bias) +
                           ", \"W_key.weight\": " + rows_json(q.key.weight.transpose()) +
                           ", \"W_key.bias\": " + flat_json(q.key.bias) +
                           ", \"W_value.weight\": " + rows_json(q.value.weight.transpose()) +
                           ", \"W_value.bias\": " + flat_json(q.value.bias) +
                           ", \"out_proj.weight\": " + rows_json(p.out.weight.transpose()) +
                           ", \"out_proj.bias\": " + flat_json(p.out.bias) +
                           ", \"mask\": [[0, 1], [0, 0]]}";
  expect_same_parameters(parameters_from_weights(parse_weights_json(json, "sd.json"), c, 3), p);
}

TEST(ParseWeightsJson, ReadsWrapperHeadsAsAListOrAsPrefixedNames) {
  const Config c = config_of(Variant::MultiheadWrapper, false);
  const Parameters p = seeded(c);
  std::string listed = "{\"heads\": [", prefixed = "{";
  for (std::size_t h = 0; h < 2; ++h) {
    const auto& q = p.qkv[h];
    listed += std::string(h ? ", " : "") + "{\"W_query\": " + rows_json(q.query.weight) +
              ", \"W_key\": " + rows_json(q.key.weight) +
              ", \"W_value\": " + rows_json(q.value.weight) + "}";
    const std::string pre = "\"heads." + std::to_string(h) + ".";
    prefixed += std::string(h ? ", " : "") + pre +
                "W_query.weight\": " + rows_json(q.query.weight.transpose()) + ", " + pre +
                "W_key.weight\": " + rows_json(q.key.weight.transpose()) + ", " + pre +
                "W_value.weight\": " + rows_json(q.value.weight.transpose()) + ", " + pre +
                "mask\": [[0]]";
  }
  listed += "]}";
  prefixed += "}";
  expect_same_parameters(parameters_from_weights(parse_weights_json(listed, "l.json"), c, 3), p);
  expect_same_parameters(parameters_from_weights(parse_weights_json(prefixed, "p.json"), c, 3), p);
}

TEST(ParametersFromWeights, SaysWhatIsWrongAndHowToFixIt) {
  const Config causal = config_of(Variant::Causal, false);
  const std::string w3x4 = rows_json(RowMatrix::Constant(3, 4, 0.5f));
  const std::string qkv =
      "\"W_query\": " + w3x4 + ", \"W_key\": " + w3x4 + ", \"W_value\": " + w3x4;
  struct Case {
    Config config;
    int d_in;
    std::string json;
    std::string expect;
  };
  Config simple = causal;
  simple.variant = Variant::Simple;
  Config d_out_2 = causal;
  d_out_2.d_out = 2;
  Config biased = causal;
  biased.qkv_bias = true;
  const Case cases[] = {
      {causal, 3, "{\"W_query\": " + w3x4 + ", \"W_key\": " + w3x4 + "}", "W_value is missing"},
      {causal, 5, "{" + qkv + "}", "it has d_in 3 but the embeddings have d_in 5"},
      {d_out_2, 3, "{" + qkv + "}", "set d_out to 4"},
      {causal, 3,
       "{\"W_query\": " + rows_json(RowMatrix::Constant(4, 3, 0.5f)) + ", \"W_key\": " + w3x4 +
           ", \"W_value\": " + w3x4 + "}",
       "it looks transposed"},
      {causal, 3, "{" + qkv + ", \"b_query\": [1, 2, 3, 4]}", "qkv_bias is false"},
      {biased, 3, "{" + qkv + "}", "b_query is missing"},
      {simple, 3, "{" + qkv + "}", "has no trainable weights"},
      {causal, 3, "{" + qkv + ", \"W_out\": " + rows_json(RowMatrix::Constant(4, 4, 0.5f)) + "}",
       "causal has no W_out"},
      {causal, 3, "{" + qkv + ", \"W_qeury\": [[1]]}", "unknown weight name 'W_qeury'"},
      {causal, 3, "{\"W_query\": [[1, \"nan\"]]}", "W_query[0][1] is nan"},
      {causal, 3, "{\"W_query\": [[1, 2], [3]]}", "ragged"},
      {causal, 3,
       "{" + qkv + ", \"W_query.weight\": " + rows_json(RowMatrix::Constant(4, 3, 0.5f)) + "}",
       "given twice"},
      {config_of(Variant::MultiheadWrapper, false), 3, "{\"heads\": [{" + qkv + "}]}",
       "head 1's W_query is missing"},
      {config_of(Variant::Multihead, false), 3,
       "{" + qkv + ", \"W_out\": " + rows_json(RowMatrix::Constant(4, 4, 0.5f)) + "}",
       "b_out is missing"},
      {causal, 3, "[1]", "must be a JSON object"},
  };
  for (const auto& c : cases) {
    const std::string msg = error_of(
        [&] { parameters_from_weights(parse_weights_json(c.json, "w.json"), c.config, c.d_in); });
    EXPECT_NE(msg.find(c.expect), std::string::npos)
        << "expected '" << c.expect << "' in '" << msg << "'";
    EXPECT_TRUE(msg.starts_with("w.json")) << msg;
  }
}

TEST(ReadWeights, ReadsAFolderOfNpyFilesNamedAfterTheirTensors) {
  const Config c = config_of(Variant::Multihead);
  const Parameters p = seeded(c);
  testing::TempDir dir;
  const auto& q = p.qkv.front();
  const std::pair<const char*, RowMatrix> files[] = {
      {"W_query.npy", q.query.weight},
      {"W_key.npy", q.key.weight},
      {"W_value.npy", q.value.weight},
      {"b_query.npy", q.query.bias},
      {"b_key.npy", q.key.bias},
      {"b_value.npy", q.value.bias},
      {"out_proj.weight.npy", p.out.weight.transpose()},
      {"b_out.npy", p.out.bias},
  };
  for (const auto& [name, m] : files) testing::write_text(dir / name, matrix_npy(m));
  testing::write_text(dir / "notes.txt", "ignored");
  expect_same_parameters(parameters_from_weights(read_weights(dir.path()), c, 3), p);
  // One file at a time, merged: the same.
  WeightSet merged;
  for (const auto& [name, m] : files) merge_weights(merged, read_weights(dir / name));
  expect_same_parameters(parameters_from_weights(merged, c, 3), p);
  EXPECT_NE(
      error_of([&] { merge_weights(merged, read_weights(dir / "W_key.npy")); }).find("given twice"),
      std::string::npos);
}

TEST(ReadWeights, NeedsNpyFilesToBeNamedAfterATensor) {
  testing::TempDir dir;
  testing::write_text(dir / "weights.npy", matrix_npy(RowMatrix::Constant(2, 2, 1.0f)));
  EXPECT_NE(error_of([&] { read_weights(dir / "weights.npy"); }).find("name it after one"),
            std::string::npos);
  testing::TempDir empty;
  EXPECT_NE(error_of([&] { read_weights(empty.path()); }).find("without .npy files"),
            std::string::npos);
}

}  // namespace
}  // namespace attnscope::core

namespace attnscope::core {
namespace {

TEST(ValidateParameters, AcceptsSeededParametersAndNamesMismatches) {
  Config c;
  c.variant = Variant::Multihead;
  c.d_out = 4;
  c.num_heads = 2;
  TorchGenerator gen(1);
  const Parameters p = init_parameters(c, 3, gen);
  EXPECT_EQ(validate_parameters(p, c, 3), "");
  EXPECT_NE(validate_parameters(p, c, 5).find("W_query is 3 × 4 but d_in × d_out is 5 × 4"),
            std::string::npos);
  Config biased = c;
  biased.qkv_bias = true;
  EXPECT_NE(validate_parameters(p, biased, 3).find("needs a bias"), std::string::npos);
  Config wrapper = c;
  wrapper.variant = Variant::MultiheadWrapper;
  EXPECT_NE(validate_parameters(p, wrapper, 3).find("needs 2"), std::string::npos);
}

}  // namespace
}  // namespace attnscope::core
