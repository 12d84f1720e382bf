// SPDX-License-Identifier: Apache-2.0
/* src/ops — one file per kernel family. Each owns the one C mirror of its shaders' push-constant blocks, its kernel
 * descriptions, its variant and tile choice (from the ctx's kernel policy, src/policy/policy.h, and the device's facts) and its graph-node
 * builders: the bridge between modules (which think in tensors and shapes) and shaders. Each builder adds one node
 * (or a few) to the graph and returns the output tensor, or VKVIT_NONE after a (sticky) graph error. Modules include
 * this header and never touch Vulkan.
 *
 *   gemm.h       GEMM + fused epilogues (bias, activation, LayerScale, residual); linear layers
 *   norm.h       RMSNorm / LayerNorm / GroupNorm over rows
 *   attention.h  multi-head attention with QK-norm + RoPE (fused flash kernel, or prep + GEMM + row softmax)
 *   mlstm.h      the Vision-LSTM cell: conv1d + q/k/v, chunked scan, GroupNorm + gate
 *   grn.h        GRN + LayerScale + residual
 *   copy.h       patchify, row copies, row means
 *   glu.h        glu / swiglu
 *   rope.h       RoPE pairing (the tables are built by src/model/rope.c) */
#ifndef VKVIT_OPS_OPS_H
#define VKVIT_OPS_OPS_H

#include "ops/attention.h"
#include "ops/copy.h"
#include "ops/gemm.h"
#include "ops/glu.h"
#include "ops/grn.h"
#include "ops/mlstm.h"
#include "ops/norm.h"

#endif /* VKVIT_OPS_OPS_H */
