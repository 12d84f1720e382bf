// SPDX-License-Identifier: Apache-2.0
/* What a specialised compute shader asks of a device, read from its SPIR-V (spirv_limits.h). */
#include "vk/spirv_limits.h"

#include <stdlib.h>
#include <string.h>

enum {
    OP_EXECUTION_MODE = 16, OP_TYPE_BOOL = 20, OP_TYPE_INT = 21, OP_TYPE_FLOAT = 22, OP_TYPE_VECTOR = 23,
    OP_TYPE_MATRIX = 24, OP_TYPE_ARRAY = 28, OP_TYPE_STRUCT = 30, OP_TYPE_POINTER = 32, OP_CONSTANT_TRUE = 41,
    OP_CONSTANT_FALSE = 42, OP_CONSTANT = 43, OP_CONSTANT_COMPOSITE = 44, OP_SPEC_CONSTANT_TRUE = 48,
    OP_SPEC_CONSTANT_FALSE = 49, OP_SPEC_CONSTANT = 50, OP_SPEC_CONSTANT_COMPOSITE = 51, OP_SPEC_CONSTANT_OP = 52,
    OP_VARIABLE = 59, OP_DECORATE = 71, OP_EXECUTION_MODE_ID = 331,
    EM_LOCAL_SIZE = 17, EM_LOCAL_SIZE_ID = 38, DEC_SPEC_ID = 1, DEC_BLOCK = 2, DEC_BUFFER_BLOCK = 3,
    DEC_BUILTIN = 11, DEC_BINDING = 33, BUILTIN_WORKGROUP_SIZE = 25, SC_UNIFORM = 2, SC_WORKGROUP = 4, SC_STORAGE_BUFFER = 12,
};

/* Per id: its value if it is a (spec) constant, its size in bytes if it is a type. */
typedef struct id_info {
    uint64_t value;
    uint32_t bytes;                         /* types: size; 0 unknown */
    uint32_t composite_at;                  /* word index of an OpConstantComposite / OpSpecConstantComposite */
    uint32_t spec_id;                       /* SpecId decoration + 1 (0: none) */
    uint32_t pointee, storage;              /* OpTypePointer */
    uint32_t binding;                       /* Binding decoration + 1 (0: none) */
    bool known, block, buffer_block, workgroup_size;
} id_info;

/* One SpecConstantOp: the integer and logical operations glslang emits for array lengths and workgroup sizes. */
static bool spec_op(uint32_t op, const uint64_t *x, uint32_t n, uint64_t *out) {
    const uint64_t a = n > 0 ? x[0] : 0, b = n > 1 ? x[1] : 0, c = n > 2 ? x[2] : 0;
    switch (op) {
    case 128: *out = a + b; return true;                          /* OpIAdd */
    case 130: *out = a - b; return true;                          /* OpISub */
    case 132: *out = a * b; return true;                          /* OpIMul */
    case 134: case 135: if (!b) return false; *out = a / b; return true; /* OpUDiv, OpSDiv (non-negative here) */
    case 137: case 138: case 139: if (!b) return false; *out = a % b; return true; /* OpUMod, OpSRem, OpSMod */
    case 166: *out = a || b; return true;                         /* OpLogicalOr */
    case 167: *out = a && b; return true;                         /* OpLogicalAnd */
    case 168: *out = !a; return true;                             /* OpLogicalNot */
    case 164: case 170: *out = a == b; return true;               /* OpLogicalEqual, OpIEqual */
    case 165: case 171: *out = a != b; return true;               /* OpLogicalNotEqual, OpINotEqual */
    case 172: case 173: *out = a > b; return true;                /* OpUGreaterThan, OpSGreaterThan */
    case 174: case 175: *out = a >= b; return true;
    case 176: case 177: *out = a < b; return true;
    case 178: case 179: *out = a <= b; return true;
    case 169: *out = a ? b : c; return true;                      /* OpSelect */
    case 194: case 195: *out = b < 64 ? a >> b : 0; return true;  /* OpShiftRightLogical / Arithmetic */
    case 196: *out = b < 64 ? a << b : 0; return true;            /* OpShiftLeftLogical */
    case 197: *out = a | b; return true;
    case 198: *out = a ^ b; return true;
    case 199: *out = a & b; return true;
    case 113: case 114: *out = a; return true;                    /* OpUConvert, OpSConvert */
    default: return false;
    }
}

