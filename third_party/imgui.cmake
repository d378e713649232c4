# Dear ImGui (Debian: libimgui-dev, 1.86) plus its GLFW and OpenGL 3 backends.
# Provides attnscope_imgui: a static library of the two backends that links
# ImGui itself, so that `#include "imgui.h"` and the backend headers work.
#
# Default: ImGui from libimgui.a via pkg-config; the backend sources Debian
# ships under /usr/share/doc/libimgui-dev/examples/backends are compiled here
# (the .a also holds backend objects, but ours come first on the link line, so
# the archive's copies are never pulled in).
# Alternative: -DIMGUI_DIR=<upstream checkout> builds ImGui and the backends
# from that source tree instead.
#
# Third-party code: compiled without attnscope_warnings.
include_guard(GLOBAL)

set(IMGUI_DIR "" CACHE PATH "Upstream Dear ImGui checkout to build instead of the system libimgui")
set(ATTNSCOPE_IMGUI_BACKENDS_DIR "/usr/share/doc/libimgui-dev/examples/backends"
    CACHE PATH "Where the system ImGui's backend sources live")

include(glfw)

if(IMGUI_DIR)
  if(NOT EXISTS "${IMGUI_DIR}/imgui.cpp")
    message(FATAL_ERROR "IMGUI_DIR=${IMGUI_DIR} has no imgui.cpp: point it at a Dear ImGui checkout")
  endif()
  add_library(attnscope_imgui STATIC
    ${IMGUI_DIR}/imgui.cpp
    ${IMGUI_DIR}/imgui_demo.cpp
    ${IMGUI_DIR}/imgui_draw.cpp
    ${IMGUI_DIR}/imgui_tables.cpp
    ${IMGUI_DIR}/imgui_widgets.cpp
    ${IMGUI_DIR}/misc/cpp/imgui_stdlib.cpp
    ${IMGUI_DIR}/backends/imgui_impl_glfw.cpp
    ${IMGUI_DIR}/backends/imgui_impl_opengl3.cpp)
  target_include_directories(attnscope_imgui SYSTEM PUBLIC
    ${IMGUI_DIR} ${IMGUI_DIR}/backends ${IMGUI_DIR}/misc/cpp)
  target_link_libraries(attnscope_imgui PUBLIC attnscope_glfw ${CMAKE_DL_LIBS})
else()
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(imgui REQUIRED IMPORTED_TARGET imgui)  # Requires: stb (font rasteriser)
  foreach(src imgui_impl_glfw.cpp imgui_impl_opengl3.cpp)
    if(NOT EXISTS "${ATTNSCOPE_IMGUI_BACKENDS_DIR}/${src}")
      message(FATAL_ERROR "ImGui backend ${src} not found in ${ATTNSCOPE_IMGUI_BACKENDS_DIR}: "
                          "install libimgui-dev, or pass -DIMGUI_DIR=<imgui checkout>")
    endif()
  endforeach()
  add_library(attnscope_imgui STATIC
    ${ATTNSCOPE_IMGUI_BACKENDS_DIR}/imgui_impl_glfw.cpp
    ${ATTNSCOPE_IMGUI_BACKENDS_DIR}/imgui_impl_opengl3.cpp)
  # The backend headers live in <imgui>/backends; imgui_impl_opengl3.cpp also
  # needs imgui_impl_opengl3_loader.h from there.
  target_include_directories(attnscope_imgui SYSTEM PUBLIC ${imgui_INCLUDE_DIRS}
                             /usr/include/imgui/backends)
  target_link_libraries(attnscope_imgui PUBLIC PkgConfig::imgui attnscope_glfw ${CMAKE_DL_LIBS})
  # ImGui 1.86's GL loader (imgui_impl_opengl3_loader.h) declares its function
  # table as ptr[53] and fills 54 entries (ocornut/imgui#4830, fixed in 1.87).
  # The writes stay inside the union (its struct view holds 54 pointers), so
  # AddressSanitizer is silent, but UBSan's bounds check stops every GL test at
  # ImGui_ImplOpenGL3_Init. Off for that one check in that one file only.
  if(ATTNSCOPE_SANITIZE AND imgui_VERSION VERSION_LESS 1.87)
    set_source_files_properties(${ATTNSCOPE_IMGUI_BACKENDS_DIR}/imgui_impl_opengl3.cpp
                                PROPERTIES COMPILE_OPTIONS -fno-sanitize=bounds)
  endif()
endif()
set_target_properties(attnscope_imgui PROPERTIES POSITION_INDEPENDENT_CODE ON)
