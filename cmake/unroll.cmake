# The spirv-opt unrolled CPU GEMM variants (shaders/variants.cmake, UNROLL): does the found spirv-opt run the
# recipe of shaders/unroll.cfg and unroll a constant loop with it? Probed at every configure (one tiny compile and
# optimisation), so a spirv-opt that rejects a flag of the recipe, or stops unrolling, is noticed here and not by a
# failing build or by pipelines that lavapipe creates 2-3x slower.
#
# VKVIT_UNROLL_SHADERS: AUTO (default) builds the variants when the probe passes; ON requires them (configure fails
# otherwise: CI sets it); OFF leaves them out. Sets VKVIT_HAVE_GEMM_CPU_UNROLLED (1/0) in the including scope.

set(VKVIT_UNROLL_SHADERS AUTO CACHE STRING
    "spirv-opt unrolled CPU GEMM variants (faster pipeline creation on lavapipe): AUTO, ON (required) or OFF")
set_property(CACHE VKVIT_UNROLL_SHADERS PROPERTY STRINGS AUTO ON OFF)
find_program(SPIRV_DIS spirv-dis)                                                  # spirv-tools, as spirv-opt

set(VKVIT_HAVE_GEMM_CPU_UNROLLED 0)
set(why "")
if(VKVIT_UNROLL_SHADERS STREQUAL "OFF" OR NOT VKVIT_UNROLL_SHADERS)
  set(why "VKVIT_UNROLL_SHADERS=${VKVIT_UNROLL_SHADERS}")
elseif(NOT SPIRV_OPT)
  set(why "spirv-opt not found (Debian package spirv-tools)")
else()
  set(dir ${PROJECT_BINARY_DIR}/probes)
  file(MAKE_DIRECTORY ${dir})
  execute_process(
    COMMAND ${GLSLANG_VALIDATOR} -V --target-env vulkan1.1 -o ${dir}/unroll.raw.spv
            ${PROJECT_SOURCE_DIR}/cmake/probes/unroll.comp
    RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
  if(rc EQUAL 0)
    execute_process(
      COMMAND ${SPIRV_OPT} -Oconfig=${PROJECT_SOURCE_DIR}/shaders/unroll.cfg ${dir}/unroll.raw.spv -o ${dir}/unroll.spv
      RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
  endif()
  if(NOT rc EQUAL 0 OR NOT EXISTS ${dir}/unroll.spv)
    string(STRIP "${log}" log)
    if(log STREQUAL "")
      set(log "exit status ${rc}")
    endif()
    set(why "glslang + ${SPIRV_OPT} -Oconfig=shaders/unroll.cfg failed on cmake/probes/unroll.comp: ${log}")
  else()
    set(VKVIT_HAVE_GEMM_CPU_UNROLLED 1)
    if(SPIRV_DIS)
      execute_process(COMMAND ${SPIRV_DIS} ${dir}/unroll.spv RESULT_VARIABLE rc OUTPUT_VARIABLE dis ERROR_QUIET)
      if(rc EQUAL 0 AND dis MATCHES "OpLoopMerge")
        set(VKVIT_HAVE_GEMM_CPU_UNROLLED 0)
        set(why "${SPIRV_OPT} left the probe's constant loop rolled")
      endif()
    endif()
  endif()
endif()

if(VKVIT_HAVE_GEMM_CPU_UNROLLED)
  message(STATUS "vkvit: unrolled CPU GEMM variants: ${SPIRV_OPT}")
elseif(VKVIT_UNROLL_SHADERS STREQUAL "ON")
  message(FATAL_ERROR "vkvit: VKVIT_UNROLL_SHADERS=ON, but no unrolled CPU GEMM variants can be built: ${why}. "
                      "Install spirv-tools (tools/setup.sh does), or configure with -DVKVIT_UNROLL_SHADERS=AUTO.")
else()
  message(STATUS "vkvit: no unrolled CPU GEMM variants (${why}): lavapipe creates the GEMM pipelines 2-3x slower")
endif()
