# SPDX-License-Identifier: Apache-2.0
# Every shader variant vkvit embeds: vkvit_shader(<name> <source> [DEFINES ...]).
# Names spell out op, stage, types and feature: <op>[_<stage>]_<srctype>_<dsttype>[_<feature>].

vkvit_shader(gemm_f32_f32 gemm.comp)                # shared-memory tiles (GPUs)
vkvit_shader(gemm_f32_f32_w16 gemm.comp DEFINES B_F16=1)      # fp16 weights (fp16 sessions)
# packed bindings (policy.packed_bindings: devices with 4 storage buffers per stage): A, B, bias, D, scale and
# residual through the arena and the weights buffer (shaders/packed.glsl)
vkvit_shader(gemm_f32_f32_packed gemm.comp DEFINES PACKED=1)
vkvit_shader(gemm_cpu_f32_f32 gemm_cpu.comp)        # no shared memory, lanes own columns (llvmpipe)
vkvit_shader(gemm_cpu_f32_f32_w16 gemm_cpu.comp DEFINES B_F16=1)
# fp16 arithmetic (fp16-math sessions; shaderFloat16 + storageBuffer16BitAccess): fp16 weights, A converted to fp16 at
# load, packed f16vec2 FMAs summed in fp16 over 16 k, then in fp32; fp32 epilogue. GL_EXT_shader_explicit_arithmetic_
# types_float16 is enabled in these two variants only (glslang >= 11 compiles it; Debian 12 ships 12).
vkvit_shader(gemm_f32_f32_f16 gemm.comp DEFINES F16_MATH=1)
vkvit_shader(gemm_cpu_f32_f32_f16 gemm_cpu.comp DEFINES F16_MATH=1)
# CPU devices whose texel buffers cover their storage buffers (caps.texel_reads: lavapipe): A and B read as uniform
# texel buffers (RGBA32F / RGBA16F), which llvmpipe gathers in SIMD registers instead of a per-lane load loop.
vkvit_shader(gemm_cpu_f32_f32_texel gemm_cpu.comp DEFINES TEXEL=1)
vkvit_shader(gemm_cpu_f32_f32_w16_texel gemm_cpu.comp DEFINES B_F16=1 TEXEL=1)
vkvit_shader(gemm_cpu_f32_f32_f16_texel gemm_cpu.comp DEFINES F16_MATH=1 TEXEL=1)
# The fp32 texel kernel with 8 columns per lane (the tile gemm.c's cost model picks for ViT-5's linears and the
# attention's P V, among others), 64- and 32-k chunks, vec4
# loads, pair stores and no causal skipping fixed at build time and every loop unrolled by spirv-opt (UNROLL):
# lavapipe creates these pipelines 2-3x faster than the generic shader's (gemm_cpu.comp header).
if(VKVIT_HAVE_GEMM_CPU_UNROLLED)
  vkvit_shader(gemm_cpu_f32_f32_texel_t8k2 gemm_cpu.comp UNROLL DEFINES TEXEL=1 GEMM_TN=8 GEMM_KCH=2)
  vkvit_shader(gemm_cpu_f32_f32_texel_t8k1 gemm_cpu.comp UNROLL DEFINES TEXEL=1 GEMM_TN=8 GEMM_KCH=1)
  # ... and with fp16 weights (fp16 sessions on CPU devices)
  vkvit_shader(gemm_cpu_f32_f32_w16_texel_t8k2 gemm_cpu.comp UNROLL DEFINES B_F16=1 TEXEL=1 GEMM_TN=8 GEMM_KCH=2)
  vkvit_shader(gemm_cpu_f32_f32_w16_texel_t8k1 gemm_cpu.comp UNROLL DEFINES B_F16=1 TEXEL=1 GEMM_TN=8 GEMM_KCH=1)
