// formats.cpp: stage labels and axes, and the embeddings import. The
// readers and writers are in csv.cpp, npy.cpp, json_formats.cpp and
// writers.cpp.
//
// Sections
//   1. stage labels
//   2. embeddings import
#include "attnscope/formats/formats.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "attnscope/base/errors.hpp"
#include "attnscope/formats/files.hpp"
#include "formats/formats_internal.hpp"
#include "formats/json_matrix.hpp"

namespace attnscope::core {

using detail::fail;
using detail::json;
using detail::json_type_name;

// ---------------------------------------------------------------------------
// 1. Stage labels

std::string_view format_extension(DataFormat f) {
  switch (f) {
    case DataFormat::Csv:
      return ".csv";
    case DataFormat::Npy:
      return ".npy";
    case DataFormat::Json:
      return ".json";
    case DataFormat::Torch:
      return ".py";
  }
  return "";
}

std::string_view format_id(DataFormat f) {
  switch (f) {
    case DataFormat::Csv:
      return "csv";
    case DataFormat::Npy:
      return "npy";
    case DataFormat::Json:
      return "json";
    case DataFormat::Torch:
      return "torch";
  }
  return "";
}

std::optional<DataFormat> parse_data_format(std::string_view id) {
  for (auto f : {DataFormat::Csv, DataFormat::Npy, DataFormat::Json, DataFormat::Torch})
    if (format_id(f) == id) return f;
  return std::nullopt;
}

StageAxes stage_axes(const Trace& trace, const Stage& stage) {
  StageAxes axes;
  const Eigen::Index rows = stage.data().rows();
  const Eigen::Index cols = stage.data().cols();
  auto numbered = [](std::string_view prefix, Eigen::Index n) {
    std::vector<std::string> labels;
    labels.reserve(static_cast<std::size_t>(n));
    for (Eigen::Index k = 0; k < n; ++k) labels.push_back(std::string(prefix) + std::to_string(k));
    return labels;
  };
  const StageInfo* info = find_stage_info(stage.id);
  const Axis row_axis = info ? info->rows : Axis::Token;
  const Axis col_axis = info ? info->cols : Axis::Dim;
  axes.row_title = axis_title(row_axis);
  if (row_axis == Axis::Bias)
    axes.row_labels.assign(static_cast<std::size_t>(rows), "bias");
  else if (row_axis == Axis::InDim)
    axes.row_labels = numbered(axis_label_prefix(row_axis), rows);
  else  // token rows; "r0", "r1", ... when they do not match the tokens
    axes.row_labels = rows == trace.num_tokens() ? trace.tokens : numbered("r", rows);
  if (col_axis == Axis::Key && cols == trace.num_tokens()) {
    axes.col_title = axis_title(Axis::Key);
    axes.col_labels = trace.tokens;
  } else {
    const Axis a = col_axis == Axis::Key ? Axis::Dim : col_axis;
    axes.col_title = axis_title(a);
    axes.col_labels = numbered(axis_label_prefix(a), cols);
  }
  return axes;
}

// ---------------------------------------------------------------------------
// 2. Embeddings import

EmbeddingFormat detect_embedding_format(const std::filesystem::path& path, std::string_view bytes) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".csv" || ext == ".txt") return EmbeddingFormat::Csv;
  if (ext == ".npy") return EmbeddingFormat::Npy;
  if (ext == ".json") return EmbeddingFormat::Json;
  if (bytes.starts_with("\x93NUMPY")) return EmbeddingFormat::Npy;
  const auto first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (bytes[first] == '[' || bytes[first] == '{'))
    return EmbeddingFormat::Json;
  return EmbeddingFormat::Csv;
}

namespace {

void check_embedding_size(const RowMatrix& m, std::string_view source) {
  if (m.rows() > kMaxTokens)
    fail(source, "has " + std::to_string(m.rows()) + " rows: at most " +
                     std::to_string(kMaxTokens) + " tokens are supported");
  if (m.cols() > kMaxDim)
    fail(source, "has " + std::to_string(m.cols()) + " columns: d_in is at most " +
                     std::to_string(kMaxDim));
}

}  // namespace

