// figure_renderer.cpp: off-screen figures (see figure_renderer.hpp).
//
// Sections
//   1. fonts: an atlas baked for the figure's text at each size × scale
//   2. painting a figure::Scene into an ImDrawList (pixels at the scale)
//   3. the framebuffer object: render, read back
#define GL_GLEXT_PROTOTYPES 1
#include "render/figure_renderer.hpp"

#include <GL/gl.h>
#include <GL/glext.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>

#include "attnscope/formats/formats.hpp"
#include "imgui.h"
#include "imgui_impl_opengl3.h"
#include "imgui_internal.h"  // ImDrawListSharedData: a draw list on our own atlas
#include "platform/fonts.hpp"
#include "render/gl_texture.hpp"

namespace attnscope::gui {

namespace {

using figure::Anchor;
using figure::Rgba8;
using figure::Scene;

ImU32 to_u32(Rgba8 c) { return IM_COL32(c.r, c.g, c.b, c.a); }

// ---------------------------------------------------------------------------
// 1. Fonts

// Every glyph a set of strings needs, plus ASCII (digits, "nan", ...).
ImVector<ImWchar> glyph_ranges(const std::vector<std::string>& texts) {
  ImFontGlyphRangesBuilder b;
  b.AddRanges(ImGui::GetIO().Fonts->GetGlyphRangesDefault());
  b.AddText("\xE2\x88\x92\xE2\x88\x9E\xE2\x80\xA6\xE2\x86\x93\xE2\x86\x92\xE2\x80\x94");  // −∞…↓→—
  for (const auto& t : texts) b.AddText(t.c_str());
  ImVector<ImWchar> out;
  b.BuildRanges(&out);
  return out;
}

std::string bold_file(const std::string& regular) {
  const auto at = regular.rfind("DejaVuSans.ttf");
  if (at == std::string::npos) return regular;
  std::string b = regular;
  b.replace(at, std::string("DejaVuSans.ttf").size(), "DejaVuSans-Bold.ttf");
  std::error_code ec;
  return std::filesystem::exists(b, ec) ? b : regular;
}

// A font atlas holding the figure's sizes (px at the scale), regular and bold.
class FigureFonts {
 public:
  FigureFonts(const std::vector<std::string>& texts,
              const std::vector<std::pair<float, bool>>& sizes) {
    ranges_ = glyph_ranges(texts);
    const std::string sans = sans_font_file();
    for (const auto& [px, bold] : sizes) {
      ImFontConfig cfg;
      cfg.OversampleH = 2;
      cfg.OversampleV = 1;
      ImFont* f = nullptr;
      if (!sans.empty()) {
        const std::string file = bold ? bold_file(sans) : sans;
        f = atlas_.AddFontFromFileTTF(file.c_str(), px, &cfg, ranges_.Data);
      }
      if (!f) {
        cfg.SizePixels = px;
        f = atlas_.AddFontDefault(&cfg);
      }
      fonts_[key(px, bold)] = f;
    }
    if (!atlas_.Build()) throw std::runtime_error("the figure's fonts could not be built");
  }

  // The font baked nearest to `px` (exact for the sizes it was built with).
  ImFont* get(float px, bool bold) const {
    const auto it = fonts_.find(key(px, bold));
    if (it != fonts_.end()) return it->second;
    return fonts_.begin()->second;
  }

  ImFontAtlas& atlas() { return atlas_; }

