// gl_driver_pin.cpp: compiled into GL programs of sanitized builds only
// (third_party/glfw.cmake, attnscope_gl_driver_pin). Opens Mesa's GL driver
// with RTLD_NODELETE before main(), so that when Mesa loads it later (same
// file, any of its names) and unloads it on XCloseDisplay, it stays mapped:
// LeakSanitizer, which runs after that at exit, then sees the driver's static
// data and can name the driver in its reports.
#include <dlfcn.h>

namespace {

struct KeepGlDriverLoaded {
  KeepGlDriverLoaded() {
    // A handle that is never closed; failure only means the reports stay unnamed.
    (void)dlopen(ATTNSCOPE_GL_DRIVER_PIN, RTLD_LAZY | RTLD_NODELETE);
  }
};

const KeepGlDriverLoaded keep_gl_driver_loaded;

}  // namespace
