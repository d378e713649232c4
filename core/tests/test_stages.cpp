// test_stages.cpp: the stage catalogue describes every stage the engine makes,
// and a trace answers by (layer, head, stage).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "attnscope/attention/attention.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/formats/formats.hpp"
#include "attnscope/io/io.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

// Every variant with every optional stage on: biases, two heads, dropout.
Trace full_trace(Variant v) {
  return run_attention(testing::every_option(v), random_inputs(5, 3, 42));
}

TEST(StageCatalogue, EveryStageTheEngineMakesHasOneRow) {
  std::set<std::string_view> ids;
  for (const StageInfo& s : stage_catalogue()) {
    EXPECT_TRUE(ids.insert(s.id).second) << "twice in the catalogue: " << s.id;
    EXPECT_FALSE(s.symbol.empty()) << s.id;
    EXPECT_FALSE(s.name.empty()) << s.id;
    EXPECT_FALSE(s.formula.empty()) << s.id;
    if (s.model_only) ids.erase(s.id);  // ModelRun's tests cover these
    // Mechanisms to come: no recipe has their parts yet.
    bool some_recipe = false;
    for (Variant v : kAllVariants) some_recipe = some_recipe || chapter3_recipe(v).has(s.part);
    if (!some_recipe) ids.erase(s.id);
  }
  std::set<std::string_view> made;
  for (Variant v : kAllVariants)
    for (const Stage& s : full_trace(v).stages) {
      EXPECT_NE(find_stage_info(s.id), nullptr) << variant_id(v) << " makes " << s.id;
      made.insert(stage_info(s.id).id);
    }
  EXPECT_EQ(made, ids) << "a catalogue row no variant makes";
}

// A class's recipe names exactly the stages its engine makes: every stage
// of a run is one of block_stage_ids, and every one of those but optional
// parameters (biases, v1's absent ones) is made; the steps follow them.
TEST(StageCatalogue, EachClassesRecipeListsTheStagesItsEngineMakes) {
  for (Variant v : kAllVariants) {
    const Trace t = full_trace(v);
    EXPECT_EQ(t.recipe(), chapter3_recipe(v));
    const std::vector<std::string_view> listed = block_stage_ids(chapter3_recipe(v));
    const std::set<std::string_view> ids(listed.begin(), listed.end());
    std::set<std::string_view> made;
    for (const Stage& s : t.stages) {
      EXPECT_TRUE(ids.count(stage_info(s.id).id)) << variant_id(v) << " makes " << s.id;
      made.insert(stage_info(s.id).id);
    }
    for (std::string_view id : listed)
      EXPECT_TRUE(is_parameter(id) || made.count(id)) << variant_id(v) << " lacks " << id;
  }
  // The parts no recipe has yet still order their rows where they go.
  BlockRecipe r = chapter3_recipe(Variant::Multihead);
  r.with(BlockPart::Rotary).with(BlockPart::Window);
  const std::vector<std::string_view> ids = block_stage_ids(r);
  const auto at = [&](std::string_view id) { return std::find(ids.begin(), ids.end(), id); };
  EXPECT_LT(at(stage_id::values), at(stage_id::queries_rotated));
  EXPECT_LT(at(stage_id::keys_rotated), at(stage_id::scores));
  EXPECT_LT(at(stage_id::mask), at(stage_id::window_mask));
  EXPECT_LT(at(stage_id::window_mask), at(stage_id::masked_scores));
  EXPECT_EQ(at(stage_id::group_keys), ids.end());
}

TEST(StageCatalogue, AxesAndScalesMatchTheMatricesTheEngineMakes) {
  for (Variant v : kAllVariants) {
    const Trace t = full_trace(v);
    for (const Stage& s : t.stages) {
      const StageInfo& info = stage_info(s.id);
      const bool square = s.data().rows() == t.num_tokens() && s.data().cols() == t.num_tokens();
      EXPECT_EQ(info.token_by_token(), square) << variant_id(v) << " " << s.id;
      if (info.rows == Axis::Bias) {
        EXPECT_EQ(s.data().rows(), 1) << s.id;
      }
      if (info.parameter()) {
        EXPECT_TRUE(s.id[0] == 'W' || s.id[0] == 'b') << s.id;
      }
      if (info.scale == StageScale::Weights) {
        EXPECT_LE(s.data().maxCoeff(), 2.0f) << s.id;  // dropout scales kept weights by 2
      }
    }
  }
}

TEST(StageCatalogue, EachStagesSourceIsInTheSameRun) {
  for (Variant v : kAllVariants) {
    const Trace t = full_trace(v);
    for (const Stage& s : t.stages) {
      const std::string_view src = stage_source(s.id, v);
      if (src.empty()) continue;
      bool found = false;
      for (const Stage& o : t.stages) found = found || o.id == src;
      EXPECT_TRUE(found) << variant_id(v) << ": " << s.id << " reads " << src;
    }
  }
  EXPECT_EQ(stage_source(stage_id::weights, Variant::Simple), stage_id::scores);
  EXPECT_EQ(stage_source(stage_id::scaled_scores, Variant::Causal), stage_id::masked_scores);
  EXPECT_EQ(stage_source(stage_id::scaled_scores, Variant::SelfAttentionV2), stage_id::scores);
}

TEST(StageCatalogue, UnknownIdsAreNotStagesAndDifferencesReadTheirBase) {
  EXPECT_EQ(find_stage_info("wieghts"), nullptr);
  EXPECT_THROW(stage_info("wieghts"), std::invalid_argument);
  EXPECT_FALSE(is_token_by_token("wieghts"));
  EXPECT_EQ(difference_base("diff_weights"), stage_id::weights);
  EXPECT_TRUE(is_token_by_token("diff_weights"));
  EXPECT_TRUE(is_parameter(stage_id::b_out));
  EXPECT_FALSE(is_parameter(stage_id::queries));
  EXPECT_EQ(axis_noun(stage_info(stage_id::W_key).rows), "input dim");
  EXPECT_EQ(axis_title(stage_info(stage_id::W_key).rows), "in");
  EXPECT_TRUE(stage_info(stage_id::masked_scores).holds_mask);
  EXPECT_FALSE(stage_info(stage_id::weights).holds_mask);
}

TEST(LayeredTrace, StagesAreAddressedByLayerHeadAndId) {
  const auto t = std::make_shared<const Trace>(full_trace(Variant::Multihead));
  EXPECT_EQ(t->num_layers(), 1);
  const Stage* w = t->find(StageKey{0, 1, stage_id::weights});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->layer, 0);
  EXPECT_EQ(w->head, 1);
  EXPECT_EQ(t->find(stage_id::weights, 1), w);
  EXPECT_EQ(t->find(StageKey{1, 1, stage_id::weights}), nullptr);

  EXPECT_EQ(t->heads_shown(), 2);
  const auto m = t->share({0, 1, stage_id::weights});
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m.get(), &w->data());  // shared, not copied
  EXPECT_EQ(t->share({2, 0, stage_id::weights}), nullptr);
}

TEST(LayeredTrace, TheJsonTraceNamesEachStagesLayer) {
  std::ostringstream out;
  write_trace_json(full_trace(Variant::Causal), out);
  EXPECT_NE(out.str().find("{\"id\": \"inputs\", \"layer\": 0, \"head\": -1,"), std::string::npos);
}

}  // namespace
}  // namespace attnscope::core
