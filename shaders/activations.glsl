// SPDX-License-Identifier: Apache-2.0
// ---------------------------------------------------------------------------------------------------------------
// Activations shared by GEMM epilogues and elementwise kernels. ACT values match vkvit__act in src/ops/gemm.h.
// ---------------------------------------------------------------------------------------------------------------
#ifndef VKVIT_ACTIVATIONS_GLSL
#define VKVIT_ACTIVATIONS_GLSL

#define ACT_NONE 0u
#define ACT_GELU 1u   // exact erf GELU (PyTorch F.gelu, approximate='none')
#define ACT_RELU 2u
#define ACT_SILU 3u

// erf with |error| < 1.5e-7 (Abramowitz & Stegun 7.1.26), odd-extended. GLSL has no erf.
float vkvit_erf(float x) {
    const float a = abs(x);
    const float t = 1.0 / (1.0 + 0.3275911 * a);
    const float poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    const float y = 1.0 - poly * exp(-a * a);
    return x < 0.0 ? -y : y;
}

float vkvit_activation(const uint act, float x) {
    if (act == ACT_GELU) return 0.5 * x * (1.0 + vkvit_erf(x * 0.70710678118654752));
    if (act == ACT_RELU) return max(x, 0.0);
    if (act == ACT_SILU) return x / (1.0 + exp(-x));
    return x;
}

#endif
