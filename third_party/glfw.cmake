# GLFW 3 (Debian: libglfw3-dev) and the system OpenGL library.
# Provides attnscope_glfw: an interface target linking glfw and OpenGL::GL.
include_guard(GLOBAL)

find_package(glfw3 3.3 REQUIRED)
set(OpenGL_GL_PREFERENCE GLVND)
find_package(OpenGL REQUIRED)

add_library(attnscope_glfw INTERFACE)
target_link_libraries(attnscope_glfw INTERFACE glfw OpenGL::GL)
