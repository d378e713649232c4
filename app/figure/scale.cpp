// scale.cpp: range, colouring and cell text (see scale.hpp).
#include "figure/scale.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "attnscope/base/stages.hpp"
#include "attnscope/io/io.hpp"

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace attnscope::figure {

ScaleKind scale_kind_for(std::string_view id) {
  const core::StageInfo* info = core::find_stage_info(id);
  // A difference of two stages ("diff_weights") has either sign.
  if (!info || core::difference_base(id) != id) return ScaleKind::Diverging;
  switch (info->scale) {
    case core::StageScale::Weights:
    case core::StageScale::Mask:
      return ScaleKind::Sequential;
    case core::StageScale::Signed:
    case core::StageScale::Parameter:
      return ScaleKind::Diverging;
  }
  return ScaleKind::Diverging;
}

Colormap colormap_for(Palette palette, ScaleKind kind) {
  return kind == ScaleKind::Sequential ? sequential_map(palette) : diverging_map(palette);
}

namespace {

// Adds n cells to r's counts and to the finite values' min and max in
// r.data_min / r.data_max (start them at +inf / -inf), in the order of a
// plain loop: with equal values the first one seen stays, which only shows
// in the sign of a zero.
void scan_values(const float* p, Eigen::Index n, ValueRange& s) {
  for (Eigen::Index k = 0; k < n; ++k) {
    const float v = p[k];
    if (std::isnan(v)) {
      ++s.nan;
    } else if (std::isinf(v)) {
      ++(v < 0 ? s.neg_inf : s.pos_inf);
    } else {
      ++s.finite;
      s.data_min = std::min(s.data_min, v);
      s.data_max = std::max(s.data_max, v);
    }
  }
}

#if defined(__AVX2__)
// scan_values 8 cells at a time (GCC does not vectorize the loop above).
// Vector min and max may keep a different zero of two equal ones; a min or
// max of zero is set to the first zero in the data afterwards, which is what
// the plain loop keeps (no value below, or above, it comes first).
void scan_values_avx2(const float* p, Eigen::Index n, ValueRange& s) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf_bits = _mm256_set1_epi32(0x7f800000);
  const __m256 pos_inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 lo = pos_inf, hi = neg_inf;
  __m256i finite = _mm256_setzero_si256(), nan = finite, minus_inf = finite, plus_inf = finite;
  Eigen::Index k = 0;
  // A lane counts n / 8 cells: below 2^31 for any matrix under 64 GiB.
  for (; k + 8 <= n; k += 8) {
    const __m256 x = _mm256_loadu_ps(p + k);
    const __m256i bits = _mm256_castps_si256(x);
    const __m256i mag = _mm256_and_si256(bits, abs_mask);
    const __m256i is_nan = _mm256_cmpgt_epi32(mag, inf_bits);
    const __m256i is_inf = _mm256_cmpeq_epi32(mag, inf_bits);
    const __m256i is_finite = _mm256_cmpgt_epi32(inf_bits, mag);
    const __m256i negative = _mm256_cmpgt_epi32(_mm256_setzero_si256(), bits);
    nan = _mm256_sub_epi32(nan, is_nan);
    finite = _mm256_sub_epi32(finite, is_finite);
    minus_inf = _mm256_sub_epi32(minus_inf, _mm256_and_si256(is_inf, negative));
    plus_inf = _mm256_sub_epi32(plus_inf, _mm256_andnot_si256(negative, is_inf));
    const __m256 keep = _mm256_castsi256_ps(is_finite);
    lo = _mm256_min_ps(lo, _mm256_blendv_ps(pos_inf, x, keep));
    hi = _mm256_max_ps(hi, _mm256_blendv_ps(neg_inf, x, keep));
  }
  alignas(32) float los[8], his[8];
  alignas(32) std::int32_t counts[4][8];
  _mm256_store_ps(los, lo);
  _mm256_store_ps(his, hi);
  _mm256_store_si256(reinterpret_cast<__m256i*>(counts[0]), finite);
  _mm256_store_si256(reinterpret_cast<__m256i*>(counts[1]), nan);
  _mm256_store_si256(reinterpret_cast<__m256i*>(counts[2]), minus_inf);
  _mm256_store_si256(reinterpret_cast<__m256i*>(counts[3]), plus_inf);
  for (int i = 0; i < 8; ++i) {
    s.data_min = std::min(s.data_min, los[i]);
    s.data_max = std::max(s.data_max, his[i]);
    s.finite += counts[0][i];
    s.nan += counts[1][i];
    s.neg_inf += counts[2][i];
    s.pos_inf += counts[3][i];
  }
  scan_values(p + k, n - k, s);
  if (s.data_min == 0.0f || s.data_max == 0.0f) {
    for (Eigen::Index j = 0; j < n; ++j)
      if (p[j] == 0.0f) {
        if (s.data_min == 0.0f) s.data_min = p[j];
        if (s.data_max == 0.0f) s.data_max = p[j];
        break;
      }
  }
}
#endif

}  // namespace