 private:
  static long key(float px, bool bold) { return std::lround(px * 8) * 2 + (bold ? 1 : 0); }
  ImVector<ImWchar> ranges_;
  ImFontAtlas atlas_;
  std::map<long, ImFont*> fonts_;
};

std::vector<std::string> strings_of(const figure::Heatmap& h) {
  std::vector<std::string> s = h.row_labels;
  s.insert(s.end(), h.col_labels.begin(), h.col_labels.end());
  s.push_back(h.title);
  s.push_back(h.subtitle);
  s.push_back(h.row_title + h.col_title + " masked nan inf");
  return s;
}

// ---------------------------------------------------------------------------
// 2. Painting

// Diagonal hatching of one square cell, lines clipped to the square (as on screen).
void hatch_square(ImDrawList* dl, ImVec2 p, float s, ImU32 col, float spacing, float thickness) {
  for (float d = -s + spacing * 0.5f; d < s; d += spacing) {
    const ImVec2 a(p.x + std::max(0.0f, d), p.y + std::max(0.0f, -d));
    const ImVec2 b(p.x + s + std::min(0.0f, d), p.y + s - std::max(0.0f, d));
    dl->AddLine(a, b, col, thickness);
  }
}

// Rotates the vertices [from, end) about `pivot` by `degrees` clockwise (y down).
void rotate_vertices(ImDrawList* dl, int from, ImVec2 pivot, float degrees) {
  const float a = degrees * 3.14159265f / 180.0f;
  const float c = std::cos(a), s = std::sin(a);
  for (int i = from; i < dl->VtxBuffer.Size; ++i) {
    ImVec2& p = dl->VtxBuffer[i].pos;
    const float x = p.x - pivot.x, y = p.y - pivot.y;
    p = ImVec2(pivot.x + x * c - y * s, pivot.y + x * s + y * c);
  }
}

// The background is the framebuffer's clear colour (render()), not a
// rectangle: one pass less over every pixel, which software GL feels.
void paint(ImDrawList* dl, const Scene& sc, float k, FigureFonts& fonts, ImTextureID cells) {
  const figure::CellGrid& g = sc.grid;
  auto P = [k](float x, float y) { return ImVec2(x * k, y * k); };

  // Cells: one texel each, nearest filtering; then hatching and hairlines.
  const float cell = g.cell * k;
  const ImVec2 g0 = P(g.x, g.y);
  const ImVec2 g1(g0.x + cell * static_cast<float>(g.cols()),
                  g0.y + cell * static_cast<float>(g.rows()));
  dl->AddImage(cells, g0, g1);
  if (g.hatch_spacing > 0)
    for (int r = 0; r < g.rows(); ++r)
      for (int c = 0; c < g.cols(); ++c)
        if (g.marks[static_cast<std::size_t>(r) * static_cast<std::size_t>(g.cols()) +
                    static_cast<std::size_t>(c)] == figure::CellGrid::Masked)
          hatch_square(
              dl, ImVec2(g0.x + cell * static_cast<float>(c), g0.y + cell * static_cast<float>(r)),
              cell, to_u32(g.masked_hatch), g.hatch_spacing * k, std::max(1.0f, 1.5f * k));
  if (g.hairlines) {
    const ImU32 line = to_u32(g.lines);
    for (int c = 1; c < g.cols(); ++c) {
      const float x = g0.x + cell * static_cast<float>(c);
      dl->AddLine(ImVec2(x, g0.y), ImVec2(x, g1.y), line, k);
    }
    for (int r = 1; r < g.rows(); ++r) {
      const float y = g0.y + cell * static_cast<float>(r);
      dl->AddLine(ImVec2(g0.x, y), ImVec2(g1.x, y), line, k);
    }
  }

  for (const figure::RectItem& r : sc.rects) {
    const ImVec2 a = P(r.x, r.y), b = P(r.x + r.w, r.y + r.h);
    dl->AddRectFilled(a, b, to_u32(r.fill));
    if (r.hatched) {
      dl->PushClipRect(a, b, true);
      hatch_square(dl, a, b.x - a.x, to_u32(g.masked_hatch), 4.0f * k, std::max(1.0f, k));
      dl->PopClipRect();
    }
    if (r.outlined) dl->AddRect(a, b, to_u32(r.stroke), 0.0f, 0, std::max(1.0f, 0.5f * k));
  }
  for (const figure::GradientItem& gr : sc.gradients) {
    constexpr int kSegments = 64;
    for (int i = 0; i < kSegments; ++i) {  // high at the top
      const float t0 = static_cast<float>(i) / kSegments,
                  t1 = static_cast<float>(i + 1) / kSegments;
      const ImU32 a = to_u32(figure::sample(gr.map, 1.0f - t0));
      const ImU32 b = to_u32(figure::sample(gr.map, 1.0f - t1));
      dl->AddRectFilledMultiColor(P(gr.x, gr.y + gr.h * t0), P(gr.x + gr.w, gr.y + gr.h * t1), a, a,
                                  b, b);
    }
    dl->AddRect(P(gr.x, gr.y), P(gr.x + gr.w, gr.y + gr.h), to_u32(gr.frame), 0.0f, 0,
                std::max(1.0f, 0.5f * k));
  }
  for (const figure::LineItem& l : sc.lines)
    dl->AddLine(P(l.x1, l.y1), P(l.x2, l.y2), to_u32(l.color), l.width * k);

  for (const figure::TextItem& t : sc.texts) {
    const float px = t.size * k;
    ImFont* f = fonts.get(px, t.bold);
    const char* s = t.text.c_str();
    const float w = f->CalcTextSizeA(px, 1e9f, 0.0f, s).x;
    const ImVec2 pivot = P(t.x, t.y);
    const float dx = t.anchor == Anchor::Start ? 0.0f : t.anchor == Anchor::Middle ? -w * 0.5f : -w;
    const int first = dl->VtxBuffer.Size;
    dl->AddText(f, px, ImVec2(pivot.x + dx, pivot.y - px * 0.5f), to_u32(t.color), s);
    if (t.angle != 0) rotate_vertices(dl, first, pivot, t.angle);
  }
}

// ---------------------------------------------------------------------------
// 3. The framebuffer object

// Owns a framebuffer with one RGBA8 colour renderbuffer; restores the
// previous binding when it goes.
class Framebuffer {
 public:
  Framebuffer(int width, int height) {
    glGetIntegerv(GL_FRAMEBUFFER_BINDING, &previous_);
    glGenFramebuffers(1, &fbo_);
    glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
    glGenRenderbuffers(1, &colour_);
    glBindRenderbuffer(GL_RENDERBUFFER, colour_);
    glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, width, height);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, colour_);
    if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE)
      throw std::runtime_error("the off-screen framebuffer (" + std::to_string(width) + "x" +
                               std::to_string(height) + ") could not be created");
  }
  ~Framebuffer() {
    glBindFramebuffer(GL_FRAMEBUFFER, static_cast<GLuint>(previous_));
    glDeleteRenderbuffers(1, &colour_);
    glDeleteFramebuffers(1, &fbo_);
  }
  Framebuffer(const Framebuffer&) = delete;
  Framebuffer& operator=(const Framebuffer&) = delete;

  // The pixels, top row first, opaque: read bottom row first, then the rows
  // swapped in place (one buffer: at 4x a figure is tens of MB).
  std::vector<std::uint8_t> read(int width, int height) const {
    const auto row = static_cast<std::size_t>(width) * 4;
    std::vector<std::uint8_t> pixels(row * static_cast<std::size_t>(height));
    glReadBuffer(GL_COLOR_ATTACHMENT0);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
    for (std::size_t top = 0, bottom = static_cast<std::size_t>(height) - 1; top < bottom;
         ++top, --bottom)
      std::swap_ranges(pixels.begin() + static_cast<std::ptrdiff_t>(top * row),
                       pixels.begin() + static_cast<std::ptrdiff_t>((top + 1) * row),
                       pixels.begin() + static_cast<std::ptrdiff_t>(bottom * row));
    for (std::size_t i = 3; i < pixels.size(); i += 4) pixels[i] = 255;
    return pixels;
  }

 private:
  GLint previous_ = 0;
  GLuint fbo_ = 0, colour_ = 0;
};

