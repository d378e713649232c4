// session.cpp: session documents (session.hpp).
#include "attnscope/io/session.hpp"

#include <cstdio>

#include "attnscope/io/io.hpp"
#include "attnscope/io/weights.hpp"
#include "formats/json_matrix.hpp"

namespace attnscope::core {

using detail::json;

namespace {

// The document's section of explicit weights (named like the stage, but a key).
// stage-literals: off
constexpr char kWeightsSection[] = "weights";
// stage-literals: on

[[noreturn]] void fail(std::string_view source, const std::string& what) {
  throw ParseError(std::string(source) + ": " + what);
}

// The options after chapter 3, each only when it differs from Config's
// default (a chapter-3 session reads as before), and cross-attention's
// second sequence when the run has one.
std::string modern_run_fields(const Session& s) {
  const Config& c = s.config;
  const Config defaults;
  std::string out;
  if (c.num_kv_groups != defaults.num_kv_groups)
    out += ",\n  \"num_kv_groups\": " + std::to_string(c.num_kv_groups);
  if (c.window) out += ",\n  \"window\": " + std::to_string(*c.window);
  if (c.latent_dim) out += ",\n  \"latent_dim\": " + std::to_string(*c.latent_dim);
  if (c.rope) out += ",\n  \"rope\": true";
  if (c.rope_theta != defaults.rope_theta) {
    char theta[32];
    std::snprintf(theta, sizeof theta, "%.17g", c.rope_theta);  // exact double
    out += std::string(",\n  \"rope_theta\": ") + theta;
  }
  if (s.inputs.memory.rows() > 0) {
    out += ",\n  \"memory_tokens\": [";
    for (std::size_t i = 0; i < s.inputs.memory_tokens.size(); ++i) {
      if (!detail::valid_utf8(s.inputs.memory_tokens[i]))
        throw ParseError("cannot save the session: token " + std::to_string(i) +
                         " of the second sequence is not valid UTF-8 text");
      out += (i ? ", " : "") + detail::json_quoted(s.inputs.memory_tokens[i]);
    }
    out += "],\n  \"memory_embeddings\": ";
    detail::append_json_rows(out, s.inputs.memory);
  }
  return out;
}

}  // namespace

std::string session_json(const Session& s) {
  if (const auto problem = validate(s.config, s.inputs); !problem.empty())
    throw ParseError("cannot save the session: " + problem);
  json view;
  try {
    view = json::parse(s.view_json);
  } catch (const json::exception&) {
    throw ParseError("cannot save the session: its view is not valid JSON");
  }
  if (!view.is_object())
    throw ParseError("cannot save the session: its view must be a JSON object");
  // A session that could not be opened again is not saved.
  if (s.weights)
    (void)parameters_from_weights(weights_of(*s.weights, s.config), s.config,
                                  static_cast<int>(s.inputs.embeddings.cols()));

  const Config& c = s.config;
  std::string out = "{\"attnscope_session\": " + std::to_string(kSessionVersion) + ",\n";
  out += " \"run\": {\"variant\": " + detail::json_quoted(variant_id(c.variant)) +
         ", \"d_out\": " + std::to_string(c.d_out) +
         ", \"num_heads\": " + std::to_string(c.num_heads);
  char dropout[32];
  std::snprintf(dropout, sizeof dropout, "%.17g", c.dropout);  // exact double
  out += std::string(", \"dropout\": ") + dropout + ", \"seed\": " + std::to_string(c.seed) +
         ", \"qkv_bias\": " + (c.qkv_bias ? "true" : "false") +
         ", \"training\": " + (c.training ? "true" : "false") + ",\n  \"tokens\": [";
  for (std::size_t i = 0; i < s.inputs.tokens.size(); ++i) {
    if (!detail::valid_utf8(s.inputs.tokens[i]))
      throw ParseError("cannot save the session: token " + std::to_string(i) +
                       " is not valid UTF-8 text");
    out += (i ? ", " : "") + detail::json_quoted(s.inputs.tokens[i]);
  }
  out += "],\n  \"embeddings\": ";
  detail::append_json_rows(out, s.inputs.embeddings);  // 9 digits: exact float32
  out += modern_run_fields(s);
  out += "}";
  if (s.weights) out += ",\n \"weights\": " + weights_json(*s.weights, c);
  out += ",\n \"view\": " + view.dump() + "}\n";
  return out;
}

Session parse_session(std::string_view text, std::string_view source) {
  const json doc = detail::parse_json_document(text, source);
  if (!doc.is_object() || !doc.contains("attnscope_session"))
    fail(source, "is not an attnscope session (it has no \"attnscope_session\" version field)");
  const json& version = doc["attnscope_session"];
  if (!version.is_number_integer() || version.get<long long>() < 1)
    fail(source, "has a bad session version " + version.dump() + " (expected 1)");
  if (version.get<long long>() > kSessionVersion)
    fail(source, "was saved by a newer attnscope (session version " + version.dump() +
                     "); this attnscope reads version " + std::to_string(kSessionVersion) +
                     ": update attnscope to open it");
  for (const auto& [key, value] : doc.items())
    if (key != "attnscope_session" && key != "run" && key != kWeightsSection && key != "view")
      fail(source,
           "unknown field '" + key + "' (a session has attnscope_session, run, weights, view)");
  if (!doc.contains("run") || !doc["run"].is_object())
    fail(source, "has no \"run\" object (tokens, embeddings and config)");

  Session s;
  // The run part is a config document: core's config parser checks every field.
  const RunSpec spec = parse_run_spec(doc["run"].dump(), source);
  resolve(spec, s.config, s.inputs);
  if (doc.contains(kWeightsSection)) {
    const json& w = doc[kWeightsSection];
    if (!w.is_object()) fail(source, "weights must be an object of named matrices");
    const WeightSet set = parse_weights_json(w.dump(), source);
    s.weights =
        parameters_from_weights(set, s.config, static_cast<int>(s.inputs.embeddings.cols()));
  }
  if (doc.contains("view")) {
    if (!doc["view"].is_object()) fail(source, "view must be a JSON object");
    s.view_json = doc["view"].dump();
  }
  return s;
}

void save_session(const std::filesystem::path& path, const Session& session, Overwrite mode) {
  write_file_atomic(path, session_json(session), mode);
}

Session load_session(const std::filesystem::path& path) {
  return parse_session(read_import_file(path), path.string());
}

Trace run_session(const Session& s, EnginePath path) {
  if (s.weights) return run_with_explicit_parameters(s.config, s.inputs, *s.weights, path);
  return run_attention(s.config, s.inputs, path);
}

}  // namespace attnscope::core
