// trace_writers.cpp: a Trace as JSON (trace-format.md) and as text.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>

#include "attnscope/base/stages.hpp"
#include "attnscope/io/io.hpp"
#include "formats/json_matrix.hpp"

namespace attnscope::core {

namespace {

using detail::json_quoted;

void append_number(std::string& out, float v) {
  detail::append_float(out, v, "\"inf\"", "\"-inf\"", "\"nan\"");
}

std::string shape_text(const RowMatrix& m) {
  return std::to_string(m.rows()) + "x" + std::to_string(m.cols());
}

// The config keys of the options after chapter 3 a variant reads (none for
// the chapter-3 classes without RoPE, whose traces stay as they were).
std::string modern_config_json(const Config& c) {
  std::string s;
  if (c.variant == Variant::GroupedQuery)
    s += ", \"num_kv_groups\": " + std::to_string(c.num_kv_groups);
  if (c.variant == Variant::SlidingWindow)
    s += ", \"window\": " + (c.window ? std::to_string(*c.window) : std::string("null"));
  if (c.variant == Variant::Latent)
    s += ", \"latent_dim\": " + std::to_string(c.latent_dim.value_or(book_latent_dim(c.d_out)));
  if (c.rope && takes_rope(c.variant)) {
    char theta[32];
    std::snprintf(theta, sizeof theta, "%.17g", c.rope_theta);
    s += std::string(", \"rope\": true, \"rope_theta\": ") + theta;
  }
  return s;
}

}  // namespace

void write_trace_json(const Trace& trace, std::ostream& out) {
  const Config& c = trace.config;
  std::string s;
  s += "{\"attnscope_trace\": 1, \"variant\": " + json_quoted(variant_id(c.variant)) + ",\n";
  s += " \"tokens\": [";
  for (std::size_t i = 0; i < trace.tokens.size(); ++i)
    s += (i ? ", " : "") + json_quoted(trace.tokens[i]);
  s += "],\n";
  if (!trace.key_tokens.empty()) {
    s += " \"key_tokens\": [";
    for (std::size_t i = 0; i < trace.key_tokens.size(); ++i)
      s += (i ? ", " : "") + json_quoted(trace.key_tokens[i]);
    s += "],\n";
  }
  if (trace.cache_step) {
    const CacheStepInfo& k = *trace.cache_step;
    char diff[32];
    std::snprintf(diff, sizeof diff, "%.9g", static_cast<double>(k.max_abs_diff));
    s += " \"cache_step\": {\"position\": " + std::to_string(k.position) +
         ", \"first_key_position\": " + std::to_string(k.first_key_position) +
         ", \"cache_bytes\": " + std::to_string(k.cache_bytes) +
         ", \"max_abs_diff_vs_full\": " + diff + "},\n";
  }
  char dropout[32];
  std::snprintf(dropout, sizeof dropout, "%.17g", c.dropout);
  s += " \"config\": {\"variant\": " + json_quoted(variant_id(c.variant)) +
       ", \"d_in\": " + std::to_string(trace.d_in) + ", \"d_out\": " + std::to_string(c.d_out) +
       ", \"num_heads\": " + std::to_string(c.num_heads) + ", \"dropout\": " + dropout +
       ", \"seed\": " + std::to_string(c.seed) +
       ", \"qkv_bias\": " + (c.qkv_bias ? "true" : "false") +
       ", \"training\": " + (c.training ? "true" : "false") + modern_config_json(c) +
       (trace.explicit_weights ? ", \"weights\": \"explicit\"" : "") + "},\n";
  s += " \"stages\": [";
  out << s;
  for (std::size_t k = 0; k < trace.stages.size(); ++k) {
    const Stage& st = trace.stages[k];
    s.clear();
    s += k ? ",\n  " : "\n  ";
    s += "{\"id\": " + json_quoted(st.id) + ", \"layer\": " + std::to_string(st.layer) +
         ", \"head\": " + std::to_string(st.head) + ", \"shape\": [" +
         std::to_string(st.data().rows()) + ", " + std::to_string(st.data().cols()) +
         "], \"data\": [";
    for (Eigen::Index r = 0; r < st.data().rows(); ++r) {
      s += r ? ", [" : "[";
      for (Eigen::Index col = 0; col < st.data().cols(); ++col) {
        if (col) s += ", ";
        append_number(s, st.data()(r, col));
      }
      s += "]";
    }
    s += "]}";
    out << s;
  }
  out << "\n]}\n";
}

void write_trace_text(const Trace& trace, std::ostream& out) {
  const Config& c = trace.config;
  out << variant_book_name(c.variant) << " (" << variant_id(c.variant)
      << "): " << trace.num_tokens() << " tokens, d_in " << trace.d_in;
  if (has_weights(c.variant)) out << ", d_out " << c.d_out << ", seed " << c.seed;
  if (has_heads(c.variant)) out << ", " << c.num_heads << " heads";
  if (is_causal(c.variant))
    out << ", dropout " << c.dropout << (c.training ? " (training)" : " (eval: off)");
  if (c.qkv_bias && c.variant != Variant::SelfAttentionV1 && c.variant != Variant::Simple)
    out << ", qkv_bias";
  if (c.variant == Variant::GroupedQuery) out << ", " << c.num_kv_groups << " K/V groups";
  if (c.variant == Variant::SlidingWindow && c.window) out << ", window " << *c.window;
  if (c.variant == Variant::Latent)
    out << ", latent_dim " << c.latent_dim.value_or(book_latent_dim(c.d_out));
  if (c.rope && takes_rope(c.variant)) out << ", RoPE (theta " << c.rope_theta << ")";
  if (trace.explicit_weights) out << ", explicit weights (not seeded)";
  out << "\n";
  if (!trace.key_tokens.empty()) {
    out << "keys: ";
    for (std::size_t i = 0; i < trace.key_tokens.size(); ++i)
      out << (i ? " " : "") << trace.key_tokens[i];
    out << "\n";
  }
  if (trace.cache_step)
    out << "cache step " << trace.cache_step->position << ": " << trace.cache_step->cache_bytes
        << " bytes cached; cached = full recompute within " << trace.cache_step->max_abs_diff
        << "\n";

  constexpr Eigen::Index kMaxShown = 12;  // rows/cols printed before eliding
  char buf[64];
  for (const Stage& st : trace.stages) {
    const RowMatrix& m = st.data();
    out << "\n== " << st.id;
    if (st.head >= 0) out << " [head " << st.head << "]";
    out << "  (" << shape_text(m) << ") ==\n";
    // Rows are labelled with token names when they are tokens: not for the
    // weight matrices and biases, whose rows are input dimensions.
    const bool parameter = is_parameter(st.id);
    const bool token_rows = !parameter && m.rows() == trace.num_tokens();
    const auto& key_names = trace.keys_tokens();
    const bool token_cols = token_rows && (trace.key_tokens.empty() || is_token_by_token(st.id)) &&
                            m.cols() == static_cast<Eigen::Index>(key_names.size());
    const Eigen::Index rows = std::min(m.rows(), kMaxShown);
    const Eigen::Index cols = std::min(m.cols(), kMaxShown);
    std::size_t label_w = 0;
    if (token_rows)
      for (Eigen::Index r = 0; r < rows; ++r)
        label_w = std::max(
            label_w, std::min<std::size_t>(trace.tokens[static_cast<std::size_t>(r)].size(), 12));
    auto label = [&](std::string_view s) {
      std::string l(s.substr(0, 12));
      l.resize(std::max(label_w, l.size()), ' ');
      return l;
    };
    if (token_cols) {
      out << label("") << "  ";
      for (Eigen::Index col = 0; col < cols; ++col) {
        std::snprintf(buf, sizeof buf, " %8.8s", key_names[static_cast<std::size_t>(col)].c_str());
        out << buf;
      }
      out << (m.cols() > cols ? "  ..." : "") << "\n";
    }
    for (Eigen::Index r = 0; r < rows; ++r) {
      out << (token_rows ? label(trace.tokens[static_cast<std::size_t>(r)]) : label("")) << "  ";
      for (Eigen::Index col = 0; col < cols; ++col) {
        const float v = m(r, col);
        if (std::isinf(v))
          std::snprintf(buf, sizeof buf, " %8s", v > 0 ? "inf" : "-inf");
        else if (std::fabs(v) >= 1e6f)  // torch's scientific form: 1e30 is not 31 digits
          std::snprintf(buf, sizeof buf, " %8.4e", static_cast<double>(v));
        else
          std::snprintf(buf, sizeof buf, " %8s", fixed_text(v, 4).c_str());
        out << buf;
      }
      out << (m.cols() > cols ? "  ..." : "") << "\n";
    }
    if (m.rows() > rows) out << "  ... (" << m.rows() - rows << " more rows)\n";
  }
}

std::string fixed_text(double v, int decimals) {
  char buf[400];  // the largest double has 309 digits before the point
  std::snprintf(buf, sizeof buf, "%.*f", std::clamp(decimals, 0, 20), v);
  // "-0.000": every digit is zero, so the sign says nothing about the value shown.
  if (buf[0] == '-' && std::strspn(buf + 1, "0.") == std::strlen(buf + 1)) return buf + 1;
  return buf;
}

}  // namespace attnscope::core
