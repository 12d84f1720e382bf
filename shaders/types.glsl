// SPDX-License-Identifier: Apache-2.0
// ---------------------------------------------------------------------------------------------------------------
// Shared vocabulary of all vkvit shaders: storage/arithmetic types, push-constant conventions.
//   A_TYPE / B_TYPE / D_TYPE  storage types of the inputs and output (float, or float16_t with fp16 storage)
//   ACC_TYPE                  accumulator type (always float: no fp16 accumulation by default)
// Every shader names its push-constant block `p` and its bindings data_a, data_b, ..., data_d.
// ---------------------------------------------------------------------------------------------------------------
#ifndef VKVIT_TYPES_GLSL
#define VKVIT_TYPES_GLSL

#extension GL_EXT_control_flow_attributes : require

#ifndef A_TYPE
#define A_TYPE float
#endif
#ifndef B_TYPE
#define B_TYPE float
#endif
#ifndef D_TYPE
#define D_TYPE float
#endif
#define ACC_TYPE float

#endif
