# Finding nvcc, checking it against torch and the wheel's version label, and
# turning TORCH_CUDA_ARCH_LIST into CMake's CUDA_ARCHITECTURES.

# Sets ${out_var} to the nvcc that builds the CUDA kernels, or "" for a
# CPU-only build. Reads MY_OPS_CUDA (AUTO, ON, OFF) from -D or the
# environment. nvcc is looked up as CMAKE_CUDA_COMPILER, $CUDACXX,
# $CUDA_HOME/bin, $CUDA_PATH/bin, PATH, then /usr/local/cuda/bin: the same
# order as build_support/metadata_provider.py, which derives the wheel's +cuXYZ
# label from it.
function(my_ops_find_nvcc out_var)
  if(NOT DEFINED MY_OPS_CUDA)
    if(DEFINED ENV{MY_OPS_CUDA} AND NOT "$ENV{MY_OPS_CUDA}" STREQUAL "")
      set(MY_OPS_CUDA "$ENV{MY_OPS_CUDA}")
    else()
      set(MY_OPS_CUDA AUTO)
    endif()
  endif()
  string(TOUPPER "${MY_OPS_CUDA}" mode)
  if(mode MATCHES "^(0|OFF|NO|FALSE)$")
    set(mode OFF)
  elseif(mode MATCHES "^(1|ON|YES|TRUE)$")
    set(mode ON)
  elseif(NOT mode STREQUAL "AUTO")
    message(FATAL_ERROR "MY_OPS_CUDA must be AUTO, ON or OFF, but is '${MY_OPS_CUDA}'")
  endif()

  set(nvcc "")
  if(NOT mode STREQUAL "OFF")
    if(CMAKE_CUDA_COMPILER)
      set(nvcc "${CMAKE_CUDA_COMPILER}")
    elseif(DEFINED ENV{CUDACXX} AND NOT "$ENV{CUDACXX}" STREQUAL "")
      set(nvcc "$ENV{CUDACXX}")
    else()
      foreach(root IN ITEMS "$ENV{CUDA_HOME}" "$ENV{CUDA_PATH}")
        if(root AND NOT nvcc)
          find_program(_my_ops_nvcc nvcc PATHS "${root}/bin" NO_DEFAULT_PATH NO_CACHE)
          if(_my_ops_nvcc)
            set(nvcc "${_my_ops_nvcc}")
          endif()
        endif()
      endforeach()
      if(NOT nvcc)
        find_program(_my_ops_nvcc nvcc PATHS /usr/local/cuda/bin NO_CACHE)
        if(_my_ops_nvcc)
          set(nvcc "${_my_ops_nvcc}")
        endif()
      endif()
    endif()
  endif()

  my_ops_version_label(label)
  if(label MATCHES "^cu[0-9]+$" AND NOT nvcc)
    message(FATAL_ERROR "The version label +${label} asks for a CUDA build, but no nvcc was found; "
                        "set CUDA_HOME or CUDACXX to the toolkit.")
  endif()
  if(label STREQUAL "cpu")
    set(nvcc "")
  endif()
  if(NOT nvcc AND mode STREQUAL "ON")
    message(FATAL_ERROR "MY_OPS_CUDA=ON but no nvcc was found: set CUDA_HOME (or CUDACXX) "
                        "to a CUDA toolkit, or build CPU-only with MY_OPS_CUDA=OFF.")
  endif()
  set(${out_var} "${nvcc}" PARENT_SCOPE)
endfunction()

