// test_memory.cpp: the trace's memory, estimated before a run, and the check
// that refuses a run the machine cannot hold.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "attnscope/analysis/memory.hpp"
#include "attnscope/attention/attention.hpp"
#include "attnscope/io/io.hpp"

namespace attnscope::core {
namespace {

// The bytes of the distinct matrices a trace holds (shared ones once).
std::size_t distinct_bytes(const Trace& trace) {
  std::set<const RowMatrix*> seen;
  std::size_t n = 0;
  for (const Stage& s : trace.stages)
    if (seen.insert(&s.data()).second)
      n += static_cast<std::size_t>(s.data().size()) * sizeof(float);
  return n;
}

Inputs random_inputs(int tokens, int d_in) { return core::random_inputs(tokens, d_in, 7); }

// The classes after chapter 3 are estimated from above (core::modern's Run
// and the trace's copy of it): never less than the trace holds.
TEST(TraceMemory, TheEstimateOfTheClassesAfterChapter3CoversTheirTrace) {
  const Inputs in = random_inputs(37, 5);
  for (const Variant v : kAllVariants) {
    if (is_chapter3(v)) continue;
    for (const bool rope : {false, true}) {
      Config c;
      c.variant = v;
      c.d_out = 8;
      c.num_heads = 2;
      c.rope = rope && takes_rope(v);
      c.window = 4;
      c.latent_dim = 3;
      ASSERT_EQ(validate(c, in), "");
      EXPECT_GE(trace_memory_bytes(c, 37, 5), distinct_bytes(run_attention(c, in)))
          << variant_id(v);
    }
  }
}

TEST(TraceMemory, TheEstimateIsExactlyWhatEveryVariantsTraceHolds) {
  const Inputs in = random_inputs(37, 5);
  for (const Variant v : kChapter3Variants) {
    for (const bool bias : {false, true}) {
      Config c;
      c.variant = v;
      c.d_out = 6;
      c.num_heads = has_heads(v) ? 3 : 1;
      c.qkv_bias = bias && v != Variant::Simple && v != Variant::SelfAttentionV1;
      c.dropout = 0.1;
      c.training = false;  // no dropout flags: the trace is all there is
      ASSERT_EQ(validate(c, in), "");
      const Trace t = run_attention(c, in);
      EXPECT_EQ(trace_memory_bytes(c, 37, 5), distinct_bytes(t))
          << variant_id(v) << (c.qkv_bias ? " with qkv_bias" : "");
      // Through the cache (the app's path) the trace holds the same matrices.
      ParameterCache cache;
      EXPECT_EQ(trace_memory_bytes(c, 37, 5), distinct_bytes(run_attention(c, in, cache)))
          << variant_id(v) << " via the cache";
    }
  }
}

// The book's MultiHeadAttention at GPT-2's width, training with dropout 0.1.
Config gpt2_layer(int heads) {
  Config c;
  c.variant = Variant::Multihead;
  c.d_out = 768;
  c.num_heads = heads;
  c.dropout = 0.1;
  return c;
}

TEST(TraceMemory, DropoutDrawsAddOneByteAWeightPerHeadWhileTheTraceIsBuilt) {
  Config c = gpt2_layer(12);
  c.training = false;
  const std::size_t eval = trace_memory_bytes(c, 1024, 768);
  c.training = true;
  EXPECT_EQ(trace_memory_bytes(c, 1024, 768) - eval, 12u * 1024u * 1024u);
  // The GPT-2 sized trace of docs/PERFORMANCE.md: ~320 MiB.
  EXPECT_GT(eval, 300u << 20);
  EXPECT_LT(eval, 340u << 20);
}

TEST(TraceMemory, ARunThatDoesNotFitIsRefusedWithBothSizesAndWhatToChange) {
  const Config c = gpt2_layer(64);
  // 64 heads x 6 stages of 4096 x 4096 floats: ~26 GB.
  const std::string problem = memory_problem(c, 4096, 768, std::size_t{16} << 30);
  EXPECT_NE(problem.find("this trace needs 2"), std::string::npos) << problem;
  EXPECT_NE(problem.find("GB of memory and 17.2 GB is available"), std::string::npos) << problem;
  EXPECT_NE(problem.find("fewer tokens"), std::string::npos) << problem;
  EXPECT_EQ(memory_problem(c, 64, 768, std::size_t{16} << 30), "") << "a small one fits";
  EXPECT_EQ(memory_problem(c, 4096, 768, std::nullopt), "") << "unknown: no refusal";
  const std::size_t need = trace_memory_bytes(c, 4096, 768);
  EXPECT_EQ(memory_problem(c, 4096, 768, need), "") << "exactly enough is enough";
  EXPECT_NE(memory_problem(c, 4096, 768, need - 1), "");
}

TEST(TraceMemory, TheAvailableMemoryIsReadFromTheSystem) {
  const std::optional<std::size_t> available = available_memory_bytes();
#if defined(__linux__)
  ASSERT_TRUE(available.has_value());
  EXPECT_GT(*available, std::size_t{16} << 20);
#else
  (void)available;
#endif
}

// The budget is in MB of 10^6 bytes, the unit memory_problem prints, so a
// budget of 100 reads back as "100 MB is available".
TEST(TraceMemory, TheBudgetFromTheEnvironmentIsInTheMegabytesTheMessagePrints) {
  ASSERT_EQ(setenv("ATTNSCOPE_MEMORY_LIMIT_MB", "100", 1), 0);
  const std::optional<std::size_t> capped = available_memory_bytes();
  ASSERT_EQ(setenv("ATTNSCOPE_MEMORY_LIMIT_MB", "not a number", 1), 0);
  const std::optional<std::size_t> ignored = available_memory_bytes();
  // More MB than bytes fit in size_t: no limit, not a wrapped-around small one.
  ASSERT_EQ(setenv("ATTNSCOPE_MEMORY_LIMIT_MB", "18446744073710", 1), 0);
  const std::optional<std::size_t> huge = available_memory_bytes();
  unsetenv("ATTNSCOPE_MEMORY_LIMIT_MB");
  ASSERT_TRUE(capped.has_value());
  EXPECT_EQ(*capped, std::size_t{100000000});
  const std::string problem = memory_problem(gpt2_layer(12), 1024, 768, capped);
  EXPECT_NE(problem.find("and 100 MB is available"), std::string::npos) << problem;
#if defined(__linux__)
  ASSERT_TRUE(ignored.has_value());
  EXPECT_GT(*ignored, *capped)
      << "a value that is not a number is ignored (MemAvailable is > 100 MB)";
  ASSERT_TRUE(huge.has_value());
  EXPECT_GT(*huge, *capped) << "a budget past size_t's range does not wrap around";
#endif
}

}  // namespace
}  // namespace attnscope::core
