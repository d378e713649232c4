// gl_texture.cpp: every GL call of attnscope outside the ImGui backend.
#include "render/gl_texture.hpp"

#include <GL/gl.h>

#include <cstdio>
#include <cstring>

namespace attnscope::gui {

GlTexture::GlTexture(bool smooth) {
  GLuint n = 0;
  glGenTextures(1, &n);
  name_ = n;
  glBindTexture(GL_TEXTURE_2D, n);
  const GLint filter = smooth ? GL_LINEAR : GL_NEAREST;
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, filter);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, filter);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
}

GlTexture::~GlTexture() {
  const GLuint n = name_;
  if (n != 0) glDeleteTextures(1, &n);
}

void GlTexture::upload(const RgbaImage& image) {
  if (image.width <= 0 || image.height <= 0) return;
  glBindTexture(GL_TEXTURE_2D, name_);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  if (image.width == width_ && image.height == height_) {
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, image.width, image.height, GL_RGBA, GL_UNSIGNED_BYTE,
                    image.pixels.data());
  } else {
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, image.width, image.height, 0, GL_RGBA,
                 GL_UNSIGNED_BYTE, image.pixels.data());
    width_ = image.width;
    height_ = image.height;
  }
}

ImTextureID GlTexture::id() const {
  return reinterpret_cast<ImTextureID>(static_cast<std::uintptr_t>(name_));
}

std::vector<std::uint8_t> read_framebuffer(int width, int height) {
  const auto row = static_cast<std::size_t>(width) * 4;
  std::vector<std::uint8_t> bottom_up(row * static_cast<std::size_t>(height));
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, bottom_up.data());
  // GL's origin is the bottom-left corner; images start at the top.
  std::vector<std::uint8_t> top_down(bottom_up.size());
  for (int y = 0; y < height; ++y)
    std::memcpy(&top_down[static_cast<std::size_t>(y) * row],
                &bottom_up[static_cast<std::size_t>(height - 1 - y) * row], row);
  for (std::size_t k = 3; k < top_down.size(); k += 4) top_down[k] = 255;  // opaque PNG
  return top_down;
}

RenderedImage read_window(int width, int height) {
  RenderedImage image;
  image.width = width;
  image.height = height;
  if (width > 0 && height > 0) image.rgba = read_framebuffer(width, height);
  return image;
}

std::string gl_renderer() {
  const auto* renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  const auto* version = reinterpret_cast<const char*>(glGetString(GL_VERSION));
  return std::string(renderer ? renderer : "?") + ", " + (version ? version : "?");
}

int max_texture_size() {
  GLint n = 0;
  glGetIntegerv(GL_MAX_TEXTURE_SIZE, &n);
  return n;
}

unsigned gl_error() {
  GLenum first = GL_NO_ERROR;
  // Several flags may be set; a lost context keeps reporting, hence the bound.
  for (int k = 0; k < 16; ++k) {
    const GLenum e = glGetError();
    if (e == GL_NO_ERROR) break;
    if (first == GL_NO_ERROR) first = e;
  }
  return first;
}

std::string gl_error_name(unsigned error) {
  const char* name = "GL error";
  switch (error) {
    case GL_INVALID_ENUM:
      name = "GL_INVALID_ENUM";
      break;
    case GL_INVALID_VALUE:
      name = "GL_INVALID_VALUE";
      break;
    case GL_INVALID_OPERATION:
      name = "GL_INVALID_OPERATION";
      break;
    case GL_OUT_OF_MEMORY:
      name = "GL_OUT_OF_MEMORY";
      break;
    case 0x0506:  // GL_INVALID_FRAMEBUFFER_OPERATION (GL 3.0; not in every gl.h)
      name = "GL_INVALID_FRAMEBUFFER_OPERATION";
      break;
    default:
      break;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s (0x%04x)", name, error);
  return buf;
}

void clear_framebuffer(int width, int height, float r, float g, float b) {
  glViewport(0, 0, width, height);
  glClearColor(r, g, b, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
}

}  // namespace attnscope::gui