ValueRange value_range(const core::RowMatrix& m, ScaleKind kind) {
  return value_range(m.data(), m.size(), kind);
}

ValueRange row_range(const core::RowMatrix& m, Eigen::Index r, ScaleKind kind) {
  return value_range(m.data() + r * m.cols(), m.cols(), kind);
}

ValueRange value_range(const float* v, Eigen::Index n, ScaleKind kind) {
  ValueRange r;
  r.data_min = std::numeric_limits<float>::infinity();
  r.data_max = -std::numeric_limits<float>::infinity();
#if defined(__AVX2__)
  scan_values_avx2(v, n, r);
#else
  scan_values(v, n, r);
#endif
  if (r.finite == 0) r.data_min = r.data_max = 0.0f;
  const float lo = r.data_min, hi = r.data_max;
  if (kind == ScaleKind::Diverging) {
    const float a = std::max(std::fabs(lo), std::fabs(hi));
    r.lo = a > 0.0f ? -a : -1.0f;
    r.hi = a > 0.0f ? a : 1.0f;
  } else {
    r.lo = std::min(0.0f, lo);
    r.hi = hi;
    if (!(r.hi > r.lo)) r.hi = r.lo + 1.0f;
  }
  return r;
}

float scale_position(float v, const ValueRange& range) {
  // In double: for values near float32's limit (a range of ±3e38) hi - lo
  // and v - lo overflow float to inf, and inf / inf is NaN.
  const double t = (static_cast<double>(v) - range.lo) / (static_cast<double>(range.hi) - range.lo);
  if (!(t >= 0.0)) return 0.0f;  // also NaN (a NaN or infinite v): the low end
  return static_cast<float>(std::min(t, 1.0));
}

Rgba8 cell_color(float v, const ValueRange& range, Colormap map) {
  if (std::isnan(v)) return kNanFill;
  if (std::isinf(v)) return masked_fill(map);
  return sample(map, scale_position(v, range));
}

Rgba8 RgbaImage::at(int x, int y) const {
  const auto k = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) +
                  static_cast<std::size_t>(x)) *
                 4;
  return Rgba8{pixels[k], pixels[k + 1], pixels[k + 2], pixels[k + 3]};
}