int gl_limit() {
  GLint rb = 0, vp[2] = {0, 0};
  glGetIntegerv(GL_MAX_RENDERBUFFER_SIZE, &rb);
  glGetIntegerv(GL_MAX_VIEWPORT_DIMS, vp);
  return std::min({rb, vp[0], vp[1]});
}

}  // namespace

figure::Scene OffscreenFigureRenderer::layout(const figure::Heatmap& heatmap) const {
  // This font's metrics, measured at a 32 px bake and scaled (advances are linear).
  FigureFonts measure_fonts(strings_of(heatmap), {{32.0f, false}});
  ImFont* m = measure_fonts.get(32.0f, false);
  return figure::layout_heatmap(heatmap, [m](std::string_view s, float size) {
    return m->CalcTextSizeA(size, 1e9f, 0.0f, s.data(), s.data() + s.size()).x;
  });
}

RenderedImage OffscreenFigureRenderer::render(const figure::Heatmap& heatmap, int scale) const {
  return render(layout(heatmap), strings_of(heatmap), scale);
}

figure::Scene OffscreenFigureRenderer::layout(const figure::HeadGrid& grid) const {
  FigureFonts measure_fonts(figure::head_grid_strings(grid), {{32.0f, false}});
  ImFont* m = measure_fonts.get(32.0f, false);
  return figure::layout_head_grid(grid, [m](std::string_view s, float size) {
    return m->CalcTextSizeA(size, 1e9f, 0.0f, s.data(), s.data() + s.size()).x;
  });
}

RenderedImage OffscreenFigureRenderer::render(const figure::HeadGrid& grid, int scale) const {
  return render(layout(grid), figure::head_grid_strings(grid), scale);
}

