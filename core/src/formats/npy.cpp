// npy.cpp: the NPY reader (parse_npy): format versions, dtypes and shapes
// that numpy.save writes for a float matrix or vector.
#include <algorithm>
#include <bit>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "attnscope/formats/formats.hpp"
#include "formats/formats_internal.hpp"

namespace attnscope::core {

using detail::fail;
using detail::kMaxEntries;

// ---------------------------------------------------------------------------
// NPY reader

namespace {

// The parsed header dict of an .npy file.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;
};

// Reads numpy's header: a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
class NpyHeaderParser {
 public:
  NpyHeaderParser(std::string_view text, std::string_view source) : s_(text), source_(source) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    for (;;) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      skip_space();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"')
          bad("the dtype is a structured type: save a plain float32 or float64 array");
        h.descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        have_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        have_shape = true;
      } else {
        bad("unknown header key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip_space();
      if (peek() != '}') bad("expected ',' or '}'");
    }
    if (!have_descr || !have_order || !have_shape)
      bad("the header lacks 'descr', 'fortran_order' or 'shape'");
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& what) {
    fail(source_, "is not a valid .npy file: bad header (" + what + ")");
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string_literal() {
    skip_space();
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string");
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != q) out += s_[i_++];
    if (i_ >= s_.size()) bad("a string is not closed");
    ++i_;
    return out;
  }
  bool boolean() {
    if (s_.substr(i_).starts_with("True")) {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_).starts_with("False")) {
      i_ += 5;
      return false;
    }
    bad("fortran_order must be True or False");
  }
  std::vector<std::uint64_t> tuple() {
    expect('(');
    std::vector<std::uint64_t> dims;
    for (;;) {
      skip_space();
      if (peek() == ')') {
        ++i_;
        return dims;
      }
      std::uint64_t d = 0;
      const char* b = s_.data() + i_;
      const auto [ptr, ec] = std::from_chars(b, s_.data() + s_.size(), d);
      if (ec != std::errc() || ptr == b) bad("the shape must be a tuple of whole numbers");
      i_ += static_cast<std::size_t>(ptr - b);
      if (dims.size() > 32) bad("the shape has too many dimensions");
      dims.push_back(d);
      skip_space();
      if (peek() == ',')
        ++i_;
      else if (peek() != ')')
        bad("the shape must be a tuple of whole numbers");
    }
  }

  std::string_view s_;
  std::string_view source_;
  std::size_t i_ = 0;
};

std::string shape_tuple(const std::vector<std::uint64_t>& dims) {
  std::string s = "(";
  for (std::size_t k = 0; k < dims.size(); ++k) s += (k ? ", " : "") + std::to_string(dims[k]);
  if (dims.size() == 1) s += ",";
  return s + ")";
}

std::uint32_t read_le32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

}  // namespace

RowMatrix parse_npy(std::string_view bytes, std::string_view source, NpyRank rank,
                    NonFinite nonfinite) {
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 10 || !bytes.starts_with("\x93NUMPY"))
    fail(source, "is not a .npy file (it does not start with the NumPy magic \\x93NUMPY)");
  const unsigned major = u[6];
  std::size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<std::size_t>(u[8]) | static_cast<std::size_t>(u[9]) << 8;
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail(source, "is not a valid .npy file: the header is truncated");
    header_len = read_le32(u + 8);
    header_start = 12;
  } else {
    fail(source, "has .npy format version " + std::to_string(major) + "." + std::to_string(u[7]) +
                     ", which is not supported (1.0, 2.0 and 3.0 are)");
  }
  if (header_start + header_len > bytes.size())
    fail(source, "is not a valid .npy file: the header is truncated");
  const NpyHeader h = NpyHeaderParser(bytes.substr(header_start, header_len), source).parse();

  std::size_t item = 0;
  bool big_endian = false;
  const std::string& d = h.descr;
  if (d.size() == 3 && (d[0] == '<' || d[0] == '>' || d[0] == '=') && d[1] == 'f' &&
      (d[2] == '4' || d[2] == '8')) {
    item = d[2] == '4' ? 4 : 8;
    big_endian = d[0] == '>' || (d[0] == '=' && std::endian::native == std::endian::big);
  } else {
    fail(source, "has dtype '" + d +
                     "', which is not supported: save float32 or float64 "
                     "(np.save(path, a.astype(np.float32)))");
  }
  if (h.fortran_order)
    fail(source,
         "is stored in Fortran order (fortran_order is True): save a C-ordered array "
         "(np.save(path, np.ascontiguousarray(a)))");

  const auto& dims = h.shape;
  const bool vector_ok = rank == NpyRank::MatrixOrVector;
  if (dims.size() != 2 && !(vector_ok && dims.size() == 1))
    fail(source, "has shape " + shape_tuple(dims) + ": expected a 2-D array" +
                     (vector_ok ? " (or 1-D for a bias)" : ""));
  const std::uint64_t rows = dims.size() == 2 ? dims[0] : 1;
  const std::uint64_t cols = dims.size() == 2 ? dims[1] : dims[0];
  if (rows == 0 || cols == 0) fail(source, "has shape " + shape_tuple(dims) + ": it is empty");
  // Sizes are checked before anything is allocated or read.
  if (rows > kMaxEntries || cols > kMaxEntries)
    fail(source, "has shape " + shape_tuple(dims) + ": at most " + std::to_string(kMaxEntries) +
                     " rows and " + std::to_string(kMaxEntries) + " columns are supported");
  const std::size_t count = static_cast<std::size_t>(rows * cols);
  const std::size_t need = count * item;
  const std::size_t have = bytes.size() - header_start - header_len;
  if (have < need)
    fail(source, "is truncated: shape " + shape_tuple(dims) + " of " +
                     (item == 4 ? "float32" : "float64") + " needs " + std::to_string(need) +
                     " bytes of data, the file has " + std::to_string(have));
  if (have > need)
    fail(source, "has " + std::to_string(have - need) + " bytes after the data of shape " +
                     shape_tuple(dims) + ": it is not a single array");

  const unsigned char* p = u + header_start + header_len;
  RowMatrix m(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  for (std::size_t k = 0; k < count; ++k, p += item) {
    unsigned char b[8];
    for (std::size_t j = 0; j < item; ++j) b[j] = big_endian ? p[item - 1 - j] : p[j];
    double v = 0;
    if (item == 4) {
      float f = 0;
      std::uint32_t w = read_le32(b);
      std::memcpy(&f, &w, 4);
      v = f;
    } else {
      std::uint64_t w = static_cast<std::uint64_t>(read_le32(b)) |
                        static_cast<std::uint64_t>(read_le32(b + 4)) << 32;
      std::memcpy(&v, &w, 8);
    }
    const std::size_t r = k / cols, c = k % cols;
    const std::string where = dims.size() == 2
                                  ? "[" + std::to_string(r) + ", " + std::to_string(c) + "]"
                                  : "[" + std::to_string(c) + "]";
    if (!std::isfinite(v) && nonfinite == NonFinite::Reject)
      fail(source, "the value at index " + where + " is " +
                       (std::isnan(v) ? "nan"
                        : v > 0       ? "inf"
                                      : "-inf") +
                       ": every value must be a finite number");
    if (std::isfinite(v) && std::fabs(v) > static_cast<double>(FLT_MAX)) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%g", v);
      fail(source, "the value at index " + where + " (" + buf +
                       ") is too large for a 32-bit float (max about 3.4e38)");
    }
    m.data()[k] = static_cast<float>(v);
  }
  return m;
}

}  // namespace attnscope::core
