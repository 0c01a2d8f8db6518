# sentencepiece, PCRE2 and nlohmann-json from Debian's packages unpacked (dpkg -x) into
# PAGEDCHAT_DEPS_DIR, for a machine that lacks them and cannot fetch them (the GPU machine:
# installer/prepare-gpu-kit.sh unpacks them here, and the folder travels with the tree). They
# get the targets pkg-config would have made, so nothing else in the build changes. PCRE2 links
# statically; Debian ships sentencepiece as a shared library only, found at run time through the
# build tree's RPATH (its needs: the C and C++ runtimes).
set(_deps "${PAGEDCHAT_DEPS_DIR}/usr")
set(_libdir "${_deps}/lib/x86_64-linux-gnu")
foreach(_file "${_libdir}/libsentencepiece.so.0" "${_libdir}/libpcre2-8.a" "${_deps}/include/pcre2.h"
              "${_deps}/include/sentencepiece_processor.h" "${_deps}/share/cmake/nlohmann_json/nlohmann_jsonConfig.cmake")
  if(NOT EXISTS "${_file}")
    message(FATAL_ERROR "PAGEDCHAT_DEPS_DIR=${PAGEDCHAT_DEPS_DIR} has no ${_file}: run installer/prepare-gpu-kit.sh")
  endif()
endforeach()
add_library(PkgConfig::SENTENCEPIECE SHARED IMPORTED GLOBAL)
set_target_properties(PkgConfig::SENTENCEPIECE PROPERTIES
  IMPORTED_LOCATION "${_libdir}/libsentencepiece.so.0"
  IMPORTED_SONAME "libsentencepiece.so.0"
  INTERFACE_INCLUDE_DIRECTORIES "${_deps}/include")
add_library(PkgConfig::PCRE2 STATIC IMPORTED GLOBAL)
set_target_properties(PkgConfig::PCRE2 PROPERTIES
  IMPORTED_LOCATION "${_libdir}/libpcre2-8.a"
  INTERFACE_INCLUDE_DIRECTORIES "${_deps}/include")
set(nlohmann_json_DIR "${_deps}/share/cmake/nlohmann_json" CACHE PATH "nlohmann-json's CMake package" FORCE)
