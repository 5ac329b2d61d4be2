# The build-info record installed as my_ops/_build_info.json. The import
# guard, the arch guard, `python -m my_ops`, wheel verification and the index
# generator all read this one record.
function(my_ops_write_build_info)
  # ARCH_LIST is a CMake list ("7.5;8.0"), hence a multi-value argument.
  # MATRIX_INFO: the JSON of `build_support/matrix.py build-info --torch TORCH_VERSION`.
  cmake_parse_arguments(ARG "" "OUTPUT;TORCH_VERSION;TORCH_CUDA;CUDA_VERSION;CXX11_ABI;MATRIX_INFO" "ARCH_LIST" ${ARGN})
  list(JOIN ARG_ARCH_LIST ";" arch_list)
  if(DEFINED SKBUILD_PROJECT_VERSION_FULL)
    set(version "${SKBUILD_PROJECT_VERSION_FULL}")
  else()
    set(version "0+unknown")
  endif()
  my_ops_version_label(label)

  # Commit: MY_OPS_BUILD_COMMIT (CI), else the checkout's HEAD, else "unknown" (an sdist).
  set(commit "$ENV{MY_OPS_BUILD_COMMIT}")
  set(commit_time "")
  find_package(Git QUIET)
  if(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
    execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --verify --quiet HEAD
      WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}" OUTPUT_VARIABLE head RESULT_VARIABLE no_head
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(no_head EQUAL 0)  # a checkout with at least one commit
      if(NOT commit)
        set(commit "${head}")
      endif()
      execute_process(COMMAND "${GIT_EXECUTABLE}" log -1 --format=%ct
        WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}" OUTPUT_VARIABLE commit_time
        OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    endif()
  endif()
  if(NOT commit)
    set(commit "unknown")
  endif()
  # Build date: SOURCE_DATE_EPOCH, else the commit's time, so rebuilding a
  # commit gives the same record; else now.
  if(NOT DEFINED ENV{SOURCE_DATE_EPOCH} AND commit_time)
    set(ENV{SOURCE_DATE_EPOCH} "${commit_time}")
  endif()
  string(TIMESTAMP build_date "%Y-%m-%dT%H:%M:%SZ" UTC)

  if(ARG_CXX11_ABI)
    set(abi true)
  else()
    set(abi false)
  endif()
  set(json "{}")
  foreach(pair IN ITEMS
      "version=${version}" "label=${label}" "torch_version=${ARG_TORCH_VERSION}"
      "torch_cuda=${ARG_TORCH_CUDA}" "cuda_version=${ARG_CUDA_VERSION}"
      "arch_list=${arch_list}" "build_date=${build_date}" "commit=${commit}"
      "platform=${CMAKE_SYSTEM_NAME}-${CMAKE_SYSTEM_PROCESSOR}")
    string(FIND "${pair}" "=" eq)
    string(SUBSTRING "${pair}" 0 ${eq} key)
    math(EXPR start "${eq} + 1")
    string(SUBSTRING "${pair}" ${start} -1 value)
    string(JSON json SET "${json}" "${key}" "\"${value}\"")
  endforeach()
  string(JSON json SET "${json}" "cxx11_abi" "${abi}")
  # The ABI family, its torch pin, and where the matching wheels are published
  # (for the install commands the import guard prints).
  foreach(key IN ITEMS abi torch_requirement index_url)
    string(JSON value GET "${ARG_MATRIX_INFO}" ${key})
    string(JSON json SET "${json}" "${key}" "\"${value}\"")
  endforeach()
  string(JSON pairs GET "${ARG_MATRIX_INFO}" supported_pairs)
  string(JSON json SET "${json}" "supported_pairs" "${pairs}")
  string(JSON json SET "${json}" "schema" "2")
  file(WRITE "${ARG_OUTPUT}" "${json}\n")
endfunction()
