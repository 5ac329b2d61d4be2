# The version check of find_package(my_ops [VERSION]): my_ops-config.cmake's
# library, whose version is in its build record; compatible within a major version.
file(READ "${CMAKE_CURRENT_LIST_DIR}/_build_info.json" _my_ops_record)
string(JSON PACKAGE_VERSION GET "${_my_ops_record}" version)
string(REGEX REPLACE "\\+.*$" "" PACKAGE_VERSION "${PACKAGE_VERSION}")
unset(_my_ops_record)
string(REGEX MATCH "^[0-9]+" _my_ops_major "${PACKAGE_VERSION}")
if(PACKAGE_FIND_VERSION AND (PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION
                             OR NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL _my_ops_major))
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
unset(_my_ops_major)