endif()
# Cooperative matrices for fp16-math sessions (fp16 weights, A rounded to fp16, fp32 accumulation; gemm_coopmat.comp):
# the GL_NV_cooperative_matrix and GL_KHR_cooperative_matrix kernels where the configured glslang compiles them
# (cmake/coopmat.cmake), and the same tiling with plain-arithmetic matrix products (VKVIT_COOPMAT_EMULATE=1: tests
# it on any device with shaderFloat16).
# Three tiles each: 32 x 32 and 64 x 64 (GEMMs of few rows) and 128 x 128 (t128: enough tiles to fill a GPU). The
# emulated 32 and 128 tiles drop the shared row pad (SA_PAD=0) to fit lavapipe's 32 KiB of shared memory.
vkvit_shader(gemm_coopmat_emu_t32_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_NV=0 TILE=32 SA_PAD=0)
vkvit_shader(gemm_coopmat_emu_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_NV=0 TILE=64)
vkvit_shader(gemm_coopmat_emu_t128_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_NV=0 TILE=128 SA_PAD=0)
# ... and on Intel's M = 8 fragments (8 x 16 x 16: Xe2; 8 x 8 x 16: Xe-HPG), which the intel-xe profile reaches
foreach(shape "m8n16;FM=8 FN=16 FK=16" "m8n8;FM=8 FN=8 FK=16")
  list(GET shape 0 tag)
  list(GET shape 1 defs)
  separate_arguments(defs)
  vkvit_shader(gemm_coopmat_emu_${tag}_t32_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_NV=0 TILE=32 SA_PAD=0 ${defs})
  vkvit_shader(gemm_coopmat_emu_${tag}_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_NV=0 TILE=64 ${defs})
  vkvit_shader(gemm_coopmat_emu_${tag}_t128_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_NV=0 TILE=128 SA_PAD=0 ${defs})
endforeach()
if(VKVIT_HAVE_NV_COOPMAT)
  vkvit_shader(gemm_coopmat_nv_t32_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_NV=1 TILE=32)
  vkvit_shader(gemm_coopmat_nv_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_NV=1 TILE=64)
  vkvit_shader(gemm_coopmat_nv_t128_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_NV=1 TILE=128)
endif()
if(VKVIT_HAVE_KHR_COOPMAT)                      # glslang >= 13 (not Debian 12's): AMD, Intel, mobile, NVIDIA
  vkvit_shader(gemm_coopmat_khr_t32_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_KHR=1 TILE=32)
  vkvit_shader(gemm_coopmat_khr_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_KHR=1 TILE=64)
  vkvit_shader(gemm_coopmat_khr_t128_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_KHR=1 TILE=128)
  # ... on 8 x 8 x 8 fragments, for devices that list no 16 x 16 x 16 shape (lavapipe: 8 x 8 at subgroups of 8)
  vkvit_shader(gemm_coopmat_khr8_t32_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_KHR=1 COOPMAT_FRAG=8 TILE=32)
  vkvit_shader(gemm_coopmat_khr8_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_KHR=1 COOPMAT_FRAG=8 TILE=64)
  vkvit_shader(gemm_coopmat_khr8_t128_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_KHR=1 COOPMAT_FRAG=8 TILE=128)
  # ... on Intel's M = 8 shapes: 8 x 16 x 16 (Xe2, subgroups of 16), 8 x 8 x 16 (Xe-HPG, subgroups of 8)
  foreach(shape "m8n16;FM=8 FN=16 FK=16" "m8n8;FM=8 FN=8 FK=16")
    list(GET shape 0 tag)
    list(GET shape 1 defs)
    separate_arguments(defs)
    vkvit_shader(gemm_coopmat_khr_${tag}_t32_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_KHR=1 TILE=32 ${defs})
    vkvit_shader(gemm_coopmat_khr_${tag}_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_KHR=1 TILE=64 ${defs})
    vkvit_shader(gemm_coopmat_khr_${tag}_t128_f32_f32_f16 gemm_coopmat.comp DEFINES COOPMAT_KHR=1 TILE=128 ${defs})
  endforeach()
