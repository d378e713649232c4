// test_pytorch_code.cpp: the run as a PyTorch script. What the script prints
// is checked against the trace with PyTorch itself in
// app/tests/pytorch_code_test.py; here: its floats read back exactly, its
// parts are where a notebook needs them (seed, construction, weights,
// mode, print last), both input forms, and bad calls are refused.
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>

#include "attnscope/book/pytorch_code.hpp"
#include "attnscope/io/weights.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

Inputs book() { return *find_preset("book"); }

Config config_of(Variant v) { return testing::every_option(v, false, 789); }

std::size_t at(const std::string& s, const std::string& what) {
  const std::size_t pos = s.find(what);
  EXPECT_NE(pos, std::string::npos) << "missing: " << what << "\nin:\n" << s;
  return pos;
}

std::string last_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t.substr(t.rfind('\n') + 1);
}

TEST(PythonFloat32, ReadsBackThroughDoubleAsTheSameFloat) {
  // Python parses a double, torch.tensor(..., float32) rounds it: every bit
  // pattern class (normal, subnormal, huge, signed zero) must survive.
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::uint32_t> bits;
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    const std::uint32_t b = bits(rng);
    float v;
    std::memcpy(&v, &b, sizeof v);
    if (!std::isfinite(v)) continue;
    const std::string s = python_float32(v);
    const float back = static_cast<float>(std::strtod(s.c_str(), nullptr));
    ASSERT_EQ(std::memcmp(&back, &v, sizeof v), 0) << s;
    ASSERT_NE(s.find_first_of(".e"), std::string::npos) << s << " would be a Python int";
    ++checked;
  }
  EXPECT_GT(checked, 190000);
  EXPECT_EQ(python_float32(0.43f), "0.43");  // shortest: the book's inputs stay readable
  EXPECT_EQ(python_float32(1.0f), "1.0");
  EXPECT_EQ(python_float32(-0.0f), "-0.0");
  EXPECT_EQ(python_float32(std::numeric_limits<float>::infinity()), "float('inf')");
}

TEST(PytorchScript, SeedThenConstructionThenWeightsThenModeThenPrintLast) {
  Config c = config_of(Variant::Multihead);
  c.qkv_bias = true;
  TorchGenerator gen(1);
  const Parameters w = init_parameters(c, 3, gen);
  const std::string s = pytorch_script(c, book(), &w);
  const std::size_t cls = at(s, "class MultiHeadAttention(nn.Module):");
  const std::size_t inputs = at(s, "inputs = torch.tensor(");
  const std::size_t seed = at(s, "torch.manual_seed(789)");
  const std::size_t build = at(s,
                               "mha = MultiHeadAttention(d_in, d_out, context_length, 0.5, "
                               "num_heads=2, qkv_bias=True)");
  const std::size_t copy = at(s, "    mha.W_query.weight.copy_(W_query.T)\n");
  at(s, "    mha.W_query.bias.copy_(b_query)\n");
  at(s, "    mha.out_proj.weight.copy_(W_out.T)\n");
  at(s, "    mha.out_proj.bias.copy_(b_out)\n");
  const std::size_t mode = at(s, "mha.train()");
  const std::size_t forward = at(s, "context_vecs = mha(batch)");
  EXPECT_LT(cls, inputs);
  EXPECT_LT(inputs, seed);
  EXPECT_LT(seed, build);
  EXPECT_LT(build, copy);
  EXPECT_LT(copy, mode);
  EXPECT_LT(mode, forward);
  EXPECT_EQ(last_line(s), "print(context_vecs)");
  // The weights as used (d_in x d_out = 3 x 4): the first row of W_query.
  at(s, "W_query = torch.tensor(\n    [[" + python_float32(w.qkv[0].query.weight(0, 0)) + ", ");
  // Every row commented with its token, as the book writes its inputs.
  at(s, "[0.43, 0.15, 0.89],  # Your\n");
}

