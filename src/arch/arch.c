// SPDX-License-Identifier: Apache-2.0
/* The table of architectures: one row per line of VKVIT_ARCHITECTURES (src/arch/arch.h). */
#include "arch/arch.h"

static const vkvit__arch_ops *const ROWS[VKVIT_ARCH_COUNT] = {
#define VKVIT_ARCH_ROW_(id, name) [VKVIT_ARCH_##id] = &vkvit__arch_##name,
    VKVIT_ARCHITECTURES(VKVIT_ARCH_ROW_)
#undef VKVIT_ARCH_ROW_
};

const vkvit__arch_ops *vkvit__arch_ops_of(vkvit__arch arch) {
    VKVIT_ASSERT((unsigned)arch < VKVIT_ARCH_COUNT);
    return ROWS[arch];
}
