# The version check of find_package(my_ops [VERSION | MIN...[<]MAX]): my_ops-config.cmake's
# library, whose version is in its build record. The compatibility policy (CHANGELOG.md):
# the API of a release stays until the next major release, so
#   find_package(my_ops 1.2)          takes 1.2 <= version < 2 (the same major, not older);
#   find_package(my_ops 1.2...<3)     a range (CMake >= 3.19) names what the caller accepts:
#                                     any version inside it, across majors as it says;
#                                     MIN...MAX includes MAX, MIN...<MAX excludes it.
file(READ "${CMAKE_CURRENT_LIST_DIR}/_build_info.json" _my_ops_record)
string(JSON PACKAGE_VERSION GET "${_my_ops_record}" version)
string(REGEX REPLACE "\\+.*$" "" PACKAGE_VERSION "${PACKAGE_VERSION}")
unset(_my_ops_record)
string(REGEX MATCH "^[0-9]+" _my_ops_major "${PACKAGE_VERSION}")

set(PACKAGE_VERSION_COMPATIBLE TRUE)
if(PACKAGE_FIND_VERSION_RANGE)
  if(PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MIN
     OR (PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "INCLUDE" AND PACKAGE_VERSION VERSION_GREATER PACKAGE_FIND_VERSION_MAX)
     OR (PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "EXCLUDE"
         AND PACKAGE_VERSION VERSION_GREATER_EQUAL PACKAGE_FIND_VERSION_MAX))
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  endif()
elseif(PACKAGE_FIND_VERSION)
  if(PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION OR NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL _my_ops_major)
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  elseif(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
unset(_my_ops_major)
