# What `cmake --install` puts under a prefix, and the packages made of it:
#   bin/geniex                          the CLI (internal libraries linked in statically)
#   include/geniex/*.h, *.hpp           the public C++ API and the C ABI
#   lib/libgeniex.a                     every object of the engine, one archive
#   lib/libgeniex.so.0 (+ links)        the same, exporting only the public API (cmake/geniex.map)
#   lib/geniex/plugins/                 the NPU plugins (found relative to bin/ and to the .so)
#   lib/cmake/geniex/                   find_package(geniex) -> geniex::geniex (+ _static/_shared)
#   lib/pkgconfig/geniex.pc             pkg-config geniex [--static]
# The two libraries are built from the objects of geniex_engine's static-library closure (walked
# below), so the in-tree targets stay as they are. Included last by the top-level CMakeLists.
if(DEFINED SKBUILD)
  # pip / scikit-build-core installs only the wheel's files (bindings/python/CMakeLists.txt).
  return()
endif()
include(CMakePackageConfigHelpers)

# Third-party link items the engine may reach, and how a consumer of the static library finds
# them: "pkg-config module" for the .pc file's Requires.private and the CMake package's
# pkg_check_modules, or "-lflag" for Libs.private. A closure item missing here stops the
# configure, so a new private dependency cannot be left out of the packages silently.
set(_geniex_pkg_modules
    "PkgConfig::GENIEX_PCRE2=libpcre2-8" "PkgConfig::GENIEX_ICU=icu-uc" "PkgConfig::GENIEX_JPEG=libjpeg"
    "PkgConfig::GENIEX_STB=stb" "PkgConfig::GENIEX_WEBP=libwebp")

# Imported targets that only carry headers.
set(_geniex_header_only nlohmann_json::nlohmann_json Boost::headers Boost::boost CLI11::CLI11)
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

# Walks LINK_LIBRARIES from `tgt`: static geniex_* libraries go to _geniex_closure, everything
# else (imported targets, plain library names) to _geniex_external.
function(_geniex_walk tgt)
  get_property(_seen GLOBAL PROPERTY _geniex_seen)
  if(tgt IN_LIST _seen)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY _geniex_seen ${tgt})
  get_target_property(_type ${tgt} TYPE)
  get_target_property(_imported ${tgt} IMPORTED)
  if(_imported)
    set_property(GLOBAL APPEND PROPERTY _geniex_external ${tgt})
    return()
  endif()
  if(_type STREQUAL "INTERFACE_LIBRARY")
    get_target_property(_links ${tgt} INTERFACE_LINK_LIBRARIES)
  else()
    if(_type STREQUAL "STATIC_LIBRARY" OR _type STREQUAL "OBJECT_LIBRARY")
      set_property(GLOBAL APPEND PROPERTY _geniex_closure ${tgt})
    endif()
    get_target_property(_links ${tgt} LINK_LIBRARIES)
  endif()
  if(NOT _links)
    return()
  endif()
  foreach(_l IN LISTS _links)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" _l "${_l}")
    if(_l MATCHES "^\\$<" OR _l STREQUAL "")
      continue()
    elseif(TARGET ${_l})
      _geniex_walk(${_l})
    else()
      set_property(GLOBAL APPEND PROPERTY _geniex_external ${_l})
    endif()
  endforeach()
endfunction()

set_property(GLOBAL PROPERTY _geniex_seen "")
set_property(GLOBAL PROPERTY _geniex_closure "")
set_property(GLOBAL PROPERTY _geniex_external "")
_geniex_walk(geniex_engine)
get_property(_geniex_closure GLOBAL PROPERTY _geniex_closure)
get_property(_geniex_external GLOBAL PROPERTY _geniex_external)
list(REMOVE_DUPLICATES _geniex_external)

set(_geniex_objects)
foreach(_t IN LISTS _geniex_closure)
  list(APPEND _geniex_objects $<TARGET_OBJECTS:${_t}>)
endforeach()

