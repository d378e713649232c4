// writers.cpp: one stage as file bytes (CSV, NPY, JSON, torch.tensor text)
// and export_stages, which writes a set of stages as new files.
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
#include "attnscope/formats/formats.hpp"
#include "formats/json_matrix.hpp"

namespace attnscope::core {

using detail::append_float;
using detail::json;
using detail::json_quoted;

// ---------------------------------------------------------------------------
// Writers

namespace {

// A CSV field, quoted when it contains a separator, a quote, a line break or
// surrounding spaces (RFC 4180: quotes inside are doubled).
void append_csv_field(std::string& out, std::string_view s) {
  const bool quote = s.find_first_of(",\"\r\n") != std::string_view::npos ||
                     (!s.empty() && (s.front() == ' ' || s.back() == ' ' || s.front() == '\t' ||
                                     s.back() == '\t'));
  if (!quote) {
    out += s;
    return;
  }
  out += '"';
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

}  // namespace

std::string stage_csv(const Trace& trace, const Stage& stage) {
  const StageAxes axes = stage_axes(trace, stage);
  const RowMatrix& m = stage.data();
  std::string out;
  out.reserve(static_cast<std::size_t>(m.size()) * 14 + 64);
  // Corner cell left empty: that is how a reader tells a label column from
  // data even when token names look like numbers (as pandas writes it too).
  for (const auto& label : axes.col_labels) {
    out += ',';
    append_csv_field(out, label);
  }
  out += '\n';
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    append_csv_field(out, axes.row_labels[static_cast<std::size_t>(r)]);
    for (Eigen::Index c = 0; c < m.cols(); ++c) {
      out += ',';
      append_float(out, m(r, c), "inf", "-inf", "nan");
    }
    out += '\n';
  }
  return out;
}

std::string matrix_npy(const RowMatrix& m) {
  // NPY v1.0: magic, version, uint16 LE header length, a Python dict literal
  // padded with spaces and ending in '\n' so that the data starts on a
  // 64-byte boundary (what numpy itself writes).
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(m.rows()) + ", " + std::to_string(m.cols()) + "), }";
  const std::size_t preamble = 10;
  const std::size_t total = (preamble + header.size() + 1 + 63) / 64 * 64;
  header.append(total - preamble - header.size() - 1, ' ');
  header += '\n';

  std::string out;
  const std::size_t data_bytes = static_cast<std::size_t>(m.size()) * sizeof(float);
  out.reserve(total + data_bytes);
  out += "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  const auto len = static_cast<std::uint16_t>(header.size());
  out += static_cast<char>(len & 0xFF);
  out += static_cast<char>(len >> 8);
  out += header;
  const std::size_t start = out.size();
  out.resize(start + data_bytes);
  if (data_bytes > 0)  // an empty matrix has no data pointer to copy from
    std::memcpy(out.data() + start, m.data(), data_bytes);  // RowMatrix: C order already
  if constexpr (std::endian::native == std::endian::big) {
    for (std::size_t k = start; k < out.size(); k += 4) {
      std::swap(out[k], out[k + 3]);
      std::swap(out[k + 1], out[k + 2]);
    }
  }
  return out;
}

std::string stage_json(const Trace& trace, const Stage& stage) {
  std::string out = "{\"id\": " + json_quoted(stage.id) +
                    ", \"layer\": " + std::to_string(stage.layer) +
                    ", \"head\": " + std::to_string(stage.head) +
                    ", \"variant\": " + json_quoted(trace.producer()) + ",\n \"tokens\": [";
  for (std::size_t i = 0; i < trace.tokens.size(); ++i)
    out += (i ? ", " : "") + json_quoted(trace.tokens[i]);
  out += "],\n \"shape\": [" + std::to_string(stage.data().rows()) + ", " +
         std::to_string(stage.data().cols()) + "],\n \"data\": ";
  detail::append_json_rows(out, stage.data());
  out += "}\n";
  return out;
}

std::string matrix_torch(const RowMatrix& m) {
  // Laid out as torch prints a 2-D tensor: one row per line, aligned.
  std::string out = "torch.tensor([";
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    if (r) out += ",\n              ";
    out += "[";
    for (Eigen::Index c = 0; c < m.cols(); ++c) {
      if (c) out += ", ";
      append_float(out, m(r, c), "float('inf')", "float('-inf')", "float('nan')");
    }
    out += "]";
  }
  out += "])\n";
  return out;
}

std::string stage_file_bytes(const Trace& trace, const Stage& stage, DataFormat f) {
  switch (f) {
    case DataFormat::Csv:
      return stage_csv(trace, stage);
    case DataFormat::Npy:
      return matrix_npy(stage.data());
    case DataFormat::Json:
      return stage_json(trace, stage);
    case DataFormat::Torch:
      return matrix_torch(stage.data());
  }
  return {};
}

// ---------------------------------------------------------------------------
// Exporting

std::vector<std::filesystem::path> export_stages(const Trace& trace,
                                                 const std::vector<const Stage*>& stages,
                                                 const std::filesystem::path& dir,
                                                 std::string_view ext, const StageRenderer& render,
                                                 std::chrono::system_clock::time_point t) {
  require_folder(dir);
  const std::string producer = trace.producer();
  const bool layered = trace.num_layers() > 1;
  std::vector<std::filesystem::path> written;
  try {
    for (const Stage* st : stages) {
      // A model's stages name their layer: weights_l3_h2_gpt2_<time>.
      const std::string id =
          layered && st->layer >= 0 ? st->id + "_l" + std::to_string(st->layer) : st->id;
      written.push_back(
          write_new_file(dir, export_stem(id, st->head, producer, t), ext, render(trace, *st)));
    }
  } catch (...) {
    // Take back this call's files: a half export is harder to use than none.
    std::error_code ec;
    for (const auto& p : written) std::filesystem::remove(p, ec);
    throw;
  }
  return written;
}

StageRenderer data_renderer(DataFormat f) {
  return [f](const Trace& trace, const Stage& stage) { return stage_file_bytes(trace, stage, f); };
}

}  // namespace attnscope::core
