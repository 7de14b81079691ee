# Cross toolchain: Debian 12 x86-64 host -> aarch64 Linux (g++-aarch64-linux-gnu), tests under qemu.
#
# Target libraries come from two places, and only from there:
#   /usr/aarch64-linux-gnu          the cross toolchain's own libc/libstdc++ (package libc6-dev-arm64-cross)
#   /usr/lib/aarch64-linux-gnu      Debian multiarch arm64 packages (e.g. libpcre2-dev:arm64, libhwy-dev:arm64;
#                                   scripts/setup.sh installs them)
# Host x86-64 library directories are explicitly ignored, so a host library can never be linked.
# Architecture-independent header-only packages (CLI11, nlohmann-json: /usr/include + /usr/share/cmake)
# stay usable: find_package() searches /usr/share/cmake under the "/" root, and /usr/include is on the
# Debian cross compiler's default include path (last, after the target's own headers).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(_geniex_triple aarch64-linux-gnu)
find_program(_geniex_cross_cc NAMES ${_geniex_triple}-gcc ${_geniex_triple}-gcc-12 REQUIRED)
find_program(_geniex_cross_cxx NAMES ${_geniex_triple}-g++ ${_geniex_triple}-g++-12 REQUIRED)
set(CMAKE_C_COMPILER ${_geniex_cross_cc})
set(CMAKE_CXX_COMPILER ${_geniex_cross_cxx})

# Run target binaries (tests, gtest discovery) under user-mode qemu with the cross sysroot.
# LD_LIBRARY_PATH makes the cross sysroot's libc win over the multiarch arm64 libc6 (pulled in
# by libpcre2-dev:arm64 etc.): the cross ld.so with a libc of another build hangs in
# pthread_create, so any test that starts a thread never returned.
find_program(_geniex_qemu NAMES qemu-aarch64-static qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${_geniex_qemu} -L /usr/${_geniex_triple} -E
    LD_LIBRARY_PATH=/usr/${_geniex_triple}/lib)

set(CMAKE_FIND_ROOT_PATH /usr/${_geniex_triple} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)  # build tools run on the host
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Never look at host (x86-64) libraries, package configs or pkg-config files.
set(_geniex_host_dirs
    /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib32 /usr/libx32 /lib32 /libx32
    /usr/local/lib /usr/lib/x86_64-linux-gnu/cmake)
list(APPEND CMAKE_IGNORE_PATH ${_geniex_host_dirs})
list(REMOVE_DUPLICATES CMAKE_IGNORE_PATH)

# pkg-config (FindPkgConfig) must report arm64 .pc files only.
set(ENV{PKG_CONFIG_LIBDIR}
    "/usr/lib/${_geniex_triple}/pkgconfig:/usr/${_geniex_triple}/lib/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")
