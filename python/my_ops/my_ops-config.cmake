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