namespace {

// Where each cell's colour is in colorize's table: 0..255 for finite values
// (lround(scale_position(v) * 255)), then the infinities, then NaN.
constexpr int kInfIndex = 256, kNanIndex = 257;

int table_index(float v, const ValueRange& range) {
  if (std::isnan(v)) return kNanIndex;
  if (std::isinf(v)) return kInfIndex;
  return static_cast<int>(std::lround(scale_position(v, range) * 255.0f));
}

// table_index for n cells. GCC does not vectorize scale_position's
// comparisons (they may trap), so with AVX its arithmetic runs 4 cells at a
// time: max_pd(t, 0) gives 0 for NaN as the comparison does, the float steps
// round as the scalar ones, and lround(y) is floor(y + 0.5) for y in
// [0, 255] with the sum exact in double.
void table_indices(const float* v, Eigen::Index n, const ValueRange& range, std::uint16_t* out) {
  Eigen::Index k = 0;
#if defined(__AVX__)
  const __m256d lo4 = _mm256_set1_pd(range.lo);
  const __m256d span4 = _mm256_set1_pd(static_cast<double>(range.hi) - range.lo);
  const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0), half = _mm256_set1_pd(0.5);
  const __m128 scale = _mm_set1_ps(255.0f);
  const __m128i abs_mask = _mm_set1_epi32(0x7fffffff), inf_bits = _mm_set1_epi32(0x7f800000);
  const __m128i inf_index = _mm_set1_epi32(kInfIndex), nan_index = _mm_set1_epi32(kNanIndex);
  for (; k + 4 <= n; k += 4) {
    const __m128 x = _mm_loadu_ps(v + k);
    const __m256d t = _mm256_div_pd(_mm256_sub_pd(_mm256_cvtps_pd(x), lo4), span4);
    const __m256d c = _mm256_min_pd(_mm256_max_pd(t, zero), one);
    const __m128 y = _mm_mul_ps(_mm256_cvtpd_ps(c), scale);
    const __m128i finite = _mm256_cvttpd_epi32(_mm256_add_pd(_mm256_cvtps_pd(y), half));
    const __m128i mag = _mm_and_si128(_mm_castps_si128(x), abs_mask);
    const __m128i nan = _mm_cmpgt_epi32(mag, inf_bits), inf = _mm_cmpeq_epi32(mag, inf_bits);
    __m128i index = _mm_andnot_si128(_mm_or_si128(nan, inf), finite);
    index = _mm_or_si128(index, _mm_and_si128(inf, inf_index));
    index = _mm_or_si128(index, _mm_and_si128(nan, nan_index));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + k), _mm_packus_epi32(index, index));
  }
#endif
  for (; k < n; ++k) out[k] = static_cast<std::uint16_t>(table_index(v[k], range));
}

}  // namespace

namespace {

// colorize's lookup: 256 steps of the colormap, then the infinities, then NaN.
struct ColourTable {
  std::uint32_t rgba[kNanIndex + 1];
  explicit ColourTable(Colormap map) {
    static_assert(sizeof(Rgba8) == 4);
    const auto put = [&](int k, Rgba8 c) { std::memcpy(&rgba[k], &c, 4); };
    // The colormap is sampled once per table entry, not once per cell.
    for (int k = 0; k < 256; ++k) put(k, sample(map, static_cast<float>(k) / 255.0f));
    const ValueRange any;  // infinities and NaN get colours that are on no scale
    put(kInfIndex, cell_color(std::numeric_limits<float>::infinity(), any, map));
    put(kNanIndex, cell_color(std::numeric_limits<float>::quiet_NaN(), any, map));
  }
};

// Each colormap's table, built once for all (a table is 258 samples: 10 us,
// which a grid of 448 thumbnails paid 448 times per picture).
const ColourTable& colour_table(Colormap map) {
  static_assert(static_cast<int>(Colormap::GreysDiv) == 6, "one table per colormap, in order");
  static const std::array<ColourTable, 7> tables = {
      ColourTable(Colormap::Viridis), ColourTable(Colormap::Cividis), ColourTable(Colormap::Magma),
      ColourTable(Colormap::RdBu),    ColourTable(Colormap::PuOr),    ColourTable(Colormap::Greys),
      ColourTable(Colormap::GreysDiv)};
  return tables[static_cast<std::size_t>(map)];
}

// The n cells from src on `range`, as RGBA into dst: in blocks that stay in
// L1, indices first (vectorized), then the lookup.
void colour_cells(const float* src, Eigen::Index n, const ValueRange& range,
                  const ColourTable& table, std::uint8_t* dst) {
  constexpr Eigen::Index kBlock = 2048;
  std::uint16_t index[kBlock];
  for (Eigen::Index k0 = 0; k0 < n; k0 += kBlock) {
    const Eigen::Index count = std::min(kBlock, n - k0);
    table_indices(src + k0, count, range, index);
    for (Eigen::Index k = 0; k < count; ++k)
      std::memcpy(dst + (k0 + k) * 4, &table.rgba[index[k]], 4);
  }
}

RgbaImage sized_image(const core::RowMatrix& m) {
  RgbaImage img;
  img.width = static_cast<int>(m.cols());
  img.height = static_cast<int>(m.rows());
  img.pixels.resize(static_cast<std::size_t>(m.size()) * 4);
  return img;
}

}  // namespace