# Enables the CUDA language with `nvcc` (a macro: enable_language must run in
# the top-level scope) and checks nvcc against the wheel's version label.
macro(my_ops_enable_cuda nvcc)
  set(CMAKE_CUDA_COMPILER "${nvcc}" CACHE FILEPATH "nvcc used for the CUDA kernels" FORCE)
  enable_language(CUDA)
  get_filename_component(_my_ops_cuda_root "${nvcc}" DIRECTORY)
  get_filename_component(_my_ops_cuda_root "${_my_ops_cuda_root}" DIRECTORY)
  # torch's CMake config looks for CUDA itself (legacy FindCUDA): point it at the same toolkit.
  set(CUDA_TOOLKIT_ROOT_DIR "${_my_ops_cuda_root}" CACHE PATH "CUDA toolkit" FORCE)
  set(CUDAToolkit_ROOT "${_my_ops_cuda_root}")
  find_package(CUDAToolkit REQUIRED)
  string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _my_ops_cuda_mm "${CMAKE_CUDA_COMPILER_VERSION}")
  set(_my_ops_nvcc_label "cu${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
  my_ops_version_label(_my_ops_label)
  if(_my_ops_label MATCHES "^cu[0-9]+$" AND NOT _my_ops_label STREQUAL _my_ops_nvcc_label)
    message(FATAL_ERROR
      "The wheel's version label is +${_my_ops_label}, but ${nvcc} is CUDA "
      "${CMAKE_CUDA_COMPILER_VERSION} (+${_my_ops_nvcc_label}). Point CUDA_HOME or CUDACXX at one "
      "toolkit for both.")
  endif()
  message(STATUS "my_ops: CUDA kernels with ${nvcc} (CUDA ${CMAKE_CUDA_COMPILER_VERSION})")
endmacro()

# The local version label of the wheel being built ("cu130", "cpu", or "").
function(my_ops_version_label out_var)
  set(label "")
  if(DEFINED SKBUILD_PROJECT_VERSION_FULL AND SKBUILD_PROJECT_VERSION_FULL MATCHES "\\+(.+)$")
    set(label "${CMAKE_MATCH_1}")
  endif()
  set(${out_var} "${label}" PARENT_SCOPE)
endfunction()

# nvcc's CUDA major must be torch's. A legacy binding links torch's CUDA
# libraries of one major version. A stable binding would compile against any
# torch's headers, but its library would then serve torch builds of nvcc's
# major, not the torch it was built against and will run with: a build that
# "succeeds" into a library this torch refuses at import (pip hides a CMake
# warning of a build that succeeds). So both stop, naming the ways out.
function(my_ops_check_cuda_matches_torch torch_cuda abi)
  string(REGEX MATCH "^[0-9]+" nvcc_major "${CMAKE_CUDA_COMPILER_VERSION}")
  string(REGEX MATCH "^[0-9]+" torch_major "${torch_cuda}")
  if(NOT nvcc_major STREQUAL torch_major)
    message(FATAL_ERROR
      "nvcc is CUDA ${CMAKE_CUDA_COMPILER_VERSION} but torch was built with CUDA ${torch_cuda}: "
      "the major versions must match. Point CUDA_HOME (or CUDACXX) at a CUDA ${torch_major} toolkit "
      "no newer than ${torch_cuda}, install the torch variant for CUDA ${nvcc_major}, or build the CPU "
      "kernels only with MY_OPS_CUDA=OFF.")
  endif()
endfunction()

# Reads TORCH_CUDA_ARCH_LIST (-D or environment; default: build_support/matrix.py's
# list for this CUDA version) and returns it normalised ("7.5;8.0;9.0+PTX")
# and as CUDA_ARCHITECTURES ("75-real;80-real;90"): SASS for every entry,
# PTX as well for entries marked +PTX.
function(my_ops_cuda_architectures out_list out_cmake)
  if(DEFINED TORCH_CUDA_ARCH_LIST)
    set(requested "${TORCH_CUDA_ARCH_LIST}")
  elseif(DEFINED ENV{TORCH_CUDA_ARCH_LIST} AND NOT "$ENV{TORCH_CUDA_ARCH_LIST}" STREQUAL "")
    set(requested "$ENV{TORCH_CUDA_ARCH_LIST}")
  else()
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" cuda_version "${CMAKE_CUDA_COMPILER_VERSION}")
    execute_process(
      COMMAND "${Python_EXECUTABLE}" "${PROJECT_SOURCE_DIR}/build_support/matrix.py" arch-list
              --cuda "${cuda_version}"
      OUTPUT_VARIABLE requested
      ERROR_VARIABLE matrix_error
      RESULT_VARIABLE matrix_result
      OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT matrix_result EQUAL 0)
      message(FATAL_ERROR "No default arch list for CUDA ${cuda_version}: ${matrix_error}"
                          "Set TORCH_CUDA_ARCH_LIST, e.g. \"8.0;9.0+PTX\".")
    endif()
  endif()
  string(REGEX REPLACE "[ ,]+" ";" requested "${requested}")
  set(normalised "")
  set(architectures "")
  foreach(entry IN LISTS requested)
    if(entry STREQUAL "")
      continue()
    endif()
    if(NOT entry MATCHES "^([0-9]+)\\.([0-9]+)(a|f)?(\\+PTX)?$")
      message(FATAL_ERROR "TORCH_CUDA_ARCH_LIST entry '${entry}' is not of the form 8.6, 9.0a or "
                          "12.0+PTX (the whole list: '${requested}')")
    endif()
    set(sm "${CMAKE_MATCH_1}${CMAKE_MATCH_2}${CMAKE_MATCH_3}")
    if(CMAKE_MATCH_4)
      list(APPEND architectures "${sm}")
    else()
      list(APPEND architectures "${sm}-real")
    endif()
    list(APPEND normalised "${entry}")
  endforeach()
  if(NOT architectures)
    message(FATAL_ERROR "TORCH_CUDA_ARCH_LIST is empty")
  endif()
  message(STATUS "my_ops: TORCH_CUDA_ARCH_LIST=${normalised} -> CUDA_ARCHITECTURES=${architectures}")
  set(${out_list} "${normalised}" PARENT_SCOPE)
  set(${out_cmake} "${architectures}" PARENT_SCOPE)
endfunction()
