# cpack: a .tar.gz and a .deb of the installed tree (cmake/GeniexInstall.cmake).
#   cmake --build build/release --target package     (or: cd build/release && cpack)
# The .deb's Depends come from dpkg-shlibdeps over the binary, libgeniex.so and the plugins, so
# the package declares exactly the shared libraries they link (tests/python/test_package.py
# installs it on a bare Debian 12 root to prove the list complete).
if(DEFINED SKBUILD)
  # pip / scikit-build-core installs only the wheel's files (bindings/python/CMakeLists.txt).
  return()
endif()
set(CPACK_PACKAGE_NAME geniex)
set(CPACK_PACKAGE_VENDOR "GenieX")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GenieX: on-device LLM runtime (CLI, C/C++ library, NPU plugins)")
set(CPACK_PACKAGE_CONTACT "GenieX maintainers <geniex@localhost>")
set(CPACK_GENERATOR "TGZ;DEB")
set(CPACK_PACKAGE_FILE_NAME "geniex-${PROJECT_VERSION}-${CMAKE_SYSTEM_NAME}-${CMAKE_SYSTEM_PROCESSOR}")
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF)
set(CPACK_DEB_COMPONENT_INSTALL OFF)
# The tarball keeps its own top folder (geniex-VERSION-Linux-ARCH/bin/geniex ...); the .deb
# installs under /usr (the DEB generator's default prefix).
set(CPACK_INCLUDE_TOPLEVEL_DIRECTORY ON)
include(CPack)
