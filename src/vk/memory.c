// SPDX-License-Identifier: Apache-2.0
/* Buffers and memory: one VkDeviceMemory per buffer (vkvit creates few, large buffers: the weights, one arena per
 * session, staging), memory-type choice per use, and staging copies between host and device. */
#include "vk/vk.h"
#include "vk/device_caps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STAGING_BYTES VKVIT_UPLOAD_WINDOW_BYTES /* uploads/downloads larger than this are split into chunks */

/* Whether host-visible device-local memory is the device's memory itself: one of its heaps is as large as the
 * largest device-local heap (unified memory, lavapipe, or a discrete GPU with resizable BAR). A discrete GPU without
 * resizable BAR has a separate 256 MiB window of VRAM there, which must not hold weights or arenas. */
static bool host_visible_vram(const VkPhysicalDeviceMemoryProperties *mp) {
    const VkMemoryPropertyFlags DLHV = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
    VkDeviceSize vram = 0, window = 0;
    for (uint32_t h = 0; h < mp->memoryHeapCount; h++)
        if (mp->memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) vram = VKVIT_MAX(vram, mp->memoryHeaps[h].size);
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++)
        if ((mp->memoryTypes[i].propertyFlags & DLHV) == DLHV)
            window = VKVIT_MAX(window, mp->memoryHeaps[mp->memoryTypes[i].heapIndex].size);
    return window && window >= vram;
}

int vkvit__memory_type_choose(const VkPhysicalDeviceMemoryProperties *mp, uint32_t bits, vkvit__mem_kind kind,
                              uint32_t rank) {
    const VkMemoryPropertyFlags DL = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, HV = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                HC = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, CA = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    const VkMemoryPropertyFlags lazy = VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT | VK_MEMORY_PROPERTY_PROTECTED_BIT;
    /* Preference classes per kind, best first, each every type that has the `want` flags and none of `avoid`, in
     * index order; `rank` takes the rank-th distinct type of the whole list (the next one to try when an
     * allocation of the better one failed). */
    typedef struct { VkMemoryPropertyFlags want, avoid; } class;
    class classes[4];
    int n = 0;
    switch (kind) {
    case VKVIT_MEM_DEVICE:
        /* Device-local; also host-visible only where that is the device's whole memory (uploads then skip the
         * staging copy), else plain device-local first, then the BAR window, then host memory. */
        if (host_visible_vram(mp)) classes[n++] = (class){DL | HV | HC, lazy};
        classes[n++] = (class){DL, lazy | HV};
        classes[n++] = (class){DL, lazy};
        classes[n++] = (class){0, lazy};
        break;
    case VKVIT_MEM_UPLOAD:
        classes[n++] = (class){HV | HC, lazy | CA};
        classes[n++] = (class){HV | HC, lazy};
        break;
    case VKVIT_MEM_READBACK:
        classes[n++] = (class){HV | HC | CA, lazy};
        classes[n++] = (class){HV | HC, lazy};
        break;
    }
    uint32_t seen = 0;
    for (int c = 0; c < n; c++)
        for (uint32_t i = 0; i < mp->memoryTypeCount && i < 32; i++) {
            const VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
            if (!(bits >> i & 1u) || (f & classes[c].want) != classes[c].want || (f & classes[c].avoid) ||
                (seen >> i & 1u))
                continue;
            seen |= 1u << i;
            if (rank-- == 0) return (int)i;
        }
    return -1;
}

static int choose_memory_type(const vkvit_ctx *ctx, uint32_t bits, vkvit__mem_kind kind) {
    return vkvit__memory_type_choose(&ctx->mem_props, bits, kind, 0);
}

/* Whether `size` bytes of memory type `type` fit one allocation: its heap and maxMemoryAllocationSize (a driver asked
 * for more may crash, not fail). */
static bool fits_one_allocation(const vkvit_ctx *ctx, int type, VkDeviceSize size) {
    const VkDeviceSize heap_size = ctx->mem_props.memoryHeaps[ctx->mem_props.memoryTypes[type].heapIndex].size;
    return size <= heap_size && (!ctx->max_allocation || size <= ctx->max_allocation);
}