TEST(PytorchScript, EachVariantHasItsClassModeAndWeightsOrientation) {
  const Inputs x = book();
  EXPECT_EQ(pytorch_script(config_of(Variant::Simple), x, nullptr).find("class "),
            std::string::npos);
  EXPECT_EQ(last_line(pytorch_script(config_of(Variant::Simple), x, nullptr)),
            "print(all_context_vecs)");

  Config v1 = config_of(Variant::SelfAttentionV1);
  TorchGenerator gen(1);
  const Parameters w1 = init_parameters(v1, 3, gen);
  const std::string s1 = pytorch_script(v1, x, &w1);
  at(s1, "class SelfAttention_v1(nn.Module):");
  at(s1, "    sa_v1.W_key.copy_(W_key)\n");  // an nn.Parameter, already (d_in, d_out)
  at(s1, "context_vecs = sa_v1(inputs)");

  Config wrapper = config_of(Variant::MultiheadWrapper);
  wrapper.training = false;
  const Parameters ww = init_parameters(wrapper, 3, gen);
  const std::string sw = pytorch_script(wrapper, x, &ww);
  at(sw, "class CausalAttention(nn.Module):");
  at(sw, "class MultiHeadAttentionWrapper(nn.Module):");
  at(sw, "    mha.heads[1].W_value.weight.copy_(W_value_1.T)\n");
  at(sw, "mha.eval()");
  EXPECT_EQ(sw.find("mha.train()"), std::string::npos);
}

TEST(PytorchScript, TokenNamesCannotEndTheirComment) {
  Inputs x = book();
  x.tokens[0] = "two\nlines";
  const std::string s = pytorch_script(config_of(Variant::Causal), x, nullptr);
  at(s, "# two lines\n");
}

TEST(PytorchScript, RandomInputsAreDrawnUnderTheInputSeed) {
  // The random form differs from the explicit form of the same draws only in
  // how the inputs are written: torch.rand(T, D) after the input seed.
  const Config c = config_of(Variant::Causal);
  const std::string random = pytorch_script(c, RandomInputs{5, 3, 42}, nullptr);
  at(random, "torch.manual_seed(42)\ninputs = torch.rand(5, 3)\n");
  EXPECT_EQ(random.find("inputs = torch.tensor("), std::string::npos);
  EXPECT_LT(random.find("torch.manual_seed(42)"), random.find("torch.manual_seed(789)"));

  Inputs drawn;
  drawn.embeddings.resize(5, 3);
  TorchGenerator gen(42);
  gen.fill_uniform(drawn.embeddings, 0.0f, 1.0f);
  drawn.tokens = {"a", "b", "c", "d", "e"};
  const std::string explicit_form = pytorch_script(c, drawn, nullptr);
  const std::string after = "\nd_in = inputs.shape[1]";
  ASSERT_NE(random.find(after), std::string::npos);
  EXPECT_EQ(random.substr(random.find(after)), explicit_form.substr(explicit_form.find(after)));
}

TEST(PytorchScript, TextInputsAreChapterTwosEmbeddingLayers) {
  // Token ids one a line with their tokens, the embedding seed before both
  // layers, the positional layer right after the token one.
  const TextInputs text{{7120, 7002}, {"Your", " journey"}, 4, 5, 8, kGpt2VocabSize};
  const std::string s = pytorch_script(config_of(Variant::Causal), text, nullptr);
  at(s,
     "token_ids = torch.tensor([\n    7120,  # \"Your\"\n    7002,  # \" journey\"\n])\n"
     "torch.manual_seed(5)\ntoken_embedding_layer = torch.nn.Embedding(50257, 4)\n"
     "pos_embedding_layer = torch.nn.Embedding(8, 4)  # context_length 8\n"
     "inputs = token_embedding_layer(token_ids) + pos_embedding_layer(torch.arange(2))\n");
  EXPECT_LT(s.find("torch.manual_seed(5)"), s.find("torch.manual_seed(789)"));
  const TextInputs no_positions{{7120}, {"Your"}, 4, 5, 0, kGpt2VocabSize};
  at(pytorch_script(config_of(Variant::Causal), no_positions, nullptr),
     "inputs = token_embedding_layer(token_ids)\n");
  const TextInputs too_long{{1, 2, 3}, {"a", "b", "c"}, 4, 5, 2, kGpt2VocabSize};
  EXPECT_THROW(pytorch_script(config_of(Variant::Causal), too_long, nullptr),
               std::invalid_argument);
}

TEST(PytorchScript, RefusesWhatCannotRun) {
  Config bad = config_of(Variant::Multihead);
  bad.d_out = 3;  // not divisible by 2 heads
  EXPECT_THROW(pytorch_script(bad, book(), nullptr), std::invalid_argument);
  EXPECT_THROW(pytorch_script(config_of(Variant::Causal), RandomInputs{0, 3, 1}, nullptr),
               std::invalid_argument);
  const Config c = config_of(Variant::Causal);
  TorchGenerator gen(1);
  const Parameters other_width = init_parameters(c, 5, gen);  // d_in 5, the book has 3
  EXPECT_THROW(pytorch_script(c, book(), &other_width), std::invalid_argument);
}

}  // namespace
}  // namespace attnscope::core
