// fuzz_session.cpp: session documents (version, run, weights, view) and
// running what they describe when it is small.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attnscope/io/io.hpp"
#include "attnscope/io/session.hpp"

namespace core = attnscope::core;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  core::Session session;
  try {
    session = core::parse_session(text, "fuzz-session.json");
  } catch (const core::ParseError&) {
    return 0;
  }
  if (session.inputs.embeddings.rows() > 48 || session.inputs.embeddings.cols() > 48 ||
      session.config.d_out > 48 || session.config.num_heads > 8)
    return 0;
  (void)core::run_session(session);
  (void)core::session_json(session);  // what parses can be written back
  return 0;
}
