# SPDX-License-Identifier: Apache-2.0
# The spirv-opt unrolled CPU GEMM variants (shaders/variants.cmake, UNROLL): does the found spirv-opt run the
# recipe of shaders/unroll.cfg and unroll a constant loop with it? Probed at every configure (one tiny compile and
# optimisation), so a spirv-opt that rejects a flag of the recipe, or stops unrolling, is noticed here and not by a
# failing build or by pipelines that lavapipe creates 2-3x slower.
#
# VKVIT_UNROLL_SHADERS: AUTO (default) builds the variants when the probe passes; ON requires them (configure fails
# otherwise: CI sets it); OFF leaves them out. Sets VKVIT_HAVE_GEMM_CPU_UNROLLED (1/0) in the including scope.

set(doc "spirv-opt unrolled CPU GEMM variants (faster pipeline creation on lavapipe): AUTO, ON (required) or OFF")
# A build tree configured before the option had three values holds the old BOOL entry, whose ON meant "when
# spirv-opt is there": that is AUTO now.
get_property(type CACHE VKVIT_UNROLL_SHADERS PROPERTY TYPE)
if(type STREQUAL "BOOL")
  set(VKVIT_UNROLL_SHADERS AUTO CACHE STRING "${doc}" FORCE)
endif()
set(VKVIT_UNROLL_SHADERS AUTO CACHE STRING "${doc}")
set_property(CACHE VKVIT_UNROLL_SHADERS PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${VKVIT_UNROLL_SHADERS}" unroll)
if(unroll MATCHES "^(ON|TRUE|YES|Y|1)$")
  set(unroll ON)
elseif(unroll MATCHES "^(OFF|FALSE|NO|N|0)$")
  set(unroll OFF)
elseif(NOT unroll STREQUAL "AUTO")
  message(FATAL_ERROR "vkvit: VKVIT_UNROLL_SHADERS is '${VKVIT_UNROLL_SHADERS}': AUTO, ON or OFF")
endif()
find_program(SPIRV_DIS spirv-dis)                                                  # spirv-tools, as spirv-opt

set(VKVIT_HAVE_GEMM_CPU_UNROLLED 0)
set(why "")
if(unroll STREQUAL "OFF")
  set(why "VKVIT_UNROLL_SHADERS=${VKVIT_UNROLL_SHADERS}")
elseif(NOT SPIRV_OPT)
  set(why "spirv-opt not found (Debian package spirv-tools)")
else()
  set(dir ${PROJECT_BINARY_DIR}/probes)
  file(MAKE_DIRECTORY ${dir})
  file(REMOVE ${dir}/unroll.raw.spv ${dir}/unroll.spv) # no stale result from an earlier configure
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
    else()
      message(STATUS "vkvit: no spirv-dis to check that spirv-opt unrolls (test_spirv counts the loops instead)")
    endif()
  endif()
endif()

if(VKVIT_HAVE_GEMM_CPU_UNROLLED)
  message(STATUS "vkvit: unrolled CPU GEMM variants: ${SPIRV_OPT}")
elseif(unroll STREQUAL "ON")
  message(FATAL_ERROR "vkvit: VKVIT_UNROLL_SHADERS=ON, but no unrolled CPU GEMM variants can be built: ${why}. "
                      "Install spirv-tools (tools/setup.sh does), or configure with -DVKVIT_UNROLL_SHADERS=AUTO.")
else()
  message(STATUS "vkvit: no unrolled CPU GEMM variants (${why}): lavapipe creates the GEMM pipelines 2-3x slower")
endif()