/* `bytes` as "12.3 KiB", "45.6 MiB" or "7.8 GiB" in out[32]. */
static const char *bytes_text(uint64_t bytes, char *out) {
    const double b = (double)bytes;
    if (bytes < (10u << 20)) snprintf(out, 32, "%.1f KiB", b / 1024);
    else if (bytes < (10ull << 30)) snprintf(out, 32, "%.1f MiB", b / 1048576);
    else snprintf(out, 32, "%.1f GiB", b / 1073741824);
    return out;
}

/* VK_EXT_memory_budget (or a test's budget, vkvit__test_hooks.heap_budget): a buffer goes to a memory type whose heap
 * has room for it in what is left of its budget (budget - usage: the driver's figures for this process, other
 * libraries' allocations included), the chosen *type first, then the next suitable ones as after a failed
 * allocation; none with room is refused with the figures, rather than letting the driver evict or fail later.
 * Without a reported budget the heap's size is the limit (fits_one_allocation). */
static vkvit_result within_budget(const vkvit_ctx *ctx, const VkMemoryRequirements *req, vkvit__mem_kind kind,
                                  int *type, const char *label) {
    if (!ctx->caps.memory_budget && !ctx->test_hooks.heap_budget) return VKVIT_OK;
    vkvit_memory_heap heaps[VKVIT_MAX_MEMORY_HEAPS];
    uint32_t n = 0;
    vkvit__memory_heaps_read(ctx, heaps, &n);
    for (uint32_t rank = 0;; rank++) {
        const int t = rank ? vkvit__memory_type_choose(&ctx->mem_props, req->memoryTypeBits, kind, rank) : *type;
        if (t < 0) break;
        const uint32_t h = ctx->mem_props.memoryTypes[t].heapIndex;
        const uint64_t left = h < n && heaps[h].usage < heaps[h].budget ? heaps[h].budget - heaps[h].usage : 0;
        if (req->size <= left && fits_one_allocation(ctx, t, req->size)) {
            *type = t;
            return VKVIT_OK;
        }
    }
    const uint32_t h = ctx->mem_props.memoryTypes[*type].heapIndex;
    const vkvit_memory_heap z = {0}, *hp = h < n ? &heaps[h] : &z;
    const uint64_t left = hp->usage < hp->budget ? hp->budget - hp->usage : 0;
    char need_s[32], left_s[32], budget_s[32], usage_s[32], size_s[32];
    return vkvit__error(VKVIT_ERROR_OUT_OF_DEVICE_MEMORY,
                        "buffer '%s' needs %s (%llu bytes), but memory heap %u has %s left of its budget (budget %s, "
                        "in use %s, heap size %s%s) and no other memory type suited to it has room; free other "
                        "sessions or models, or use a smaller batch", label ? label : "?",
                        bytes_text(req->size, need_s), (unsigned long long)req->size, h, bytes_text(left, left_s),
                        bytes_text(hp->budget, budget_s), bytes_text(hp->usage, usage_s), bytes_text(hp->size, size_s),
                        ctx->caps.memory_budget ? ", from VK_EXT_memory_budget" : ", a test's budget");
}

/* Buffers from this size on import huge-page host memory where ctx->huge_page_import holds (smaller ones would waste
 * most of a 2 MiB page, and their page faults cost little). */
#define HUGE_IMPORT_MIN_BYTES (2 * VKVIT_HUGE_PAGE_BYTES)

/* A CPU device's buffer memory from vkvit's own huge-page mapping (VK_EXT_external_memory_host), instead of the
 * driver's: lavapipe's device memory is malloc'ed host memory, and half of a model's creation went to the page
 * faults of its first write, one per 4 KiB (perf: exc_page_fault, clear_page_erms). Advising the driver's memory
 * instead would mark the host program's malloc heap, which lavapipe's allocations often come from, for huge pages
 * for the rest of the process. On success out->memory is bound to nothing yet and out->host owns the mapping; any
 * refusal leaves both empty, and the caller allocates as usual. */
