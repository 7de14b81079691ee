# geniex_add_test(NAME name SOURCES a.cpp ... LIBS lib ... [LABELS l ...]): a GoogleTest executable
# registered with ctest (runs under CMAKE_CROSSCOMPILING_EMULATOR when cross-building).
if(GENIEX_GTEST_FROM_SOURCE)
  if(NOT TARGET gtest)
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
    add_subdirectory(/usr/src/googletest ${CMAKE_BINARY_DIR}/_googletest EXCLUDE_FROM_ALL)
  endif()
  set(GENIEX_GTEST_LIBS gtest gtest_main)
else()
  find_package(GTest REQUIRED)
  set(GENIEX_GTEST_LIBS GTest::gtest GTest::gtest_main)
endif()
include(GoogleTest)

function(geniex_add_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} geniex_options ${GENIEX_GTEST_LIBS})
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  gtest_discover_tests(${T_NAME} DISCOVERY_MODE PRE_TEST
                       PROPERTIES ENVIRONMENT "GENIEX_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
                                  LABELS "${T_LABELS}")
endfunction()
