# find_package(my_ops): the kernel library of an installed my_ops wheel, for
# LibTorch programs that run my_ops ops without Python (docs/deploying.md).
#
#   cmake -DCMAKE_PREFIX_PATH="$(python -m my_ops --cmake-prefix);..." ...
#
# That prefix is the folder of the kernel library that fits the torch of that
# Python (a label-free wheel holds several); this file lies beside it and its
# build record. Defines:
#   my_ops_LIBRARY        the kernel library (libmy_ops.so, libmy_ops.dylib, my_ops.dll); a
#                         program loads it (dlopen) before it runs an AOTInductor package or
#                         looks up a my_ops op: loading it registers the ops with the dispatcher
#   my_ops_LIBRARY_DIR    its folder
#   my_ops_VERSION        e.g. 1.0.0 (my_ops_FULL_VERSION: 1.0.0+cu130)
#   my_ops_CUDA_VERSION   the CUDA toolkit of its kernels, "" for the CPU library
#   my_ops_TORCH_VERSION  the torch it was built against; my_ops_TORCH_REQUIREMENT the
#                         torch releases it serves (e.g. torch>=2.10)
#   my_ops::my_ops        an imported target of the library (for its location and RPATH;
#                         it has no headers: the ops are reached through the dispatcher)
#
# The Torch of the same project (find_package(Torch), before or after this one) must be
# one this library serves: a torch minor in its range and, for a CUDA library, a CUDA
# torch of the same CUDA major. Otherwise configuring stops with the way out (both
# prefixes from the same Python, or the my_ops wheel for that torch).
# -Dmy_ops_SKIP_TORCH_CHECK=ON skips the check.
if(CMAKE_VERSION VERSION_LESS 3.19)
  message(FATAL_ERROR "find_package(my_ops) needs CMake >= 3.19 (string(JSON)); this is ${CMAKE_VERSION}")
endif()

set(my_ops_LIBRARY_DIR "${CMAKE_CURRENT_LIST_DIR}")
file(READ "${my_ops_LIBRARY_DIR}/_build_info.json" _my_ops_record)
string(JSON my_ops_FULL_VERSION GET "${_my_ops_record}" version)
string(JSON my_ops_CUDA_VERSION GET "${_my_ops_record}" cuda_version)
string(JSON my_ops_TORCH_VERSION GET "${_my_ops_record}" torch_version)
string(JSON my_ops_TORCH_REQUIREMENT GET "${_my_ops_record}" torch_requirement)
string(REGEX REPLACE "\\+.*$" "" my_ops_VERSION "${my_ops_FULL_VERSION}")
string(JSON _my_ops_index ERROR_VARIABLE _my_ops_error GET "${_my_ops_record}" index_url)
string(JSON _my_ops_pairs ERROR_VARIABLE _my_ops_error GET "${_my_ops_record}" supported_pairs)
unset(_my_ops_record)

set(my_ops_LIBRARY "")
foreach(_my_ops_name libmy_ops.so libmy_ops.dylib my_ops.dll)
  if(EXISTS "${my_ops_LIBRARY_DIR}/${_my_ops_name}")
    set(my_ops_LIBRARY "${my_ops_LIBRARY_DIR}/${_my_ops_name}")
    break()
  endif()
endforeach()
unset(_my_ops_name)

if(NOT my_ops_LIBRARY)
  set(my_ops_FOUND FALSE)
  set(my_ops_NOT_FOUND_MESSAGE "no my_ops kernel library in ${my_ops_LIBRARY_DIR}; point CMAKE_PREFIX_PATH "
      "at the folder `python -m my_ops --cmake-prefix` prints")
  return()
endif()

if(NOT TARGET my_ops::my_ops)
  add_library(my_ops::my_ops SHARED IMPORTED)
  set_target_properties(my_ops::my_ops PROPERTIES IMPORTED_LOCATION "${my_ops_LIBRARY}")
  if(WIN32)
    set_target_properties(my_ops::my_ops PROPERTIES IMPORTED_IMPLIB "${my_ops_LIBRARY}")
  endif()