static bool import_huge_pages(vkvit_ctx *ctx, const VkMemoryRequirements *req, vkvit__mem_kind kind, int *type,
                              vkvit__buffer *out) {
    if (req->size > SIZE_MAX - VKVIT_HUGE_PAGE_BYTES) return false;
    const size_t page = VKVIT_HUGE_PAGE_BYTES, bytes = (size_t)((req->size + page - 1) / page * page);
    void *host = vkvit__huge_alloc(bytes);
    if (!host) return false;
    VkMemoryHostPointerPropertiesEXT hp = {.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
    int t = -1;
    if (ctx->vk.vkGetMemoryHostPointerPropertiesEXT(ctx->device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
                                                     host, &hp) == VK_SUCCESS)
        t = choose_memory_type(ctx, req->memoryTypeBits & hp.memoryTypeBits, kind);
    if (t >= 0 && fits_one_allocation(ctx, t, bytes)) { /* the rounded-up size, on that type's heap */
        VkImportMemoryHostPointerInfoEXT import = {
            .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
            .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
            .pHostPointer = host,
        };
        VkMemoryAllocateInfo alloc = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .pNext = &import,
            .allocationSize = bytes, .memoryTypeIndex = (uint32_t)t,
        };
        if (ctx->vk.vkAllocateMemory(ctx->device, &alloc, NULL, &out->memory) == VK_SUCCESS) {
            VKVIT_COUNT(ctx, memory_allocations);
            out->host = host, out->host_size = bytes, *type = t;
            return true;
        }
        out->memory = VK_NULL_HANDLE;
    }
    vkvit__huge_free(host, bytes);
    return false;
}

vkvit_result vkvit__buffer_create(vkvit_ctx *ctx, VkDeviceSize size, vkvit__mem_kind kind, const char *label,
                                  vkvit__buffer *out) {
    vkvit_result res = VKVIT_OK;
    memset(out, 0, sizeof *out);
    if (size == 0) size = 4; /* a zero-sized buffer is invalid in Vulkan; keep the bookkeeping simple */
    /* Whole 16-byte texels: a texel view of a tensor at an aligned offset can then always reach its last element. */
    size = (size + 15) / 16 * 16;
    VkBufferCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = VKVIT_BUFFER_USAGE | (ctx->caps.texel_buffers ? VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT : 0),
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    /* May be bound to imported host memory (import_huge_pages); binding ordinary memory stays allowed. */
    const bool try_import = ctx->huge_page_import && size >= HUGE_IMPORT_MIN_BYTES;
    VkExternalMemoryBufferCreateInfo external = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                                 .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT};
    if (try_import) info.pNext = &external;
    VK_TRY(ctx->vk.vkCreateBuffer(ctx->device, &info, NULL, &out->buffer));
    VKVIT_COUNT(ctx, buffers);
    VkMemoryRequirements req;
    ctx->vk.vkGetBufferMemoryRequirements(ctx->device, out->buffer, &req);
    int type = choose_memory_type(ctx, req.memoryTypeBits, kind);
    if (type < 0) {
        res = vkvit__error(VKVIT_ERROR_UNSUPPORTED, "no suitable memory type for buffer '%s' (kind %d, type bits 0x%x)",
                           label ? label : "?", (int)kind, req.memoryTypeBits);
        goto fail;
    }
    /* Refuse what the device cannot hold in one allocation before asking. */
    const uint32_t heap = ctx->mem_props.memoryTypes[type].heapIndex;
    const VkDeviceSize heap_size = ctx->mem_props.memoryHeaps[heap].size;
    if (!fits_one_allocation(ctx, type, req.size)) {
        res = vkvit__error(VKVIT_ERROR_OUT_OF_DEVICE_MEMORY,
                           "buffer '%s' needs %llu bytes; the device allows %llu bytes in one allocation and its memory "
                           "heap %u holds %llu bytes", label ? label : "?", (unsigned long long)req.size,
                           (unsigned long long)ctx->max_allocation, heap, (unsigned long long)heap_size);
        goto fail;
    }
    if ((res = within_budget(ctx, &req, kind, &type, label)) != VKVIT_OK) goto fail;
    VkMemoryAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = (uint32_t)type,
    };
    VkResult vr = VK_SUCCESS;
    if (!(try_import && import_huge_pages(ctx, &req, kind, &type, out))) {
        vr = ctx->vk.vkAllocateMemory(ctx->device, &alloc, NULL, &out->memory);
        VKVIT_COUNT(ctx, memory_allocations);
        /* A full heap: the next suitable type (plain device-local after the BAR window, host memory last). */
        for (uint32_t rank = 1; vr == VK_ERROR_OUT_OF_DEVICE_MEMORY || vr == VK_ERROR_OUT_OF_HOST_MEMORY; rank++) {
            const int next = vkvit__memory_type_choose(&ctx->mem_props, req.memoryTypeBits, kind, rank);
            if (next < 0) break;
            if (!fits_one_allocation(ctx, next, req.size)) continue;
            alloc.memoryTypeIndex = (uint32_t)next;
            vr = ctx->vk.vkAllocateMemory(ctx->device, &alloc, NULL, &out->memory);
            VKVIT_COUNT(ctx, memory_allocations);
            if (vr == VK_SUCCESS) type = next;
        }
    }
    if (vr != VK_SUCCESS) {
        res = vkvit__error(vr == VK_ERROR_OUT_OF_DEVICE_MEMORY ? VKVIT_ERROR_OUT_OF_DEVICE_MEMORY : VKVIT_ERROR_VULKAN,
                           "buffer '%s': vkAllocateMemory of %llu bytes failed with %s (memory heap %u holds %llu bytes)",
                           label ? label : "?", (unsigned long long)req.size, vkvit__vk_result_name(vr), heap,
                           (unsigned long long)ctx->mem_props.memoryHeaps[heap].size);
        goto fail;
    }
    VK_TRY(ctx->vk.vkBindBufferMemory(ctx->device, out->buffer, out->memory, 0));
    VkMemoryPropertyFlags flags = ctx->mem_props.memoryTypes[type].propertyFlags;
    if (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
        VK_TRY(ctx->vk.vkMapMemory(ctx->device, out->memory, 0, VK_WHOLE_SIZE, 0, &out->mapped));
        out->coherent = (flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
        out->cached = (flags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) != 0;
    }
    out->size = size;
    vkvit__set_object_name(ctx, VK_OBJECT_TYPE_BUFFER, (uint64_t)out->buffer, label);
    return VKVIT_OK;
fail:
    vkvit__buffer_destroy(ctx, out);
    return res;
}

