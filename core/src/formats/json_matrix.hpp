// json_matrix.hpp (private to core): JSON helpers, defined in
// json_formats.cpp and shared by the format readers and writers, io.cpp,
// weights.cpp and session.cpp. Keeps nlohmann out of the public headers.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "attnscope/base/matrix.hpp"
#include "attnscope/formats/formats.hpp"

namespace attnscope::core::detail {

using nlohmann::json;

// Parses a JSON document; throws ParseError "<source>: is not valid JSON: ..."
// etc. Any list or object with more than max(kMaxTokens, kMaxDim) entries
// aborts the parse as soon as it is seen, so that a huge file is refused
// before it is built in memory.
json parse_json_document(std::string_view text, std::string_view source);

// "a string", "a list", ... for messages.
std::string json_type_name(const json& v);

// Reads a matrix written as a list of rows of numbers; `where` names it in
// messages ("embeddings", "W_query", "heads[1].W_key"). With allow_vector a
// flat list of numbers is one row (biases). Non-finite values may appear
// only as the strings "inf", "-inf", "nan" and only with NonFinite::Allow.
// Values must fit a float32. Throws ParseError "<source>: <where>[r][c] ...".
RowMatrix json_matrix(const json& v, std::string_view source, const std::string& where,
                      bool allow_vector, NonFinite nonfinite);

// Appends v with 9 significant digits (round-trips float32, also through a
// double); non-finite values as the given spellings.
void append_float(std::string& out, float v, std::string_view pos_inf, std::string_view neg_inf,
                  std::string_view nan);

// The JSON string literal for s (s must be valid UTF-8).
std::string json_quoted(std::string_view s);

// True when s is well-formed UTF-8.
bool valid_utf8(std::string_view s);

// A matrix as a JSON list of rows (9 significant digits; non-finite values
// as the strings "inf", "-inf", "nan").
void append_json_rows(std::string& out, const RowMatrix& m);
// A one-row matrix as a flat JSON list (biases).
void append_json_vector(std::string& out, const RowMatrix& m);

}  // namespace attnscope::core::detail