endif()

# --- the Torch check -------------------------------------------------------------------
# The torch minors the library serves, as _build_info.BuildInfo.torch_range reads its
# requirement: [>=A.B, <C.D); without a lower bound, the minor it was built against.
if(my_ops_TORCH_REQUIREMENT MATCHES ">=[ ]*([0-9]+\\.[0-9]+)")
  set(_my_ops_torch_lower "${CMAKE_MATCH_1}")
  set(_my_ops_torch_upper "")
  if(my_ops_TORCH_REQUIREMENT MATCHES "<[ ]*([0-9]+\\.[0-9]+)")
    set(_my_ops_torch_upper "${CMAKE_MATCH_1}")
  endif()
else()
  string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _my_ops_torch_lower "${my_ops_TORCH_VERSION}")
  math(EXPR _my_ops_next "${CMAKE_MATCH_2} + 1")
  set(_my_ops_torch_upper "${CMAKE_MATCH_1}.${_my_ops_next}")
endif()
set_property(GLOBAL PROPERTY my_ops_TORCH_CHECK_FACTS
             "${my_ops_FULL_VERSION}|${my_ops_CUDA_VERSION}|${_my_ops_torch_lower}|${_my_ops_torch_upper}|${_my_ops_index}|${my_ops_LIBRARY_DIR}")
set_property(GLOBAL PROPERTY my_ops_TORCH_CHECK_PAIRS "${_my_ops_pairs}")
unset(_my_ops_index)
unset(_my_ops_pairs)
unset(_my_ops_error)
unset(_my_ops_next)