vkvit__counts vkvit__ctx_counters(const vkvit_ctx *ctx) {
    vkvit_ctx *c = (vkvit_ctx *)ctx; /* atomic_load takes a non-const pointer in C11 */
    return (vkvit__counts){
        .memory_allocations = atomic_load(&c->counters.memory_allocations),
        .buffers = atomic_load(&c->counters.buffers),
        .pipelines = atomic_load(&c->counters.pipelines),
        .descriptor_sets = atomic_load(&c->counters.descriptor_sets),
        .command_buffers = atomic_load(&c->counters.command_buffers),
        .other_objects = atomic_load(&c->counters.other_objects),
    };
}

void vkvit__buffer_destroy(vkvit_ctx *ctx, vkvit__buffer *buf) {
    if (!buf) return;
    if (buf->buffer) ctx->vk.vkDestroyBuffer(ctx->device, buf->buffer, NULL);
    if (buf->memory) ctx->vk.vkFreeMemory(ctx->device, buf->memory, NULL); /* unmaps implicitly */
    vkvit__huge_free(buf->host, buf->host_size); /* imported host memory outlives its VkDeviceMemory */
    memset(buf, 0, sizeof *buf);
}

bool vkvit__host_buffer_holds(const vkvit_ctx *ctx, VkBuffer buffer, uint64_t offset, uint64_t bytes) {
    VkMemoryRequirements req;
    ctx->vk.vkGetBufferMemoryRequirements(ctx->device, buffer, &req);
    return offset <= req.size && bytes <= req.size - offset;
}

