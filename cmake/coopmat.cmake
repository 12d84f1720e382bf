# SPDX-License-Identifier: Apache-2.0
# Cooperative matrix at build time: does the configured glslangValidator compile a tiny compute shader with
# GL_NV_cooperative_matrix (Debian 12's glslang 12 does), with GL_KHR_cooperative_matrix (glslang >= 13) and with
# GL_NV_cooperative_matrix2 (glslang 15)? Sets VKVIT_HAVE_NV_COOPMAT / VKVIT_HAVE_KHR_COOPMAT / VKVIT_HAVE_NV_COOPMAT2
# (ON/OFF, in the including scope) and prints the
# result. Whether a device has the extension is a run-time question (vkvit__caps in src/vk/vk.h); this only says
# whether a cooperative-matrix shader variant can be built at all.

function(vkvit_probe_glslang out_var source)
  set(env vulkan1.1)
  if(ARGC GREATER 2)
    set(env ${ARGV2})                       # the SPIR-V target: GL_NV_cooperative_matrix2 needs vulkan1.3 (SPIR-V 1.6)
  endif()
  set(spv ${PROJECT_BINARY_DIR}/probes/${source}.spv)
  file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/probes)
  execute_process(
    COMMAND ${GLSLANG_VALIDATOR} -V --target-env ${env} -o ${spv} ${PROJECT_SOURCE_DIR}/cmake/probes/${source}
    RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
  if(rc EQUAL 0 AND EXISTS ${spv})
    set(${out_var} ON PARENT_SCOPE)
  else()
    set(${out_var} OFF PARENT_SCOPE)
  endif()
endfunction()

# Probed at every configure (two tiny compiles), so an upgraded glslang at the same path is noticed.
vkvit_probe_glslang(VKVIT_HAVE_NV_COOPMAT coopmat_nv.comp)
vkvit_probe_glslang(VKVIT_HAVE_KHR_COOPMAT coopmat_khr.comp)
# GL_NV_cooperative_matrix2's tensor loads and stores (glslang 15: Debian 13), which glslang emits only as SPIR-V 1.6.
vkvit_probe_glslang(VKVIT_HAVE_NV_COOPMAT2 coopmat2_nv.comp vulkan1.3)
message(STATUS "vkvit: ${GLSLANG_VALIDATOR} compiles GL_NV_cooperative_matrix: ${VKVIT_HAVE_NV_COOPMAT}, "
               "GL_KHR_cooperative_matrix: ${VKVIT_HAVE_KHR_COOPMAT}, "
               "GL_NV_cooperative_matrix2 (SPIR-V 1.6): ${VKVIT_HAVE_NV_COOPMAT2}")

# test_spirv validates every embedded module; a spirv-val older than SPV_KHR_cooperative_matrix (Debian 12's 2023.1)
# rejects the KHR kernels' capability. VKVIT_SPIRV_VAL_KHR says whether the found one accepts the probe's module.
set(VKVIT_SPIRV_VAL_KHR OFF)
if(VKVIT_HAVE_KHR_COOPMAT AND SPIRV_VAL)
  execute_process(COMMAND ${SPIRV_VAL} --target-env vulkan1.1 ${PROJECT_BINARY_DIR}/probes/coopmat_khr.comp.spv
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(rc EQUAL 0)
    set(VKVIT_SPIRV_VAL_KHR ON)
  else()
    message(STATUS "vkvit: ${SPIRV_VAL} predates SPV_KHR_cooperative_matrix: test_spirv skips the KHR kernels "
                   "(-DSPIRV_VAL=a newer spirv-val checks them)")
  endif()
endif()
