# attnviz_cuda_architectures(VERSION OUT_VAR): the CUDA architectures attnviz builds for with an
# nvcc of VERSION (CMAKE_CUDA_COMPILER_VERSION, e.g. "13.0.88"): machine code (SASS) for every
# architecture from Turing (7.5) on that this toolkit can target, plus PTX of the oldest one
# (75-virtual), which the driver compiles at start for a GPU newer than any of them.
#
#   toolkit   adds
#   11.0      75 80          (CUDA 13 still targets 7.5; it dropped everything older)
#   11.1      86
#   11.8      89 90
#   12.8      100 120        (Blackwell data-centre and consumer chips)
#
# A toolkit older than 11.0 gets 75 alone. Name the list yourself with -DCMAKE_CUDA_ARCHITECTURES
# (scripts/gpu-check.sh builds for the one GPU it finds, e.g. 90-real).
function(attnviz_cuda_architectures version out_var)
  set(archs 75-real)
  if(version VERSION_GREATER_EQUAL 11.0)
    list(APPEND archs 80-real)
  endif()
  if(version VERSION_GREATER_EQUAL 11.1)
    list(APPEND archs 86-real)
  endif()
  if(version VERSION_GREATER_EQUAL 11.8)
    list(APPEND archs 89-real 90-real)
  endif()
  if(version VERSION_GREATER_EQUAL 12.8)
    list(APPEND archs 100-real 120-real)
  endif()
  list(APPEND archs 75-virtual)
  set(${out_var} "${archs}" PARENT_SCOPE)
endfunction()
