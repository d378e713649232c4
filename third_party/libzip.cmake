# libzip (Debian: libzip-dev), found with pkg-config. Provides attnscope_libzip,
# an interface target for the .pth reader (PyTorch checkpoints are zip archives).
include_guard(GLOBAL)

find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip>=1.5)

add_library(attnscope_libzip INTERFACE)
target_link_libraries(attnscope_libzip INTERFACE PkgConfig::LIBZIP)