RgbaImage colorize(const core::RowMatrix& m, const ValueRange& range, Colormap map) {
  RgbaImage img = sized_image(m);
  colour_cells(m.data(), m.size(), range, colour_table(map), img.pixels.data());
  return img;
}

RgbaImage colorize_rows(const core::RowMatrix& m, ScaleKind kind, Colormap map) {
  RgbaImage img = sized_image(m);
  const ColourTable& table = colour_table(map);
  for (Eigen::Index r = 0; r < m.rows(); ++r)
    colour_cells(m.data() + r * m.cols(), m.cols(), row_range(m, r, kind), table,
                 img.pixels.data() + r * m.cols() * 4);
  return img;
}

RgbaImage colorize(const core::RowMatrix& m, const ValueRange& range, ScaleKind kind,
                   ScaleScope scope, Colormap map) {
  return scope == ScaleScope::Row ? colorize_rows(m, kind, map) : colorize(m, range, map);
}

std::string format_value(float v, int decimals, bool unicode) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) {
    if (v > 0) return unicode ? "∞" : "inf";
    return unicode ? "−∞" : "-inf";
  }
  if (std::fabs(v) >= kCompactFrom) return compact_value(v);
  return core::fixed_text(v, decimals);
}

std::string compact_value(float v) {
  if (!std::isfinite(v)) return format_value(v, 0);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(v));
  std::string s = buf;  // "1e+30", "1.5e-07"
  const auto e = s.find('e');
  if (e == std::string::npos) return s;
  std::string exp = s.substr(e + 1);
  const bool minus = exp.starts_with('-');
  if (!exp.empty() && (exp[0] == '+' || exp[0] == '-')) exp.erase(0, 1);
  exp.erase(0, std::min(exp.find_first_not_of('0'), exp.size() - 1));
  return s.substr(0, e + 1) + (minus ? "-" : "") + exp;
}

bool holds_mask(std::string_view id) {
  const core::StageInfo* info = core::find_stage_info(id);
  return info && info->holds_mask && core::difference_base(id) == id;  // a difference is not masked
}

std::vector<LegendEntry> off_scale_legend(const ValueRange& range, bool masks, bool unicode) {
  std::vector<LegendEntry> out;
  const char* minus_inf = unicode ? "\xE2\x88\x92\xE2\x88\x9E" : "-inf";
  const char* plus_inf = unicode ? "+\xE2\x88\x9E" : "+inf";
  const char* both_inf = unicode ? "\xC2\xB1\xE2\x88\x9E" : "+-inf";
  if (masks && range.neg_inf > 0)
    out.push_back({LegendEntry::Masked, std::string(minus_inf) + " masked"});
  const long neg = masks ? 0 : range.neg_inf;
  if (neg > 0 || range.pos_inf > 0)
    out.push_back({LegendEntry::Overflow, std::string(neg > 0 && range.pos_inf > 0 ? both_inf
                                                      : neg > 0                    ? minus_inf
                                                                                   : plus_inf) +
                                              " overflow"});
  if (range.nan > 0) out.push_back({LegendEntry::NotANumber, "nan"});
  return out;
}