static vkvit_result check_range(const vkvit__buffer *buf, VkDeviceSize offset, VkDeviceSize size, const char *what) {
    if (offset > buf->size || size > buf->size - offset)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "%s: range [%llu, +%llu) is outside the %llu-byte buffer", what,
                            (unsigned long long)offset, (unsigned long long)size, (unsigned long long)buf->size);
    return VKVIT_OK;
}

static vkvit_result get_staging(vkvit_ctx *ctx, vkvit__buffer **out) {
    if (!ctx->staging) {
        vkvit__buffer *s = calloc(1, sizeof *s);
        if (!s) return vkvit__error(VKVIT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the staging buffer");
        vkvit_result res = vkvit__buffer_create(ctx, STAGING_BYTES, VKVIT_MEM_READBACK, "vkvit staging", s);
        if (res != VKVIT_OK) {
            free(s);
            return res;
        }
        ctx->staging = s;
    }
    *out = ctx->staging;
    return VKVIT_OK;
}

/* All device access to a buffer (shader or transfer) that may have happened earlier on the queue. */
#define ANY_STAGE (VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT)
#define ANY_ACCESS                                                                                              \
    (VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT)

/* Copies between `buf` and the staging buffer in one submission: upload = staging -> buf, else buf -> staging. */
static vkvit_result staged_copy(vkvit_ctx *ctx, vkvit__buffer *buf, VkDeviceSize offset, VkDeviceSize size,
                                vkvit__buffer *staging, bool upload) {
    VkCommandBuffer cmd;
    vkvit_result res = vkvit__cmd_begin(ctx, &cmd);
    if (res != VKVIT_OK) return res;
    VkBufferCopy region = {.srcOffset = upload ? 0 : offset, .dstOffset = upload ? offset : 0, .size = size};
    /* Order against earlier device work on this range (a write-after-read or read-after-write across submits). */
    vkvit__cmd_barrier(ctx, cmd, buf, offset, size, ANY_STAGE, ANY_ACCESS, VK_PIPELINE_STAGE_TRANSFER_BIT,
                       upload ? VK_ACCESS_TRANSFER_WRITE_BIT : VK_ACCESS_TRANSFER_READ_BIT);
    if (upload)
        ctx->vk.vkCmdCopyBuffer(cmd, staging->buffer, buf->buffer, 1, &region);
    else
        ctx->vk.vkCmdCopyBuffer(cmd, buf->buffer, staging->buffer, 1, &region);
    /* Make the result available to later device work and, for downloads, to the host. */
    if (upload)
        vkvit__cmd_barrier(ctx, cmd, buf, offset, size, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                           ANY_STAGE, ANY_ACCESS);
    else
        vkvit__cmd_barrier(ctx, cmd, staging, 0, size, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                           VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    return vkvit__cmd_submit_wait(ctx, cmd);
}

vkvit_result vkvit__buffer_upload_from(vkvit_ctx *ctx, vkvit__buffer *buf, VkDeviceSize offset, VkDeviceSize size,
                                       vkvit__fill_fn fill, void *user) {
    vkvit_result res = check_range(buf, offset, size, "vkvit__buffer_upload");
    if (res != VKVIT_OK || size == 0) return res;
    if (buf->mapped && buf->coherent) {
        /* Host-visible device memory (UMA, CPU devices): write in place once earlier device work is done. The next
         * vkQueueSubmit makes host writes visible to the device. */
        VkResult vr = vkvit__queue_wait_idle(ctx);
        if (vr != VK_SUCCESS) return vkvit__vk_error(vr, "vkQueueWaitIdle", __func__, NULL);
        for (VkDeviceSize done = 0; done < size;) { /* the same windows as through staging: one behaviour to test */
            VkDeviceSize n = VKVIT_MIN(size - done, (VkDeviceSize)STAGING_BYTES);
            if ((res = fill(user, (uint8_t *)buf->mapped + offset + done, done, n)) != VKVIT_OK) return res;
            done += n;
        }
        return VKVIT_OK;
    }
    vkvit__buffer *staging = NULL;
    if ((res = get_staging(ctx, &staging)) != VKVIT_OK) return res;
    for (VkDeviceSize done = 0; done < size;) {
        VkDeviceSize n = VKVIT_MIN(size - done, (VkDeviceSize)STAGING_BYTES);
        if ((res = fill(user, staging->mapped, done, n)) != VKVIT_OK) return res;
        if ((res = staged_copy(ctx, buf, offset + done, n, staging, true)) != VKVIT_OK) return res;
        done += n;
    }
    return VKVIT_OK;
}

static vkvit_result copy_from_host(void *user, void *dst, uint64_t at, uint64_t bytes) {
    memcpy(dst, (const uint8_t *)user + at, (size_t)bytes);
    return VKVIT_OK;
}

vkvit_result vkvit__buffer_upload(vkvit_ctx *ctx, vkvit__buffer *buf, VkDeviceSize offset, const void *data,
                                  VkDeviceSize size) {
    return vkvit__buffer_upload_from(ctx, buf, offset, size, copy_from_host, (void *)data);
}

vkvit_result vkvit__buffer_download(vkvit_ctx *ctx, vkvit__buffer *buf, VkDeviceSize offset, void *data,
                                    VkDeviceSize size) {
    vkvit_result res = check_range(buf, offset, size, "vkvit__buffer_download");
    if (res != VKVIT_OK || size == 0) return res;
    VKVIT_COUNT(ctx, downloads);
    if (buf->mapped && buf->coherent && buf->cached) {
        /* Host-cached device memory (UMA, CPU devices): read in place once earlier device writes are made visible to
         * the host (a barrier to HOST_READ; waiting alone would not). */
        VkCommandBuffer cmd;
        if ((res = vkvit__cmd_begin(ctx, &cmd)) != VKVIT_OK) return res;
        vkvit__cmd_barrier(ctx, cmd, buf, offset, size, ANY_STAGE, ANY_ACCESS, VK_PIPELINE_STAGE_HOST_BIT,
                           VK_ACCESS_HOST_READ_BIT);
        if ((res = vkvit__cmd_submit_wait(ctx, cmd)) != VKVIT_OK) return res;
        memcpy(data, (const uint8_t *)buf->mapped + offset, (size_t)size);
        return VKVIT_OK;
    }
    vkvit__buffer *staging = NULL;
    if ((res = get_staging(ctx, &staging)) != VKVIT_OK) return res;
    for (VkDeviceSize done = 0; done < size;) {
        VkDeviceSize n = VKVIT_MIN(size - done, (VkDeviceSize)STAGING_BYTES);
        if ((res = staged_copy(ctx, buf, offset + done, n, staging, false)) != VKVIT_OK) return res;
        if (!staging->coherent) {
            VkMappedMemoryRange range = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                         .memory = staging->memory, .offset = 0, .size = VK_WHOLE_SIZE};
            ctx->vk.vkInvalidateMappedMemoryRanges(ctx->device, 1, &range);
        }
        memcpy((uint8_t *)data + done, staging->mapped, (size_t)n);
        done += n;
    }
    return VKVIT_OK;
}

vkvit_result vkvit__buffer_fill(vkvit_ctx *ctx, vkvit__buffer *buf, VkDeviceSize offset, VkDeviceSize size,
                                uint32_t pattern) {
    vkvit_result res = check_range(buf, offset, size, "vkvit__buffer_fill");
    if (res != VKVIT_OK || size == 0) return res;
    if (offset % 4 || size % 4)
        return vkvit__error(VKVIT_ERROR_INVALID_ARGUMENT, "vkvit__buffer_fill: offset %llu and size %llu must be multiples of 4",
                            (unsigned long long)offset, (unsigned long long)size);
    VkCommandBuffer cmd;
    if ((res = vkvit__cmd_begin(ctx, &cmd)) != VKVIT_OK) return res;
    vkvit__cmd_barrier(ctx, cmd, buf, offset, size, ANY_STAGE, ANY_ACCESS, VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_ACCESS_TRANSFER_WRITE_BIT);
    ctx->vk.vkCmdFillBuffer(cmd, buf->buffer, offset, size, pattern);
    vkvit__cmd_barrier(ctx, cmd, buf, offset, size, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                       ANY_STAGE, ANY_ACCESS);
    return vkvit__cmd_submit_wait(ctx, cmd);
}
