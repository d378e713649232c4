// fuzz_config.cpp: config/preset JSON -> RunSpec -> resolved Config + Inputs
// -> a small run and both trace writers. Any crash, hang, sanitizer report or
// exception other than ParseError is a bug.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string_view>

#include "attnscope/attention/attention.hpp"
#include "attnscope/io/io.hpp"

namespace core = attnscope::core;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  core::Config config;
  core::Inputs inputs;
  try {
    core::resolve(core::parse_run_spec(text, "fuzz.json"), config, inputs);
  } catch (const core::ParseError&) {
    return 0;  // rejected with a message: the expected outcome for most inputs
  }
  // Valid configs run, kept small so each input takes microseconds.
  if (inputs.embeddings.rows() > 48 || inputs.embeddings.cols() > 48 || config.d_out > 48 ||
      config.num_heads > 8)
    return 0;
  const core::Trace trace = core::run_attention(config, inputs);
  std::ostringstream json, text_out;
  core::write_trace_json(trace, json);
  core::write_trace_text(trace, text_out);
  return 0;
}