BarLabels bar_labels(const ValueRange& range, ScaleKind kind, ScaleScope scope, int decimals,
                     bool unicode) {
  if (scope == ScaleScope::Matrix)
    return {format_value(range.hi, decimals, unicode), format_value(range.lo, decimals, unicode)};
  const bool short_words = decimals < 4;
  if (kind == ScaleKind::Diverging) {
    const std::string minus = unicode ? "\xE2\x88\x92" : "-";
    return short_words ? BarLabels{"max", minus + "max"} : BarLabels{"row max", minus + "row max"};
  }
  const std::string low = range.data_min < 0.0f ? "min" : "0";
  return short_words ? BarLabels{"max", low}
                     : BarLabels{"row max", low == "0" ? low : "row " + low};
}

ScaleScope scale_scope(RowScale setting, bool token_by_token, long tokens) {
  switch (setting) {
    case RowScale::On:
      return ScaleScope::Row;
    case RowScale::Off:
      return ScaleScope::Matrix;
    case RowScale::Auto:
      break;
  }
  return token_by_token && tokens >= kAutoRowScaleTokens ? ScaleScope::Row : ScaleScope::Matrix;
}

RowScale toggled(RowScale setting, long tokens) {
  return scale_scope(setting, true, tokens) == ScaleScope::Row ? RowScale::Off : RowScale::On;
}

std::string_view row_scale_id(RowScale setting) {
  switch (setting) {
    case RowScale::On:
      return "on";
    case RowScale::Off:
      return "off";
    case RowScale::Auto:
      break;
  }
  return "auto";
}

std::optional<RowScale> parse_row_scale(std::string_view id) {
  for (RowScale s : {RowScale::Auto, RowScale::On, RowScale::Off})
    if (row_scale_id(s) == id) return s;
  return std::nullopt;
}

std::vector<std::string> row_scope_notes(RowScale setting, bool unicode, bool model) {
  const std::string base = kRowScopeNote;
  if (setting != RowScale::Auto) return {base + " (R to change)", base, "row scale"};
  if (model)
    return {base + " (auto for a model, R to change)", base + " (auto, R to change)", base,
            "row scale"};
  const std::string at =
      std::string(unicode ? "T \xE2\x89\xA5 " : "T >= ") + std::to_string(kAutoRowScaleTokens);
  return {base + " (auto at " + at + ", R to change)", base + " (auto, R to change)", base,
          "row scale"};
}

namespace {
constexpr float kPad = 4.0f;  // px of air on each side of a cell's text
}  // namespace

float cell_for_text(float text_w) { return text_w + 2 * kPad; }

int decimals_that_fit(float cell_w, float cell_h, int wanted,
                      const std::function<float(int)>& text_width, float line_h) {
  if (cell_h < line_h + 2.0f) return 0;
  for (int d = std::clamp(wanted, kMinDecimals, kMaxDecimals); d >= kMinDecimals; --d)
    if (cell_w >= cell_for_text(text_width(d))) return d;
  return 0;
}

std::string widest_number_text(float lo, float hi, int decimals) {
  const double a = std::max(std::fabs(static_cast<double>(lo)), std::fabs(static_cast<double>(hi)));
  int digits = 1;  // before the point; numbers from kCompactFrom on are compact
  for (double p = 10.0; a >= p && p < kCompactFrom; p *= 10.0) ++digits;
  std::string s = lo < 0.0f ? "-" : "";
  s += std::string(static_cast<std::size_t>(digits), '0');
  if (decimals > 0) s += "." + std::string(static_cast<std::size_t>(decimals), '0');
  const std::string compact = std::string(lo < 0.0f ? "-" : "") + "0.00e00";
  return a >= kCompactFrom && compact.size() > s.size() ? compact : s;
}

int decimals_that_fit(float cell_w, float cell_h, float width_4dp, float width_2dp, float line_h) {
  if (cell_h < line_h + 2.0f) return 0;
  if (cell_w >= width_4dp + 2 * kPad) return 4;
  if (cell_w >= width_2dp + 2 * kPad) return 2;
  return 0;
}

}  // namespace attnscope::figure
