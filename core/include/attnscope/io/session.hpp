// session.hpp: a session file reproduces a run exactly. It holds the run's
// tokens, embeddings and config, the explicit weights when there are any,
// and the GUI's view state as an opaque JSON object:
//
//   {"attnscope_session": 1,
//    "run":     {"tokens": [...], "embeddings": [[...]], "variant": ..., ...},
//    "weights": {"W_query": [[...]], ...},      (optional; weights.hpp format)
//    "view":    {...}}                          (optional; owned by the GUI)
//
// "run" is a config document (docs/trace-format.md), so anything a config
// file may say a session may say. docs/file-formats.md has the details.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "attnscope/attention/attention.hpp"
#include "attnscope/base/config.hpp"
#include "attnscope/base/trace.hpp"
#include "attnscope/formats/files.hpp"

namespace attnscope::core {

// The session format version this build writes and reads.
inline constexpr int kSessionVersion = 1;

// Everything needed to reproduce a run, plus the view.
struct Session {
  Config config;
  Inputs inputs;
  std::optional<Parameters> weights;  // explicit parameters; nullopt: seeded from config.seed
  std::string view_json = "{}";       // a JSON object the GUI owns (stage, head, cell, ...)
};

// The session as a JSON document; throws ParseError when view_json is not
// a JSON object or the run does not validate.
std::string session_json(const Session& session);

// Parses a session document; throws ParseError naming `source` (not a
// session, a newer version, a bad run, weights that do not fit the run).
Session parse_session(std::string_view text, std::string_view source);

// Writes the session atomically (files.hpp); by default replacing the file
// (a Save dialog has asked already). Throws FileError or ParseError.
void save_session(const std::filesystem::path& path, const Session& session,
                  Overwrite mode = Overwrite::Replace);

// Reads and parses a session file; throws ParseError naming the file.
Session load_session(const std::filesystem::path& path);

// The trace the session describes: run_attention, or
// run_with_explicit_parameters when it has weights.
Trace run_session(const Session& session, EnginePath path = EnginePath::Fast);

}  // namespace attnscope::core
