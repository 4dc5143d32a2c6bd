# Cross-building the runtime (prog/init, initc-checkpoint) for AArch64 Linux on another host,
# with Debian's gcc-aarch64-linux-gnu / g++-aarch64-linux-gnu and arm64 libraries installed
# through multiarch (`dpkg --add-architecture arm64; apt-get install libxxhash-dev:arm64`):
#
#   cmake -G Ninja -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#     -DINITC_BUILD_COMPILER=OFF -DINITC_BUILD_TESTS=OFF -DINITC_BUILD_BENCHMARKS=OFF \
#     -DINITC_WITH_MPI=OFF
#
# Then `initc compile --target-cpu=neoverse-v2,aarch64 --runtime build-aarch64/bin/init`.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Headers and libraries of the target only: Debian's arm64 packages and the cross sysroot.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# A program run under emulation, e.g. by ctest: qemu-user-static with the cross sysroot.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L /usr/aarch64-linux-gnu)