# Sort the external items into pkg-config modules and plain flags.
set(_geniex_requires_private)
set(_geniex_libs_private)
set(_geniex_link_external)
foreach(_e IN LISTS _geniex_external)
  set(_module "")
  foreach(_pair IN LISTS _geniex_pkg_modules)
    string(REPLACE "=" ";" _kv "${_pair}")
    list(GET _kv 0 _k)
    list(GET _kv 1 _v)
    if(_e STREQUAL _k)
      set(_module ${_v})
    endif()
  endforeach()
  if(_module)
    # The subdirectories' imported targets are not visible here: find the module again.
    string(MAKE_C_IDENTIFIER "GENIEX_INSTALL_${_module}" _id)
    pkg_check_modules(${_id} REQUIRED QUIET IMPORTED_TARGET ${_module})
    list(APPEND _geniex_requires_private ${_module})
    list(APPEND _geniex_link_external PkgConfig::${_id})
  elseif(_e STREQUAL "Threads::Threads")
    list(APPEND _geniex_libs_private -pthread)
    list(APPEND _geniex_link_external ${_e})
  elseif(_e STREQUAL "${CMAKE_DL_LIBS}" OR _e MATCHES "^(m|rt|pthread)$")
    list(APPEND _geniex_libs_private -l${_e})
    list(APPEND _geniex_link_external ${_e})
  elseif(_e IN_LIST _geniex_header_only)
    # Header-only: nothing to link.
  else()
    message(FATAL_ERROR "GeniexInstall: the engine links '${_e}', which cmake/GeniexInstall.cmake "
                        "does not know how a consumer of libgeniex.a finds: add it to "
                        "_geniex_pkg_modules (or the plain flags)")
  endif()
endforeach()
list(REMOVE_DUPLICATES _geniex_requires_private)
list(REMOVE_DUPLICATES _geniex_libs_private)

# libgeniex.a: one archive holding the objects of the whole closure.
add_library(geniex_static STATIC ${_geniex_objects})
set_target_properties(geniex_static PROPERTIES OUTPUT_NAME geniex LINKER_LANGUAGE CXX)
target_link_libraries(geniex_static INTERFACE ${_geniex_link_external})

# libgeniex.so: the same objects; the version script exports the C ABI and the public C++ API
# only (`nm -D --defined-only` shows nothing else; tests/python/test_install.py checks).
add_library(geniex_shared SHARED ${_geniex_objects})
set_target_properties(geniex_shared PROPERTIES
  OUTPUT_NAME geniex LINKER_LANGUAGE CXX VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
  LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/geniex.map)
target_link_libraries(geniex_shared PRIVATE ${_geniex_link_external})
target_link_options(geniex_shared PRIVATE -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/geniex.map
                    -Wl,--exclude-libs,ALL)
if(NOT CMAKE_CROSSCOMPILING)
  # Every symbol resolved at link time (checked natively; cross builds link the same objects).
  target_link_options(geniex_shared PRIVATE -Wl,--no-undefined)
endif()
foreach(_t geniex_static geniex_shared)
  foreach(_dep IN LISTS _geniex_closure)
    add_dependencies(${_t} ${_dep})
  endforeach()
endforeach()

# The CLI, headers, libraries, plugins.
install(TARGETS geniex RUNTIME DESTINATION bin)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/geniex DESTINATION include
        FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
install(TARGETS geniex_static ARCHIVE DESTINATION lib)
install(TARGETS geniex_shared LIBRARY DESTINATION lib NAMELINK_COMPONENT Unspecified)
install(TARGETS geniex_npu_ref LIBRARY DESTINATION lib/geniex/plugins)
if(TARGET geniex_npu_qnn)
  install(TARGETS geniex_npu_qnn LIBRARY DESTINATION lib/geniex/plugins/qnn)
endif()

# find_package(geniex): a hand-written config (the in-tree libraries are not exported targets).
string(JOIN " " GENIEX_PC_REQUIRES_PRIVATE ${_geniex_requires_private})
string(JOIN " " GENIEX_PC_LIBS_PRIVATE ${_geniex_libs_private})
set(GENIEX_PKG_MODULES ${_geniex_requires_private})
set(GENIEX_PLAIN_LIBS)
foreach(_e IN LISTS _geniex_link_external)
  if(NOT _e MATCHES "::")
    list(APPEND GENIEX_PLAIN_LIBS ${_e})
  endif()
endforeach()
set(GENIEX_SHARED_FILE libgeniex.so.${PROJECT_VERSION})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/geniexConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/package/geniexConfig.cmake
                              INSTALL_DESTINATION lib/cmake/geniex)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/geniexConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/geniexConfig.cmake
              ${PROJECT_BINARY_DIR}/package/geniexConfigVersion.cmake
        DESTINATION lib/cmake/geniex)
configure_file(${PROJECT_SOURCE_DIR}/cmake/geniex.pc.in ${PROJECT_BINARY_DIR}/package/geniex.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/geniex.pc DESTINATION lib/pkgconfig)
