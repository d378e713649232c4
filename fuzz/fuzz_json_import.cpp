// fuzz_json_import.cpp: JSON embeddings (list of rows, {tokens, embeddings},
// exported stage files) and weights documents (canonical and state_dict
// names), checked against a few module shapes and run when they fit.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attnscope/formats/formats.hpp"
#include "attnscope/io/io.hpp"
#include "attnscope/io/weights.hpp"

namespace core = attnscope::core;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)core::parse_embeddings(text, "fuzz.json", core::EmbeddingFormat::Json);
  } catch (const core::ParseError&) {
  }
  try {
    (void)core::parse_stage_json(text, "fuzz.json");
  } catch (const core::ParseError&) {
  }
  core::WeightSet weights;
  try {
    weights = core::parse_weights_json(text, "fuzz.json");
  } catch (const core::ParseError&) {
    return 0;
  }
  const core::Inputs inputs = *core::find_preset("book");  // d_in = 3
  for (auto variant : {core::Variant::SelfAttentionV1, core::Variant::Causal,
                       core::Variant::MultiheadWrapper, core::Variant::Multihead})
    for (bool bias : {false, true}) {
      core::Config config;
      config.variant = variant;
      config.num_heads = 2;
      config.qkv_bias = bias;
      config.dropout = 0.5;
      try {
        const core::Parameters params = core::parameters_from_weights(weights, config, 3);
        if (core::validate_parameters(params, config, 3).empty())
          (void)core::run_with_explicit_parameters(config, inputs, params);
      } catch (const core::ParseError&) {
      }
    }
  return 0;
}
