# Compiler flags shared by every target: warnings, sanitizers, and strict floating point.
add_library(geniex_options INTERFACE)
target_compile_options(geniex_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
  # Reference math must round the same way as numpy and on every target: no FMA contraction.
  -ffp-contract=off)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC 12 at -O3 reports impossible std::string memcpy overlaps (GCC bug 105329): false positives.
  target_compile_options(geniex_options INTERFACE -Wno-restrict)
endif()
if(GENIEX_WERROR)
  target_compile_options(geniex_options INTERFACE -Werror)
endif()
if(GENIEX_SANITIZE OR GENIEX_FUZZ)
  target_compile_options(geniex_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer)
  target_link_options(geniex_options INTERFACE -fsanitize=address,undefined)
endif()
if(GENIEX_SANITIZE)
  # ctest: the first report fails the test.
  target_compile_options(geniex_options INTERFACE -fno-sanitize-recover=all)
endif()
if(GENIEX_FUZZ)
  # Instrument the libraries for coverage; the fuzz targets add -fsanitize=fuzzer themselves.
  # The numeric code no fuzz target reaches stays uninstrumented (tests/fuzz/coverage_ignore.txt),
  # so the tests of a build with both options (the asan preset) run at ASan speed.
  target_compile_options(geniex_options INTERFACE -fsanitize=fuzzer-no-link
    -fsanitize-coverage-ignorelist=${PROJECT_SOURCE_DIR}/tests/fuzz/coverage_ignore.txt)
endif()
target_include_directories(geniex_options INTERFACE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