ImportedEmbeddings parse_embeddings(std::string_view bytes, std::string_view source,
                                    EmbeddingFormat format) {
  ImportedEmbeddings out;
  switch (format) {
    case EmbeddingFormat::Csv: {
      Table t = parse_csv_table(bytes, source, NonFinite::Reject);
      out.tokens = std::move(t.row_labels);
      out.embeddings = std::move(t.values);
      break;
    }
    case EmbeddingFormat::Npy:
      out.embeddings = parse_npy(bytes, source, NpyRank::Matrix, NonFinite::Reject);
      break;
    case EmbeddingFormat::Json: {
      const json doc = detail::parse_json_document(bytes, source);
      const json* rows = &doc;
      if (doc.is_object()) {
        if (doc.contains("id") && doc.contains("data")) {
          // A stage exported as JSON (stage_json): any stage whose rows are
          // tokens can be fed back in as embeddings.
          StageFile f = parse_stage_json(bytes, source);
          if (is_parameter(f.stage.id))
            fail(source, "holds the parameter " + f.stage.id + ", whose rows are not tokens");
          const RowMatrix& d = f.stage.data();
          for (Eigen::Index r = 0; r < d.rows(); ++r)
            for (Eigen::Index c = 0; c < d.cols(); ++c)
              if (!std::isfinite(d(r, c)))
                fail(source, "data[" + std::to_string(r) + "][" + std::to_string(c) + "] is " +
                                 (std::isnan(d(r, c)) ? "nan"
                                  : d(r, c) > 0       ? "inf"
                                                      : "-inf") +
                                 ": every value must be a finite number");
          if (f.tokens.size() == static_cast<std::size_t>(d.rows()))
            out.tokens = std::move(f.tokens);
          out.embeddings = f.stage.data();
          break;
        }
        for (const auto& [key, value] : doc.items())
          if (key != "tokens" && key != "embeddings" && key != "description")  // not a stage id
            fail(source, "unknown field '" + key +
                             "': an embeddings file holds only \"tokens\" and \"embeddings\" "
                             "(a run's config goes to --config)");
        if (!doc.contains("embeddings"))  // not a stage id
          fail(source,
               "has no \"embeddings\" field: expected {\"tokens\": [...], "
               "\"embeddings\": [[...], ...]} or a list of rows");
        rows = &doc["embeddings"];  // not a stage id
        if (doc.contains("tokens")) {
          const json& tokens = doc["tokens"];
          if (!tokens.is_array())
            fail(source, "tokens must be a list of strings, got " + json_type_name(tokens));
          for (std::size_t i = 0; i < tokens.size(); ++i) {
            if (!tokens[i].is_string())
              fail(source, "tokens[" + std::to_string(i) + "] must be a string, got " +
                               json_type_name(tokens[i]));
            out.tokens.push_back(tokens[i].get<std::string>());
          }
        }
      } else if (!doc.is_array()) {
        fail(source,
             "must be a list of rows or an object {\"tokens\": [...], \"embeddings\": "
             "[[...], ...]}, got " +
                 json_type_name(doc));
      }
      const char* where = "embeddings";  // not a stage id
      out.embeddings = detail::json_matrix(*rows, source, where, false, NonFinite::Reject);
      break;
    }
  }
  check_embedding_size(out.embeddings, source);
  if (!out.tokens.empty() && out.tokens.size() != static_cast<std::size_t>(out.embeddings.rows()))
    fail(source, std::to_string(out.tokens.size()) + " token names for " +
                     std::to_string(out.embeddings.rows()) +
                     " rows of embeddings: give exactly one name per row");
  return out;
}

ImportedEmbeddings read_embeddings_file(const std::filesystem::path& path) {
  const std::string bytes = read_import_file(path);
  return parse_embeddings(bytes, path.string(), detect_embedding_format(path, bytes));
}

Inputs apply_embeddings(const ImportedEmbeddings& imported,
                        const std::vector<std::string>& current_tokens, std::string_view source) {
  Inputs inputs;
  inputs.embeddings = imported.embeddings;
  const auto T = static_cast<std::size_t>(imported.embeddings.rows());
  if (!imported.tokens.empty()) {
    if (imported.tokens.size() != T)
      fail(source, std::to_string(imported.tokens.size()) + " token names for " +
                       std::to_string(T) + " rows: give exactly one name per row");
    for (std::size_t i = 0; i < T; ++i)
      if (!detail::valid_utf8(imported.tokens[i]))
        fail(source, "token name " + std::to_string(i) + " is not valid UTF-8 text");
    inputs.tokens = imported.tokens;
  } else if (current_tokens.empty()) {
    for (std::size_t t = 0; t < T; ++t) {
      std::string name = std::to_string(t);
      name.insert(name.begin(), 't');
      inputs.tokens.push_back(std::move(name));
    }
  } else if (current_tokens.size() == T) {
    inputs.tokens = current_tokens;
  } else {
    fail(source, "has " + std::to_string(T) + (T == 1 ? " row" : " rows") + " but there are " +
                     std::to_string(current_tokens.size()) +
                     (current_tokens.size() == 1 ? " token" : " tokens") +
                     ": give one row per token, or name the tokens in the file "
                     "(a first column in CSV, \"tokens\" in JSON)");
  }
  return inputs;
}

}  // namespace attnscope::core