endif()
# GL_NV_cooperative_matrix2 (glslang 15, SPIR-V 1.6): B and D through clamped tensor layouts, the epilogue per element
# (gemm_coopmat2.comp), 64 x 64 tiles; chosen with VKVIT_COOPMAT_NV2=1 where the device has tensor addressing.
if(VKVIT_HAVE_NV_COOPMAT2)                       # its probe compiles GL_KHR_cooperative_matrix too
  vkvit_shader(gemm_coopmat2_f32_f32_f16 gemm_coopmat2.comp TARGET_ENV vulkan1.3 DEFINES TILE=64)
endif()
vkvit_shader(norm_f32_f32 norm.comp)
vkvit_shader(norm_f32_f32_subgroup norm.comp DEFINES SUBGROUP=1)   # reductions: subgroupAdd (shaders/reduce.glsl)
vkvit_shader(norm_f32_f32_texel norm.comp DEFINES TEXEL=1)          # x, weight, bias as texel buffers (caps.texel_reads)
vkvit_shader(norm_f32_f32_subgroup_texel norm.comp DEFINES SUBGROUP=1 TEXEL=1)
vkvit_shader(patchify_f32_f32 patchify.comp)
vkvit_shader(copy_rows_f32_f32 copy_rows.comp)
vkvit_shader(mean_rows_f32_f32 mean_rows.comp)
vkvit_shader(grn_stats_f32 grn_stats.comp)
vkvit_shader(grn_stats_f32_subgroup grn_stats.comp DEFINES SUBGROUP=1)
vkvit_shader(grn_apply_f32_f32 grn_apply.comp)
vkvit_shader(grn_apply_f32_f32_packed grn_apply.comp DEFINES PACKED=1)   # packed bindings (shaders/packed.glsl)
vkvit_shader(attention_f32_f32 attention.comp DEFINES SUBGROUP=0)
vkvit_shader(attention_f32_f32_subgroup attention.comp DEFINES SUBGROUP=1)
vkvit_shader(attention_f32_f32_packed attention.comp DEFINES SUBGROUP=0 PACKED=1)  # packed bindings (shaders/packed.glsl)
vkvit_shader(attention_prep_f32_f32 attention_prep.comp)   # unfused attention (CPU devices): q~, k~, vT
vkvit_shader(attention_prep_f32_f32_texel attention_prep.comp DEFINES TEXEL=1)  # inputs as texel buffers
vkvit_shader(attention_prep_f32_f32_packed attention_prep.comp DEFINES PACKED=1)  # packed bindings (packed.glsl)
# ... with k~ and vT in fp16, for the attention GEMMs of fp16-math sessions on cooperative matrices
vkvit_shader(attention_prep_f32_f32_kv16 attention_prep.comp DEFINES KV_F16=1)
vkvit_shader(attention_prep_f32_f32_kv16_texel attention_prep.comp DEFINES KV_F16=1 TEXEL=1)
vkvit_shader(softmax_rows_f32_f32 softmax_rows.comp)
vkvit_shader(softmax_rows_f32_f32_subgroup softmax_rows.comp DEFINES SUBGROUP=1)
vkvit_shader(softmax_rows_f32_f32_texel softmax_rows.comp DEFINES TEXEL=1)      # reads through a texel view
vkvit_shader(softmax_rows_f32_f32_subgroup_texel softmax_rows.comp DEFINES SUBGROUP=1 TEXEL=1)
vkvit_shader(glu_f32_f32 glu.comp)                   # glu / swiglu gating between MLP layer1 and layer2 (resnet)
vkvit_shader(mlstm_prep_f32_f32 mlstm_prep.comp)     # ViL: causal conv1d (mirrored for reverse blocks) + SiLU + q/k/v
vkvit_shader(mlstm_prep_f32_f32_texel mlstm_prep.comp DEFINES TEXEL=1)
vkvit_shader(mlstm_prep_f32_f32_packed mlstm_prep.comp DEFINES PACKED=1)  # packed bindings (shaders/packed.glsl)
vkvit_shader(mlstm_prep_vt_f32_f32 mlstm_prep.comp DEFINES VT_OUT=1)  # ... with v transposed (the quadratic form)
vkvit_shader(mlstm_prep_vt_f32_f32_packed mlstm_prep.comp DEFINES VT_OUT=1 PACKED=1)
vkvit_shader(mlstm_prep_vt_f32_f32_texel mlstm_prep.comp DEFINES VT_OUT=1 TEXEL=1)
vkvit_shader(mlstm_chunk_f32 mlstm_chunk.comp)       # ViL: chunked scan phase 1, per-chunk state summaries
vkvit_shader(mlstm_chunk_f32_texel mlstm_chunk.comp DEFINES TEXEL=1)
vkvit_shader(mlstm_carry_f32 mlstm_carry.comp)       # ViL: chunked scan phase 2, sequential combine over chunks
vkvit_shader(mlstm_carry_f32_texel mlstm_carry.comp DEFINES TEXEL=1)
vkvit_shader(mlstm_inter_f32 mlstm_inter.comp)       # ViL: chunked scan phase 3, carried part C^T q of the outputs
vkvit_shader(mlstm_inter_f32_texel mlstm_inter.comp DEFINES TEXEL=1)
vkvit_shader(mlstm_scan_f32_f32 mlstm_scan.comp)     # ViL: chunked scan phase 4, outputs (docs/math.md 7.3), seed/NX-AI
vkvit_shader(mlstm_scan_f32_f32_texel mlstm_scan.comp DEFINES TEXEL=1)
vkvit_shader(mlstm_par_prep_f32 mlstm_par_prep.comp)  # ViL, quadratic form (CPU devices, S <= 256): vT, gate cumsum
vkvit_shader(mlstm_par_prep_f32_texel mlstm_par_prep.comp DEFINES TEXEL=1)
vkvit_shader(mlstm_decay_f32 mlstm_decay.comp)       # ViL, quadratic form: scores -> normalised decay weights
vkvit_shader(mlstm_decay_f32_texel mlstm_decay.comp DEFINES TEXEL=1)
vkvit_shader(mlstm_gn_stats_f32 mlstm_gn_stats.comp) # ViL seed: sequence-wide GroupNorm statistics
vkvit_shader(mlstm_gn_stats_f32_subgroup mlstm_gn_stats.comp DEFINES SUBGROUP=1)
vkvit_shader(mlstm_gn_stats_f32_texel mlstm_gn_stats.comp DEFINES TEXEL=1)
vkvit_shader(mlstm_gn_stats_f32_subgroup_texel mlstm_gn_stats.comp DEFINES SUBGROUP=1 TEXEL=1)
vkvit_shader(mlstm_gn_stats_lane_f32_texel mlstm_gn_stats.comp DEFINES LANE_PER_GROUP=1 TEXEL=1) # a lane per group
vkvit_shader(mlstm_out_f32_f32 mlstm_out.comp)       # ViL: (outnorm(h) + skip * a) * silu(z)
vkvit_shader(mlstm_out_f32_f32_texel mlstm_out.comp DEFINES TEXEL=1)
vkvit_shader(mlstm_out_f32_f32_packed mlstm_out.comp DEFINES PACKED=1)    # packed bindings (shaders/packed.glsl)
vkvit_shader(preprocess_h_u8_f32 preprocess_h.comp DEFINES SOURCE_IMAGE=0)        # image pre-processing pass 1:
vkvit_shader(preprocess_h_u8_f32_image preprocess_h.comp DEFINES SOURCE_IMAGE=1)  # buffer / sampled VkImage source
vkvit_shader(preprocess_v_f32_f32 preprocess_v.comp)  # pass 2: vertical + crop + normalise into the input
vkvit_shader(topk_f32_u32 topk.comp)                 # softmax + top-K readout after the classifier head
vkvit_shader(topk_f32_u32_subgroup topk.comp DEFINES SUBGROUP=1)