RenderedImage OffscreenFigureRenderer::render(const figure::Scene& sc,
                                              const std::vector<std::string>& texts,
                                              int scale) const {
  if (scale < 1 || scale > 8) throw std::runtime_error("the PNG scale must be 1, 2 or 4");

  const float k = static_cast<float>(scale);
  const int width = sc.width * scale, height = sc.height * scale;
  if (const int limit = gl_limit(); width > limit || height > limit)
    throw std::runtime_error("the figure would be " + std::to_string(width) + "x" +
                             std::to_string(height) + " pixels at " + std::to_string(scale) +
                             "x, more than this GPU's limit of " + std::to_string(limit) +
                             ": export at a smaller scale, or as SVG/NPY");

  // Fonts at exactly the sizes the figure uses, times the scale.
  std::vector<std::pair<float, bool>> sizes;
  for (const auto& t : sc.texts) {
    const std::pair<float, bool> s{t.size * k, t.bold};
    if (std::find(sizes.begin(), sizes.end(), s) == sizes.end()) sizes.push_back(s);
  }
  FigureFonts fonts(texts, sizes);
  unsigned char* atlas_pixels = nullptr;
  int aw = 0, ah = 0;
  fonts.atlas().GetTexDataAsRGBA32(&atlas_pixels, &aw, &ah);
  figure::RgbaImage atlas_image;
  atlas_image.width = aw;
  atlas_image.height = ah;
  atlas_image.pixels.assign(
      atlas_pixels, atlas_pixels + static_cast<std::size_t>(aw) * static_cast<std::size_t>(ah) * 4);
  GlTexture atlas_texture(true);
  atlas_texture.upload(atlas_image);
  fonts.atlas().SetTexID(atlas_texture.id());
  GlTexture cell_texture(false);
  cell_texture.upload(sc.grid.colors);

  // A draw list on our own atlas (its white pixel, its fonts), in pixels.
  ImDrawListSharedData shared;
  shared.TexUvWhitePixel = fonts.atlas().TexUvWhitePixel;
  shared.TexUvLines = fonts.atlas().TexUvLines;
  shared.Font = fonts.get(sizes.front().first, sizes.front().second);
  shared.FontSize = sizes.front().first;
  shared.CurveTessellationTol = 1.25f;
  shared.SetCircleTessellationMaxError(0.30f);
  shared.ClipRectFullscreen = ImVec4(0, 0, static_cast<float>(width), static_cast<float>(height));
  shared.InitialFlags = ImDrawListFlags_AntiAliasedLines | ImDrawListFlags_AntiAliasedFill;
  if (ImGui::GetIO().BackendFlags & ImGuiBackendFlags_RendererHasVtxOffset)
    shared.InitialFlags |= ImDrawListFlags_AllowVtxOffset;
  ImDrawList dl(&shared);
  dl._ResetForNewFrame();
  dl.PushClipRectFullScreen();
  dl.PushTextureID(atlas_texture.id());
  paint(&dl, sc, k, fonts, cell_texture.id());
  dl.PopTextureID();
  dl.PopClipRect();
  dl._PopUnusedDrawCmd();

  ImDrawList* lists[] = {&dl};
  ImDrawData data;
  data.Valid = true;
  data.CmdLists = lists;
  data.CmdListsCount = 1;
  data.TotalVtxCount = dl.VtxBuffer.Size;
  data.TotalIdxCount = dl.IdxBuffer.Size;
  data.DisplayPos = ImVec2(0, 0);
  data.DisplaySize = ImVec2(static_cast<float>(width), static_cast<float>(height));
  data.FramebufferScale = ImVec2(1, 1);

  ImGui_ImplOpenGL3_NewFrame();  // creates the backend's shader and buffers before the first frame
  Framebuffer fb(width, height);
  glViewport(0, 0, width, height);
  glClearColor(static_cast<float>(sc.background.r) / 255.0f,
               static_cast<float>(sc.background.g) / 255.0f,
               static_cast<float>(sc.background.b) / 255.0f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(&data);
  RenderedImage out;
  out.width = width;
  out.height = height;
  out.rgba = fb.read(width, height);
  if (glGetError() == GL_OUT_OF_MEMORY)
    throw std::runtime_error("out of graphics memory rendering a " + std::to_string(width) + "x" +
                             std::to_string(height) + " figure: export at a smaller scale");
  return out;
}

}  // namespace attnscope::gui
