# The TiGrIS runtime's sources and include folders: the one list every CMake build reads (runtime_c/CMakeLists.txt,
# which the Cortex-M example uses, and the ESP-IDF component in examples/esp32s3/components/tigris).
#
#   include(path/to/runtime_c/sources.cmake)
#   -> TIGRIS_RUNTIME_SOURCES        every src/**/*.c (sorted), absolute paths
#      TIGRIS_RUNTIME_INCLUDE_DIRS   the public headers (tigris.h, tgrs_op.h, tgrs_format.h): callers and generated code
#      TIGRIS_RUNTIME_PRIVATE_DIRS   the runtime's own headers
#      TIGRIS_RUNTIME_C_OPTIONS      flags the runtime is specified with on every target
#
# Every .c under src/ belongs to the runtime (the host build and the Makefiles take the same set), so the list is the
# folder itself: a kernel file added there is built everywhere without editing three lists.
get_filename_component(TIGRIS_RUNTIME_DIR "${CMAKE_CURRENT_LIST_DIR}" ABSOLUTE)
file(GLOB_RECURSE TIGRIS_RUNTIME_SOURCES LIST_DIRECTORIES false "${TIGRIS_RUNTIME_DIR}/src/*.c")
list(SORT TIGRIS_RUNTIME_SOURCES)
set(TIGRIS_RUNTIME_INCLUDE_DIRS "${TIGRIS_RUNTIME_DIR}/include")
set(TIGRIS_RUNTIME_PRIVATE_DIRS "${TIGRIS_RUNTIME_DIR}/src")
# C99 everywhere; no FP contraction, so float kernels round as on the host and in the NumPy reference (a fused
# multiply-add rounds once instead of twice; GCC contracts by default in its GNU modes).
set(TIGRIS_RUNTIME_C_OPTIONS -std=c99 -ffp-contract=off)
