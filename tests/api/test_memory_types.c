// SPDX-License-Identifier: Apache-2.0
/* Where buffers go (vkvit__memory_type_choose, src/vk/memory.c), on the memory layouts real devices publish
 * (VkPhysicalDeviceMemoryProperties as the public Vulkan hardware database lists them; no device needed):
 *
 *   discrete, no resizable BAR   8 GiB VRAM heap, 16 GiB host heap, a 256 MiB host-visible window of VRAM (most
 *                                consumer AMD, NVIDIA and Intel Arc set-ups): weights and arenas in plain VRAM,
 *                                never in the window; the window and then host memory only as fallbacks
 *   discrete, resizable BAR      the host-visible VRAM type on the whole VRAM heap (the H100's layout): taken
 *   unified (integrated, Apple)  one device-local heap whose types are all host-visible: taken
 *   lavapipe                     the same, one heap
 *
 * Upload and readback buffers: host-visible coherent, readback cached where a type is. */
#include "test_util.h"

#define DL VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
#define HV VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
#define HC VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
#define CA VK_MEMORY_PROPERTY_HOST_CACHED_BIT
#define GIB (1024ull * 1024 * 1024)

typedef struct layout {
    const char *name;
    VkPhysicalDeviceMemoryProperties mp;
    int device[4], upload, readback;          /* wanted choices: device ranks 0.. (-1 ends), upload, readback */
} layout;

static void add_heap(VkPhysicalDeviceMemoryProperties *mp, VkDeviceSize size, bool device_local) {
    mp->memoryHeaps[mp->memoryHeapCount++] =
        (VkMemoryHeap){.size = size, .flags = device_local ? VK_MEMORY_HEAP_DEVICE_LOCAL_BIT : 0};
}
static void add_type(VkPhysicalDeviceMemoryProperties *mp, VkMemoryPropertyFlags f, uint32_t heap) {
    mp->memoryTypes[mp->memoryTypeCount++] = (VkMemoryType){.propertyFlags = f, .heapIndex = heap};
}

static void check_layout(const layout *l) {
    const uint32_t all = (1u << l->mp.memoryTypeCount) - 1;
    uint32_t rank = 0;
    for (; rank < 4; rank++) {
        const int got = vkvit__memory_type_choose(&l->mp, all, VKVIT_MEM_DEVICE, rank);
        CHECK(got == l->device[rank], "%s: device buffers, choice %u: type %d, want %d", l->name, rank, got,
              l->device[rank]);
        if (l->device[rank] < 0) break;
    }
    if (rank == 4) /* all four listed: there is no fifth */
        CHECK(vkvit__memory_type_choose(&l->mp, all, VKVIT_MEM_DEVICE, 4) == -1, "%s: a fifth choice", l->name);
    const int up = vkvit__memory_type_choose(&l->mp, all, VKVIT_MEM_UPLOAD, 0);
    const int rb = vkvit__memory_type_choose(&l->mp, all, VKVIT_MEM_READBACK, 0);
    CHECK(up == l->upload, "%s: upload buffers: type %d, want %d", l->name, up, l->upload);
    CHECK(rb == l->readback, "%s: readback buffers: type %d, want %d", l->name, rb, l->readback);
    /* a type the buffer cannot take is never chosen */
    const int only_host = vkvit__memory_type_choose(&l->mp, 1u << l->upload, VKVIT_MEM_DEVICE, 0);
    CHECK(only_host == l->upload, "%s: device buffer allowed only type %d got %d", l->name, l->upload, only_host);
    printf("%-28s device %d (then %d, %d), upload %d, readback %d\n", l->name, l->device[0], l->device[1],
           l->device[2], up, rb);
}

int main(void) {
    layout discrete = {.name = "discrete, no resizable BAR", .device = {0, 3, 1, 2}, .upload = 1, .readback = 2};
    add_heap(&discrete.mp, 8 * GIB, true);     /* 0 VRAM */
    add_heap(&discrete.mp, 16 * GIB, false);   /* 1 system memory */
    add_heap(&discrete.mp, 256ull << 20, true); /* 2 the BAR window */
    add_type(&discrete.mp, DL, 0);
    add_type(&discrete.mp, HV | HC, 1);
    add_type(&discrete.mp, HV | HC | CA, 1);
    add_type(&discrete.mp, DL | HV | HC, 2);
    check_layout(&discrete);

    layout rebar = {.name = "discrete, resizable BAR", .device = {1, 0, 2, 3}, .upload = 1, .readback = 3};
    add_heap(&rebar.mp, 80 * GIB, true);
    add_heap(&rebar.mp, 512 * GIB, false);
    add_type(&rebar.mp, DL, 0);
    add_type(&rebar.mp, DL | HV | HC, 0);
    add_type(&rebar.mp, HV | HC, 1);
    add_type(&rebar.mp, HV | HC | CA, 1);
    check_layout(&rebar);

    layout unified = {.name = "unified memory", .device = {1, 2, 0, -1}, .upload = 1, .readback = 2};
    add_heap(&unified.mp, 16 * GIB, true);
    add_type(&unified.mp, DL, 0);
    add_type(&unified.mp, DL | HV | HC, 0);
    add_type(&unified.mp, DL | HV | HC | CA, 0);
    check_layout(&unified);

    layout lavapipe = {.name = "lavapipe", .device = {0, -1}, .upload = 0, .readback = 0};
    add_heap(&lavapipe.mp, 2 * GIB, true);
    add_type(&lavapipe.mp, DL | HV | HC | CA, 0);
    check_layout(&lavapipe);
    return vt_finish(NULL);
}
