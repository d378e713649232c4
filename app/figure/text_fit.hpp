// text_fit.hpp: a label shortened with an ellipsis to fit a width, cut only
// between characters as a reader sees them. The app's heatmap labels (ImGui's
// font metrics) and the figures' (SVG estimate, PNG glyph advances) use it.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::figure {

// Width in px of a piece of text, as the caller draws it.
using TextWidth = std::function<float(std::string_view text)>;

// Byte offsets where `text` (UTF-8) may be cut, ascending: 0, the end of each
// cluster, text.size(). A cluster is a code point with what may not be
// separated from it: combining marks (U+0300–U+036F, U+1AB0–U+1AFF,
// U+20D0–U+20FF, U+FE20–U+FE2F), variation selectors (U+FE00–U+FE0F), emoji
// skin tone modifiers (U+1F3FB–U+1F3FF), and a zero width joiner (U+200D)
// with the code point it joins ("👨‍👩‍👧" is one cluster). A byte that does not
// start a valid UTF-8 sequence counts as one code point on its own.
std::vector<std::size_t> cluster_boundaries(std::string_view text);

// What fit_text returns when not even the ellipsis fits.
enum class WhenNothingFits { Empty, Ellipsis };

// `text` when it fits `max_width`; else its longest prefix ending at a
// cluster boundary that fits with an ellipsis after it ("…", or ".." without
// unicode); else "" or the ellipsis alone, as `nothing` says.
std::string fit_text(std::string_view text, float max_width, const TextWidth& width, bool unicode,
                     WhenNothingFits nothing);

}  // namespace attnscope::figure
