// formats.hpp: one stage as the bytes of a file, and matrices back from files.
//
//   writers  stage_csv, matrix_npy, stage_json, matrix_torch (+ stage_file_bytes)
//   readers  parse_csv_table, parse_npy, parse_stage_json
//   imports  parse_embeddings / read_embeddings_file, then apply_embeddings
//   export   export_stages: stages to files by the naming rule, all or nothing
//
// Writers return the whole file in memory; files.hpp puts it on disk.
// Readers throw ParseError (base/errors.hpp) whose message starts with the file's name
// and says what is wrong and where (line/column, row/column, field).
// docs/file-formats.md documents every format.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/base/config.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/base/trace.hpp"

namespace attnscope::core {

// The data formats a stage can be exported as.
enum class DataFormat {
  Csv,    // text table: header row of column labels, first column row labels
  Npy,    // NumPy .npy v1.0, float32 '<f4', C order, shape (rows, cols)
  Json,   // one stage: {"id", "head", "variant", "tokens", "shape", "data"}
  Torch,  // Python source: torch.tensor([[...], ...]), for the clipboard
};

// The format's file extension with its dot, e.g. ".npy" (".py" for Torch).
std::string_view format_extension(DataFormat f);
// The format's name on the command line, e.g. "npy".
std::string_view format_id(DataFormat f);
// Parses format_id(); nullopt when unknown.
std::optional<DataFormat> parse_data_format(std::string_view id);

// How a stage's rows and columns are labelled (CSV header, SVG axes, GUI).
struct StageAxes {
  std::string row_title;                // "query", "token", "in" or "" (biases)
  std::string col_title;                // "key", "dim" or "out"
  std::vector<std::string> row_labels;  // token names, or "in0", "in1", ... / "bias"
  std::vector<std::string> col_labels;  // token names, or "d0", "d1", ... / "out0", ...
};

// The labels of `stage`'s rows and columns: token names on token axes
// (rows of everything but parameters; both axes of T x T stages), else
// names that are never numbers ("d0", "in0", "out0"), so a header row or
// label column is always recognisable when read back.
StageAxes stage_axes(const Trace& trace, const Stage& stage);

// CSV: a header row (empty corner cell, then column labels) and one line per
// row (row label, then values with 9 significant digits; "inf", "-inf",
// "nan" spelled out). Fields that need it are quoted (RFC 4180); lines end
// with "\n".
std::string stage_csv(const Trace& trace, const Stage& stage);
// NPY v1.0: float32 little-endian '<f4', C order, shape (rows, cols), header
// padded to 64 bytes; numpy.load gives back exactly the stage's floats.
std::string matrix_npy(const RowMatrix& m);
// One stage as JSON, numbers written as in the trace (docs/trace-format.md).
std::string stage_json(const Trace& trace, const Stage& stage);
// `torch.tensor([[...], ...])` with every value at full float32 precision
// (9 significant digits), non-finite values as float('-inf') etc.
std::string matrix_torch(const RowMatrix& m);
// The bytes of `stage` in format `f`.
std::string stage_file_bytes(const Trace& trace, const Stage& stage, DataFormat f);

// Whether a reader accepts inf/-inf/NaN (stage round trips) or rejects them
// with their position (imports: embeddings and weights must be finite).
enum class NonFinite { Reject, Allow };

// A labelled matrix read from CSV.
struct Table {
  std::vector<std::string> row_labels;  // the first column, when it holds names; else empty
  std::vector<std::string> col_labels;  // the header row (corner cell dropped); else empty
  RowMatrix values;                     // (rows, cols)
};

// Parses CSV text: comma-separated, RFC 4180 quotes, LF or CRLF, blank lines
// skipped, a UTF-8 BOM ignored. The first line is a header when its first
// cell is empty, or every cell after its first is not a number (or it has a
// single cell that is not a number). There is a label column when the
// header's first cell is empty or the first data line's first cell is not
// a number. At most kMaxTokens
// rows and kMaxDim columns, checked before the matrix is allocated.
Table parse_csv_table(std::string_view text, std::string_view source, NonFinite nonfinite);

// Which NPY shapes a reader accepts.
enum class NpyRank {
  Matrix,          // exactly 2-D
  MatrixOrVector,  // 2-D, or 1-D (n,) read as one row (1, n): biases
};

// Parses .npy bytes (format versions 1.0, 2.0, 3.0): dtype float32 or
// float64 of either byte order, C order, 2-D (or 1-D when allowed). Each
// dimension is checked against kMaxDim/kMaxTokens before the data is read;
// truncated or surplus data is an error. float64 values must fit float32.
RowMatrix parse_npy(std::string_view bytes, std::string_view source, NpyRank rank,
                    NonFinite nonfinite);

// One stage read back from stage_json() output.
struct StageFile {
  Stage stage;
  std::string variant;
  std::vector<std::string> tokens;
};

// Parses the output of stage_json() ("inf"/"-inf"/"nan" strings allowed).
StageFile parse_stage_json(std::string_view text, std::string_view source);

// Embeddings read from a file, before they meet the current tokens.
struct ImportedEmbeddings {
  std::vector<std::string> tokens;  // names from the file, or empty when it has none
  RowMatrix embeddings;             // (T, d_in), finite, within the size limits
};

// The file kinds embeddings can be imported from.
enum class EmbeddingFormat { Csv, Npy, Json };

// Guesses the kind from the extension (.csv, .npy, .json), else from the
// bytes (NPY magic; '[' or '{' for JSON; else CSV).
EmbeddingFormat detect_embedding_format(const std::filesystem::path& path, std::string_view bytes);

// Parses embeddings: CSV (optional header of dimension names, optional
// first column of token names), NPY (2-D float32/float64), or JSON (a list
// of rows, {"tokens": [...], "embeddings": [[...], ...]}, or a stage file
// from stage_json() whose rows are tokens: exports read back). Every value
// must be finite; 1 <= T <= kMaxTokens, 1 <= d_in <= kMaxDim.
ImportedEmbeddings parse_embeddings(std::string_view bytes, std::string_view source,
                                    EmbeddingFormat format);
// Reads and parses an embeddings file (read_import_file + parse_embeddings).
ImportedEmbeddings read_embeddings_file(const std::filesystem::path& path);

// The inputs after importing: the file's token names when it has them;
// otherwise `current_tokens` when their count matches the file's rows, or
// t0, t1, ... when `current_tokens` is empty. Throws ParseError naming
// `source` when the rows do not match the current tokens, or the names are
// not valid UTF-8 / not exactly one per row.
Inputs apply_embeddings(const ImportedEmbeddings& imported,
                        const std::vector<std::string>& current_tokens, std::string_view source);

// Turns one stage into the bytes of its file (a DataFormat writer, an SVG
// or PNG renderer from a front end).
using StageRenderer = std::function<std::string(const Trace&, const Stage&)>;

// Writes each of `stages` (stages of `trace`) into the existing folder
// `dir`, named <stage>[_l<layer>][_h<head>]_<producer>_<timestamp(t)><ext>
// (the layer when the trace has several; producer: Trace::producer(); files.hpp:
// export_stem, write_new_file: -1, -2 ... when taken, never overwriting).
// All or nothing: when a write fails, the files this call wrote are removed
// and the FileError is rethrown. Returns the paths written, in order.
std::vector<std::filesystem::path> export_stages(const Trace& trace,
                                                 const std::vector<const Stage*>& stages,
                                                 const std::filesystem::path& dir,
                                                 std::string_view ext, const StageRenderer& render,
                                                 std::chrono::system_clock::time_point t);

// The renderer for a data format (stage_file_bytes with `f`).
StageRenderer data_renderer(DataFormat f);

}  // namespace attnscope::core
