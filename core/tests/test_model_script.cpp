// test_model_script.cpp: the book's GPTModel as a PyTorch script: which
// models have one, what the script holds, and the runs it refuses. The
// scripts themselves run against the engine in app/tests/model_script_test.py.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "attnscope/model/model_script.hpp"

namespace core = attnscope::core;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

core::ModelScriptRun tiny_run() {
  core::ModelScriptRun run;
  run.weights = "/models/book/model.pth";
  core::Gpt2Config& c = run.config.config;
  c.vocab_size = 50257;
  c.n_positions = 64;
  c.n_embd = 32;
  c.n_head = 4;
  c.n_layer = 2;
  run.config.qkv_bias = true;
  run.config.drop_rate = 0.1;
  run.ids = {6109, 3626, 6100, 345};
  run.tokens = {"Every", " effort", " moves", " you"};
  run.text = "Every effort moves you";
  run.layer = 1;
  run.head = 3;
  run.top = 7;
  return run;
}

TEST(ModelScript, OnlyTheBooksPthHasAScript) {
  core::ModelFiles pth{"/m/model.pth", "/m/gpt_config.json", {}};
  EXPECT_FALSE(core::model_script_refusal(pth));
  EXPECT_FALSE(core::model_script_refusal(pth, core::ModelFormat::Book));
  EXPECT_FALSE(core::model_script_refusal({"/m/model.pt", "/m/gpt_config.json", {}}));
  for (const char* weights : {"/gpt2/model.safetensors", "/gpt2/model.safetensors.index.json",
                              "/gpt2/pytorch_model.bin"}) {
    const auto why = core::model_script_refusal({weights, "/gpt2/config.json", {}});
    ASSERT_TRUE(why) << weights;
    EXPECT_TRUE(has(*why, ".pth")) << *why;
    EXPECT_TRUE(has(*why, "attnscope-cli model trace")) << *why;
  }
  // A .pth holding Hugging Face's layout: not the book's classes either.
  const auto why = core::model_script_refusal(pth, core::ModelFormat::HuggingFace);
  ASSERT_TRUE(why);
  EXPECT_TRUE(has(*why, "model trace")) << *why;
}

TEST(ModelScript, HoldsTheConfigThePathTheIdsAndTheHead) {
  const std::string s = core::model_script(tiny_run());
  for (const char* part : {"class LayerNorm(nn.Module)",
                           "class GELU(nn.Module)",
                           "class FeedForward(nn.Module)",
                           "class MultiHeadAttention(nn.Module)",
                           "class TransformerBlock(nn.Module)",
                           "class GPTModel(nn.Module)",
                           "self.eps = 1e-5",
                           "\"vocab_size\": 50257,",
                           "\"context_length\": 64,",
                           "\"emb_dim\": 32,",
                           "\"n_heads\": 4,",
                           "\"n_layers\": 2,",
                           "\"drop_rate\": 0.1,",
                           "\"qkv_bias\": True,",
                           "PTH = \"/models/book/model.pth\"",
                           "#   Every effort moves you\n",
                           "ids = [\n    6109,  # \"Every\"\n    3626,  # \" effort\"\n",
                           "    345,  # \" you\"\n]\n",
                           "LAYER = 1",
                           "HEAD = 3",
                           "TOP = 7",
                           "weights_only=True",
                           "\"model_state_dict\"",
                           "model.eval()",
                           "print(\"weights\", i,",
                           "print(\"next\", rank, i,"})
    EXPECT_TRUE(has(s, part)) << part;
  core::ModelScriptRun plain = tiny_run();
  plain.config.qkv_bias = false;
  plain.config.drop_rate = 0.0;
  const std::string p = core::model_script(plain);
  EXPECT_TRUE(has(p, "\"qkv_bias\": False,"));
  EXPECT_TRUE(has(p, "\"drop_rate\": 0.0,"));
}

TEST(ModelScript, TextAndTokensCannotBreakOutOfTheirComments) {
  core::ModelScriptRun run = tiny_run();
  run.text = "one\ntwo\rprint('x')\x01";
  run.tokens = {"a\nb", "\"q\"", "\\", "\r"};
  const std::string s = core::model_script(run);
  EXPECT_TRUE(has(s, "#   one\n#   two\\x0dprint('x')\\x01\n")) << s.substr(0, 200);
  EXPECT_TRUE(has(s, "6109,  # \"a\\x0ab\"\n"));
  EXPECT_TRUE(has(s, "3626,  # \"\\\"q\\\"\"\n"));
  EXPECT_TRUE(has(s, "6100,  # \"\\\\\"\n"));
  EXPECT_TRUE(has(s, "345,  # \"\\x0d\"\n"));
  // A path that is not UTF-8 reaches torch.load through its bytes.
  run.weights = "/m/\xff.pth";
  EXPECT_TRUE(has(core::model_script(run), "PTH = os.fsdecode(b\"/m/\\xff.pth\")"));
}

TEST(ModelScript, RefusesARunTheModelCannotTake) {
  const auto refused = [](auto change) {
    core::ModelScriptRun run = tiny_run();
    change(run);
    EXPECT_THROW(core::model_script(run), std::invalid_argument);
  };
  refused([](core::ModelScriptRun& r) { r.ids.clear(); });
  refused([](core::ModelScriptRun& r) {
    r.ids.assign(65, 1);
    r.tokens.clear();
  });
  refused([](core::ModelScriptRun& r) { r.ids[0] = 50257; });
  refused([](core::ModelScriptRun& r) { r.ids[0] = -1; });
  refused([](core::ModelScriptRun& r) { r.layer = 2; });
  refused([](core::ModelScriptRun& r) { r.layer = -1; });
  refused([](core::ModelScriptRun& r) { r.head = 4; });
  refused([](core::ModelScriptRun& r) { r.top = 0; });
  refused([](core::ModelScriptRun& r) { r.tokens.pop_back(); });
  core::ModelScriptRun at_limit = tiny_run();
  at_limit.ids.assign(64, 1);
  at_limit.tokens.clear();
  EXPECT_NO_THROW(core::model_script(at_limit));
}

}  // namespace
