// gl_texture.hpp: the one place attnscope calls OpenGL. GlTexture is an RAII
// RGBA8 texture with nearest filtering (a heatmap cell stays a crisp square
// at any zoom); read_framebuffer() and read_window() grab the window for
// --screenshot and F12.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "render/rendered_image.hpp"
#include "render/texture.hpp"

namespace attnscope::gui {

class GlTexture final : public Texture {
 public:
  // Needs a current GL context. Nearest filtering (heatmap cells stay crisp
  // squares); `smooth`: linear, for font atlases drawn rotated or scaled.
  explicit GlTexture(bool smooth = false);
  ~GlTexture() override;
  GlTexture(const GlTexture&) = delete;
  GlTexture& operator=(const GlTexture&) = delete;

  void upload(const RgbaImage& image) override;
  ImTextureID id() const override;

 private:
  unsigned int name_ = 0;  // GLuint
  int width_ = 0, height_ = 0;
};

// The current framebuffer's pixels, (height, width, 4) RGBA, top row first.
std::vector<std::uint8_t> read_framebuffer(int width, int height);
// The window's back buffer (before the swap) as an image; no pixels when
// the framebuffer has none (a minimised window).
RenderedImage read_window(int width, int height);

// The largest texture side the GL implementation accepts.
int max_texture_size();

// GL_RENDERER and GL_VERSION, e.g. "llvmpipe (LLVM 15.0.6, 256 bits), 4.5 (Core
// Profile) Mesa 22.3.6".
std::string gl_renderer();

// Drains GL's error flags; returns the first error (GL_INVALID_VALUE, ...) or 0.
unsigned gl_error();
// "GL_INVALID_VALUE (0x0501)" for an error code.
std::string gl_error_name(unsigned error);

// Sets the viewport to the whole framebuffer and clears it to `rgb`.
void clear_framebuffer(int width, int height, float r, float g, float b);

}  // namespace attnscope::gui
