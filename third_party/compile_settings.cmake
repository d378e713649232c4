# Compile settings as interface targets, linked PRIVATE by our own targets so
# that third-party code never sees our warnings or -Werror.

add_library(attnscope_warnings INTERFACE)
target_compile_options(attnscope_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       -Wconversion -Wno-sign-conversion)
# GCC 12 reports false "maybe uninitialized" warnings inside its own AVX-512
# intrinsics when Eigen is built with -march=native.
# GCC 12 also flags std::string's own memcpy in `"t" + std::to_string(n)` at -O3
# (GCC bug 105329, -Wrestrict false positive).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(attnscope_warnings INTERFACE -Wno-maybe-uninitialized -Wno-restrict)
endif()
if(ATTNSCOPE_WERROR)
  target_compile_options(attnscope_warnings INTERFACE -Werror)
endif()

# Numerics every target shares: no FMA contraction, so float expressions round
# the way PyTorch's do (the RNG's x * (to - from) + from depends on it).
add_library(attnscope_numerics INTERFACE)
target_compile_options(attnscope_numerics INTERFACE -ffp-contract=off)
if(ATTNSCOPE_NATIVE)
  target_compile_options(attnscope_numerics INTERFACE -march=native)
  # On AVX-512 CPUs GCC's auto-vectorizer still prefers 256-bit vectors for
  # -march=native. Our loops that it vectorizes (the RNG's Mersenne Twister and
  # dropout draws, the softmax row pass) run ~1.5x faster with 512-bit ones:
  # dropout draws 1.43 -> 0.93 ms per 1 M, the T = 256 GPT-2 trace ~6 % less
  # CPU (docs/PERFORMANCE.md). Harmless where the CPU has no AVX-512, and it
  # changes no result: vectorizing never reorders float arithmetic here.
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag(-mprefer-vector-width=512 ATTNSCOPE_HAVE_PREFER_512)
  if(ATTNSCOPE_HAVE_PREFER_512)
    target_compile_options(attnscope_numerics INTERFACE -mprefer-vector-width=512)
  endif()
endif()

# Eigen's per-product OpenMP threading stalls at every product's barrier when
# the machine is busy; the engine parallelises coarsely itself (attention.cpp).
target_compile_definitions(attnscope_numerics INTERFACE EIGEN_DONT_PARALLELIZE)

find_package(OpenMP COMPONENTS CXX)
if(OpenMP_CXX_FOUND)
  target_link_libraries(attnscope_numerics INTERFACE OpenMP::OpenMP_CXX)
  target_compile_definitions(attnscope_numerics INTERFACE ATTNSCOPE_HAVE_OPENMP=1)
endif()

# ATTNSCOPE_FUZZ: coverage instrumentation for libFuzzer in everything we
# compile, not only in the fuzz targets' own files (fuzz/CMakeLists.txt links
# libFuzzer into those): without it the fuzzer sees no edge of the parsers
# it feeds and mutates blindly.
if(ATTNSCOPE_FUZZ AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# ATTNSCOPE_SANITIZE=address,undefined: instrument everything we compile (our
# code, the ImGui backends, the tests) so a report fails the test that hit it.
if(ATTNSCOPE_SANITIZE)
  set(sanitize_flags -fsanitize=${ATTNSCOPE_SANITIZE} -fno-omit-frame-pointer
      -fno-sanitize-recover=all)
  add_compile_options(${sanitize_flags})
  add_link_options(${sanitize_flags})
  # With sanitizers GCC 12 warns inside its own AVX-512 headers
  # (_mm512_undefined_ps "used uninitialized"): not our code.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(attnscope_warnings INTERFACE -Wno-uninitialized)
  endif()
endif()
