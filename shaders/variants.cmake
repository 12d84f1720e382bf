# Every shader variant vkvit embeds: vkvit_shader(<name> <source> [DEFINES ...]).
# Names spell out op, stage, types and feature: <op>[_<stage>]_<srctype>_<dsttype>[_<feature>].

vkvit_shader(gemm_f32_f32 gemm.comp)                # shared-memory tiles (GPUs)
vkvit_shader(gemm_f32_f32_w16 gemm.comp DEFINES B_F16=1)      # fp16 weights (fp16 sessions)
vkvit_shader(gemm_cpu_f32_f32 gemm_cpu.comp)        # no shared memory, lanes own columns (llvmpipe)
vkvit_shader(gemm_cpu_f32_f32_w16 gemm_cpu.comp DEFINES B_F16=1)
vkvit_shader(add_f32_f32 add.comp)
vkvit_shader(norm_f32_f32 norm.comp)
vkvit_shader(patchify_f32_f32 patchify.comp)
vkvit_shader(copy_rows_f32_f32 copy_rows.comp)
vkvit_shader(mean_rows_f32_f32 mean_rows.comp)
vkvit_shader(grn_stats_f32 grn_stats.comp)
vkvit_shader(grn_apply_f32_f32 grn_apply.comp)
vkvit_shader(attention_f32_f32 attention.comp DEFINES SUBGROUP=0)
vkvit_shader(attention_f32_f32_subgroup attention.comp DEFINES SUBGROUP=1)
vkvit_shader(attention_prep_f32_f32 attention_prep.comp)   # unfused attention (CPU devices): q~, k~, vT
vkvit_shader(softmax_rows_f32_f32 softmax_rows.comp)
vkvit_shader(glu_f32_f32 glu.comp)                   # glu / swiglu gating between MLP layer1 and layer2 (resnet)
