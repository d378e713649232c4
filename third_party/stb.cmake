# stb (Debian: libstb-dev): stb_image_write.h for PNG screenshots, stb_image.h
# for reading them back in tests. Debian ships the implementations compiled
# in libstb, so no STB_*_IMPLEMENTATION is defined anywhere in attnscope.
# Provides attnscope_stb.
include_guard(GLOBAL)

find_package(PkgConfig REQUIRED)
pkg_check_modules(stb REQUIRED IMPORTED_TARGET stb)

add_library(attnscope_stb INTERFACE)
target_link_libraries(attnscope_stb INTERFACE PkgConfig::stb)