bool vkvit__shader_footprint(vkvit_shader_id shader, const uint32_t *spec, uint32_t n_spec, vkvit__footprint *out) {
    memset(out, 0, sizeof *out);
    if ((unsigned)shader >= VKVIT_SHADER_COUNT) return false;
    const uint32_t *w = vkvit_spirv_table[shader].words, n = vkvit_spirv_table[shader].n_words;
    if (n < 5) return false;
    const uint32_t bound = w[3];
    id_info *id = calloc(bound ? bound : 1, sizeof *id);
    if (!id) return false;
    bool ok = true;
    uint32_t local[3] = {1, 1, 1}, local_id[3] = {0, 0, 0}, wg_builtin = 0;
    uint64_t bindings_seen = 0;             /* storage-buffer bindings 0..63 counted so far (set 0 only: vkvit's) */
    /* Pass 1: decorations and execution modes (they come before the types and constants). */
    for (uint32_t i = 5; i < n;) {
        const uint32_t len = w[i] >> 16, op = w[i] & 0xffff;
        if (len == 0 || i + len > n) { ok = false; break; }
        const uint32_t *a = w + i + 1;
        if (op == OP_DECORATE && len >= 3 && a[0] < bound) {
            if (a[1] == DEC_SPEC_ID && len >= 4) id[a[0]].spec_id = a[2] + 1;
            else if (a[1] == DEC_BINDING && len >= 4) id[a[0]].binding = a[2] + 1;
            else if (a[1] == DEC_BLOCK) id[a[0]].block = true;
            else if (a[1] == DEC_BUFFER_BLOCK) id[a[0]].buffer_block = true;
            else if (a[1] == DEC_BUILTIN && len >= 4 && a[2] == BUILTIN_WORKGROUP_SIZE) wg_builtin = a[0];
        } else if (op == OP_EXECUTION_MODE && len >= 6 && a[1] == EM_LOCAL_SIZE) {
            memcpy(local, a + 2, sizeof local);
        } else if (op == OP_EXECUTION_MODE_ID && len >= 6 && a[1] == EM_LOCAL_SIZE_ID) {
            memcpy(local_id, a + 2, sizeof local_id);
        }
        i += len;
    }
    /* Pass 2: types, constants with the specialisation applied, variables, in module order. */
    for (uint32_t i = 5; ok && i < n;) {
        const uint32_t len = w[i] >> 16, op = w[i] & 0xffff;
        const uint32_t *a = w + i + 1;
        const uint32_t res = len >= 3 ? a[1] : 0; /* result id of constants (after the type) */
        switch (op) {
        case OP_TYPE_BOOL: if (len >= 2 && a[0] < bound) id[a[0]].bytes = 4; break;
        case OP_TYPE_INT:
        case OP_TYPE_FLOAT: if (len >= 3 && a[0] < bound) id[a[0]].bytes = a[1] / 8; break;
        case OP_TYPE_VECTOR:
        case OP_TYPE_MATRIX:
            if (len >= 4 && a[0] < bound && a[1] < bound) /* a 3-vector takes a 4-vector's room (conservative) */
                id[a[0]].bytes = id[a[1]].bytes * (a[2] == 3 ? 4 : a[2]);
            break;
        case OP_TYPE_ARRAY:
            if (len >= 4 && a[0] < bound && a[1] < bound && a[2] < bound && id[a[2]].known)
                id[a[0]].bytes = (uint32_t)VKVIT_MIN((uint64_t)id[a[1]].bytes * id[a[2]].value, 0xffffffffull);
            break;
        case OP_TYPE_STRUCT:
            if (len >= 2 && a[0] < bound) {
                uint64_t sum = 0;
                bool sized = true;
                for (uint32_t m = 1; m + 1 < len; m++) {
                    sized &= a[m] < bound && id[a[m]].bytes;
                    if (a[m] < bound) sum += id[a[m]].bytes;
                }
                id[a[0]].bytes = sized ? (uint32_t)VKVIT_MIN(sum, 0xffffffffull) : 0;
            }
            break;
        case OP_TYPE_POINTER:
            if (len >= 4 && a[0] < bound) id[a[0]].storage = a[1], id[a[0]].pointee = a[2];
            break;
        case OP_CONSTANT_TRUE:
        case OP_CONSTANT_FALSE:
        case OP_SPEC_CONSTANT_TRUE:
        case OP_SPEC_CONSTANT_FALSE:
            if (res < bound) {
                bool v = op == OP_CONSTANT_TRUE || op == OP_SPEC_CONSTANT_TRUE;
                const uint32_t s = id[res].spec_id;
                if ((op == OP_SPEC_CONSTANT_TRUE || op == OP_SPEC_CONSTANT_FALSE) && s && s - 1 < n_spec)
                    v = spec[s - 1] != 0;
                id[res].value = v, id[res].known = true;
            }
            break;
        case OP_CONSTANT:
        case OP_SPEC_CONSTANT:
            if (len >= 4 && res < bound) {
                uint64_t v = a[2];
                const uint32_t s = id[res].spec_id;
                if (op == OP_SPEC_CONSTANT && s && s - 1 < n_spec) v = spec[s - 1];
                id[res].value = v, id[res].known = true;
            }
            break;
        case OP_CONSTANT_COMPOSITE:
        case OP_SPEC_CONSTANT_COMPOSITE:
            if (res < bound) id[res].composite_at = i, id[res].known = true;
            break;
        case OP_SPEC_CONSTANT_OP:
            if (len >= 4 && res < bound) {
                uint64_t x[3] = {0, 0, 0};
                const uint32_t n_args = VKVIT_MIN(len - 4, 3u);
                bool args = true;
                for (uint32_t k = 0; k < n_args; k++) {
                    const uint32_t arg = a[3 + k];
                    if (a[2] == 81 && k == 1) { x[k] = arg; continue; } /* OpCompositeExtract: a literal index */
                    args &= arg < bound && id[arg].known;
                    if (arg < bound) x[k] = id[arg].value;
                }
                if (a[2] == 81 && args && a[3] < bound && id[a[3]].composite_at) { /* gl_WorkGroupSize.x and such */
                    const uint32_t at = id[a[3]].composite_at, parts = (w[at] >> 16) - 3, comp = a[4];
                    const uint32_t part = comp < parts ? w[at + 3 + comp] : bound;
                    if (part < bound && id[part].known) id[res].value = id[part].value, id[res].known = true;
                } else if (args) {
                    id[res].known = spec_op(a[2], x, n_args, &id[res].value);
                }
            }
            break;
        case OP_VARIABLE:
            if (len >= 4 && a[0] < bound && a[1] < bound) {
                const id_info *ptr = &id[a[0]];
                const uint32_t sc = a[2], pointee = ptr->pointee < bound ? ptr->pointee : 0;
                if (sc == SC_WORKGROUP) {
                    if (!pointee || !id[pointee].bytes) ok = false;
                    else out->shared_bytes += id[pointee].bytes;
                } else if (sc == SC_STORAGE_BUFFER || (sc == SC_UNIFORM && pointee && id[pointee].buffer_block)) {
                    /* one descriptor per binding: several views of one binding (fp32 and fp16) count once */
                    const uint32_t b = id[a[1]].binding;
                    const bool seen = b && b <= 64 && (bindings_seen >> (b - 1) & 1u);
                    if (b && b <= 64) bindings_seen |= (uint64_t)1 << (b - 1);
                    if (!seen) out->storage_buffers++;
                }
            }
            break;
        default: break;
        }
        i += len;
    }
    /* The workgroup size: the WorkgroupSize built-in (a composite of spec constants: local_size_x_id) wins over the
     * execution mode, as in Vulkan; else LocalSizeId, else LocalSize. */
    if (ok && wg_builtin && wg_builtin < bound && id[wg_builtin].composite_at) {
        const uint32_t at = id[wg_builtin].composite_at;
        for (int d = 0; d < 3 && ok; d++) {
            const uint32_t part = (w[at] >> 16) > 3u + d ? w[at + 3 + d] : bound;
            ok = part < bound && id[part].known;
            if (ok) local[d] = (uint32_t)id[part].value;
        }
    } else if (ok && local_id[0]) {
        for (int d = 0; d < 3 && ok; d++) {
            ok = local_id[d] < bound && id[local_id[d]].known;
            if (ok) local[d] = (uint32_t)id[local_id[d]].value;
        }
    }
    free(id);
    if (!ok) return false;
    memcpy(out->local_size, local, sizeof local);
    out->invocations = (uint64_t)local[0] * local[1] * local[2];
    return true;
}
