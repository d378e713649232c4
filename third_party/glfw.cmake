# GLFW 3 (Debian: libglfw3-dev) and the system OpenGL library.
# Provides attnscope_glfw: an interface target linking glfw and OpenGL::GL.
include_guard(GLOBAL)

find_package(glfw3 3.3 REQUIRED)
set(OpenGL_GL_PREFERENCE GLVND)
find_package(OpenGL REQUIRED)

add_library(attnscope_glfw INTERFACE)
target_link_libraries(attnscope_glfw INTERFACE glfw OpenGL::GL)

# attnscope_gl_driver_pin (sanitized builds only; empty otherwise): Mesa loads
# its GL driver (dri/swrast_dri.so, one file under many names) with the first
# GL context and unloads it when the display closes (glfwTerminate), before
# LeakSanitizer scans the heap at exit. The driver's static data is gone by
# then, so blocks it still points to are reported as leaks from "<unknown
# module>", which no suppression can name. gl_driver_pin.cpp, compiled into
# every program that links this target, opens the driver with RTLD_NODELETE
# when the program starts, so it stays mapped to the end: those blocks are
# reachable again, and a real leak inside it is reported, and suppressible
# (scripts/lsan.supp), by the driver's name.
add_library(attnscope_gl_driver_pin INTERFACE)
if(ATTNSCOPE_SANITIZE)
  find_file(ATTNSCOPE_SANITIZE_GL_DRIVER swrast_dri.so
            PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/dri /usr/lib/dri NO_DEFAULT_PATH
            DOC "Mesa's GL driver, kept loaded until exit in sanitized GL programs")
  if(ATTNSCOPE_SANITIZE_GL_DRIVER)
    target_sources(attnscope_gl_driver_pin INTERFACE ${CMAKE_CURRENT_LIST_DIR}/gl_driver_pin.cpp)
    target_compile_definitions(attnscope_gl_driver_pin INTERFACE
      ATTNSCOPE_GL_DRIVER_PIN="${ATTNSCOPE_SANITIZE_GL_DRIVER}")
    target_link_libraries(attnscope_gl_driver_pin INTERFACE ${CMAKE_DL_LIBS})
  else()
    message(WARNING "attnscope: Mesa's swrast_dri.so not found; LeakSanitizer may report the GL "
                    "driver's memory as leaks from <unknown module> (install libgl1-mesa-dri)")
  endif()
endif()
