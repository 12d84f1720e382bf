// SPDX-License-Identifier: Apache-2.0
/* src/vk/descriptors.h — descriptor sets that vkvit__descriptor_set_create (vk/vk.h) does not make whole: sets
 * some of whose bindings are written later, per recording, with a resource of the host's (the pre-processing's
 * host VkImages and VkBuffers through vkvit_session_record_ex; src/graph/record.c, vkvit__swap_sets). The pools and
 * sets are counted in the ctx's counters like every other (vkvit__counters). Implemented in pipeline.c. */
#ifndef VKVIT_VK_DESCRIPTORS_H
#define VKVIT_VK_DESCRIPTORS_H

#include "vk/vk.h"

/* vkvit__descriptors_create with room for `sampled_images` VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE descriptors besides. */
vkvit_result vkvit__descriptors_create_with_images(vkvit_ctx *ctx, uint32_t max_sets, uint32_t sampled_images,
                                                   vkvit__descriptors *out);
/* vkvit__descriptor_set_create, except that a binding whose bindings[i].buf is NULL is left unwritten (the caller
 * writes it with the functions below before a dispatch uses the set), and that `k` may have sampled-image bindings
 * (theirs must be NULL). */
vkvit_result vkvit__descriptor_set_create_partial(vkvit_ctx *ctx, vkvit__descriptors *d, const vkvit__kernel *k,
                                                  const vkvit__binding *bindings, VkDescriptorSet *out);
/* Points storage-buffer binding `binding` of `set` at [offset, offset + range) of `buffer` (no work using the set
 * may be in flight, nor a command buffer recorded with it be submitted again: Vulkan's rule for updated sets). */
void vkvit__descriptor_write_buffer(vkvit_ctx *ctx, VkDescriptorSet set, uint32_t binding, VkBuffer buffer,
                                    VkDeviceSize offset, VkDeviceSize range);
/* The same for a sampled-image binding (texelFetch, no sampler). */
void vkvit__descriptor_write_image(vkvit_ctx *ctx, VkDescriptorSet set, uint32_t binding, VkImageView view,
                                   VkImageLayout layout);

#endif /* VKVIT_VK_DESCRIPTORS_H */
