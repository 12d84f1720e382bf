// SPDX-License-Identifier: Apache-2.0
/* Finding the bundled demo model (cli_find_bundled_model). The only file that reads VKVIT_SOURCE_DIR: build/vkvit
 * also looks in the source tree, the installed binary only next to itself (CMakeLists.txt links this file twice). */
#include "cli.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int is_regular_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Appends `s` to the ", "-separated list in buf. */
static void append_looked(char *buf, size_t cap, const char *s) {
    size_t n = strlen(buf);
    if (n + 1 < cap && snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", s) >= (int)(cap - n))
        buf[cap - 1] = '\0'; /* cut: the list is only for the error sentence */
}

int cli_find_bundled_model(const char *file, char *path, size_t cap) {
    char looked[2048] = "";
    char candidate[4096];
#if defined(__linux__)
    /* Installed layout: <prefix>/bin/vkvit and <prefix>/share/vkvit/models/. */
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            int len = snprintf(candidate, sizeof candidate, "%s/../share/vkvit/models/%s", exe, file);
            if (len > 0 && len < (int)sizeof candidate && is_regular_file(candidate)) {
                snprintf(path, cap, "%s", candidate);
                return 1;
            }
            append_looked(looked, sizeof looked, candidate);
        }
    }
#endif
#if defined(VKVIT_SOURCE_DIR)
    /* Build tree: the source tree this binary was configured from. */
    int len = snprintf(candidate, sizeof candidate, "%s/assets/models/%s", VKVIT_SOURCE_DIR, file);
    if (len > 0 && len < (int)sizeof candidate && is_regular_file(candidate)) {
        snprintf(path, cap, "%s", candidate);
        return 1;
    }
    append_looked(looked, sizeof looked, candidate);
#endif
    snprintf(path, cap, "%s", looked[0] ? looked : "(no search location on this platform)");
    return 0;
}
