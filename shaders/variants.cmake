# Every shader variant vkvit embeds: vkvit_shader(<name> <source> [DEFINES ...]).
# Names spell out op, stage, types and feature: <op>[_<stage>]_<srctype>_<dsttype>[_<feature>].

vkvit_shader(gemm_f32_f32 gemm.comp)
vkvit_shader(add_f32_f32 add.comp)