# Torch's own build facts: its version (find_package's Torch_VERSION) and whether and with
# which CUDA it was built, from the build strings its headers record (caffe2/core/macros.h,
# what torch.__config__.show() prints).
function(_my_ops_check_torch)
  if(my_ops_SKIP_TORCH_CHECK)
    return()
  endif()
  if(NOT DEFINED TORCH_INSTALL_PREFIX)
    # Torch found in another directory scope (an add_subdirectory), or not at all.
    message(WARNING "my_ops: no find_package(Torch) in the directory that found my_ops, so its "
      "library was not checked against your Torch (version range, CUDA major): call "
      "find_package(Torch) beside find_package(my_ops) to check it, or set "
      "-Dmy_ops_SKIP_TORCH_CHECK=ON to silence this.")
    return()
  endif()
  get_property(_facts GLOBAL PROPERTY my_ops_TORCH_CHECK_FACTS)
  string(REPLACE "|" ";" _facts "${_facts}")
  list(GET _facts 0 _version)
  list(GET _facts 1 _cuda)
  list(GET _facts 2 _lower)
  list(GET _facts 3 _upper)
  list(GET _facts 4 _index)
  list(GET _facts 5 _folder)
  set(_torch_version "${Torch_VERSION}")
  set(_torch_cuda "")
  set(_macros "${TORCH_INSTALL_PREFIX}/include/caffe2/core/macros.h")
  if(EXISTS "${_macros}")
    file(STRINGS "${_macros}" _lines REGEX "\"(TORCH_VERSION|USE_CUDA|CUDA_VERSION)\"")
    foreach(_line IN LISTS _lines)
      if(_line MATCHES "\"TORCH_VERSION\", \"([^\"]*)\"" AND NOT _torch_version)
        set(_torch_version "${CMAKE_MATCH_1}")
      elseif(_line MATCHES "\"CUDA_VERSION\", \"([^\"]*)\"")
        set(_torch_cuda "${CMAKE_MATCH_1}")
      elseif(_line MATCHES "\"USE_CUDA\", \"(OFF|0|)\"")
        set(_torch_cuda "")
        set(_no_cuda TRUE)
      endif()
    endforeach()
    if(_no_cuda)
      set(_torch_cuda "")
    endif()
  else()
    message(STATUS "my_ops: ${_macros} not found: the CUDA of this Torch is not checked")
    set(_torch_cuda "?")
  endif()
  if(NOT _torch_version)
    return()
  endif()
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _torch_minor "${_torch_version}")

  set(_problems "")
  if(_torch_minor VERSION_LESS _lower OR (_upper AND NOT _torch_minor VERSION_LESS _upper))
    if(_upper)
      list(APPEND _problems "it serves torch >= ${_lower}, < ${_upper}")
    else()
      list(APPEND _problems "it serves torch >= ${_lower} (the LibTorch stable ABI)")
    endif()
  endif()
  if(_cuda AND NOT _torch_cuda STREQUAL "?")
    string(REGEX MATCH "^[0-9]+" _cuda_major "${_cuda}")
    string(REGEX MATCH "^[0-9]+" _torch_cuda_major "${_torch_cuda}")
    if(NOT _torch_cuda)
      list(APPEND _problems "it has CUDA ${_cuda} kernels, but this Torch is a CPU-only build")
    elseif(NOT _cuda_major STREQUAL _torch_cuda_major)
      list(APPEND _problems "its kernels are built with CUDA ${_cuda}, but this Torch uses CUDA ${_torch_cuda} (another CUDA major version)")
    endif()
  endif()
  if(NOT _problems)
    return()
  endif()

  list(JOIN _problems "; " _problems)
  if(_torch_cuda AND NOT _torch_cuda STREQUAL "?")
    string(REGEX REPLACE "^([0-9]+)\\.([0-9]).*" "cu\\1\\2" _label "${_torch_cuda}")
    set(_cuda_text "CUDA ${_torch_cuda}")
  else()
    set(_label "cpu")
    set(_cuda_text "CPU only")
  endif()
  get_property(_pairs GLOBAL PROPERTY my_ops_TORCH_CHECK_PAIRS)
  string(REGEX REPLACE "\\+.*$" "" _base "${_version}")
  set(_wheel "")
  string(REPLACE "." "\\." _pair "\"${_torch_minor}-${_label}\"")
  if(_pairs MATCHES "${_pair}" AND _index)
    string(CONCAT _wheel "\nor install the my_ops wheel for that torch in that Python:\n"
           "  pip install my_ops==${_base}+${_label} --extra-index-url ${_index}/whl/torch${_torch_minor}/${_label}/")
  endif()
  message(FATAL_ERROR
    "my_ops ${_version} (${_folder}) does not fit the Torch this project found, torch ${_torch_version} "
    "(${_cuda_text}) in ${TORCH_INSTALL_PREFIX}: ${_problems}.\n"
    "Fix: take both prefixes from the Python whose torch this is (my_ops then picks the library that "
    "fits it):\n"
    "  -DCMAKE_PREFIX_PATH=\"$(python -c 'import torch; print(torch.utils.cmake_prefix_path)');"
    "$(python -m my_ops --cmake-prefix)\"${_wheel}\n"
    "(-Dmy_ops_SKIP_TORCH_CHECK=ON skips this check.)")
endfunction()

# Torch found first: check now; else at the end of this directory, after a later find_package(Torch).
if(DEFINED TORCH_INSTALL_PREFIX)
  _my_ops_check_torch()
else()
  get_property(_my_ops_deferred GLOBAL PROPERTY my_ops_TORCH_CHECK_DEFERRED)
  if(NOT _my_ops_deferred)
    set_property(GLOBAL PROPERTY my_ops_TORCH_CHECK_DEFERRED TRUE)
    cmake_language(DEFER CALL _my_ops_check_torch)
  endif()
  unset(_my_ops_deferred)
endif()
unset(_my_ops_torch_lower)
unset(_my_ops_torch_upper)
