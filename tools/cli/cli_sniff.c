// SPDX-License-Identifier: Apache-2.0
/* Telling a model file from what it plainly is not before the reader (and a GPU driver) starts: special files are
 * refused, and a file of another kind is named by its magic bytes (cli_sniff_model, cli_sniff_safetensors). */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

vkvit_result cli_sniff_model(const char *path) {
    unsigned char b[16] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block here */
    if (fd < 0) return cli_error(VKVIT_ERROR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    const int examined = fstat(fd, &st) == 0;
    if (!examined || !S_ISREG(st.st_mode)) { /* the reader's own sentence, before any device work */
        close(fd);
        const char *what = !examined               ? "something that cannot be examined"
                           : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                           : S_ISDIR(st.st_mode)  ? "a directory"
                           : S_ISCHR(st.st_mode)  ? "a character device"
                           : S_ISBLK(st.st_mode)  ? "a block device"
                                                  : "something else";
        return cli_error(VKVIT_ERROR_IO, "'%s' is not a regular file but %s; vkvit reads only regular files", path,
                         what);
    }
    ssize_t n = read(fd, b, sizeof b);
    close(fd);
    if (n < 0) return VKVIT_OK;
    /* Files of /proc and /sys are regular files whose st_size is 0, their content made as they are read: the reader
     * (which maps st_size bytes) would call them "0 bytes long". */
    if (n > 0 && st.st_size == 0)
        return cli_error(VKVIT_ERROR_IO, "'%s' is not a regular file with a size: it reports 0 bytes but reads as "
                         "data, as files under /proc and /sys do; vkvit reads models only from regular files", path);
    return cli_sniff_safetensors(b, (size_t)n, path,
                                 "a vkvit model (a safetensors file with vkvit metadata, docs/model-format.md)");
}

vkvit_result cli_sniff_safetensors(const uint8_t *bytes, size_t n, const char *name, const char *kind) {
    size_t at = 8; /* the JSON header may start with whitespace, as JSON may */
    while (at < n && (bytes[at] == ' ' || bytes[at] == '\t' || bytes[at] == '\n' || bytes[at] == '\r')) at++;
    uint64_t header_len = 0;
    for (int i = 7; n >= 8 && i >= 0; i--) header_len = header_len << 8 | bytes[i];
    if (n < 9 || (header_len <= ((uint64_t)1 << 32) && (at == n || bytes[at] == '{')))
        return VKVIT_OK; /* short or plausible: the reader says what is wrong */
    unsigned char b[16] = {0};                      /* the magic table looks at up to 16 bytes */
    memcpy(b, bytes, n < sizeof b ? n : sizeof b);
    static const struct {
        const char *magic;
        size_t len, at;
        const char *what;
    } k[] = {
        {"\x89PNG\r\n\x1a\n", 8, 0, "a PNG image"},
        {"\xff\xd8\xff", 3, 0, "a JPEG image"},
        {"GIF8", 4, 0, "a GIF image"},
        {"WEBP", 4, 8, "a WebP image"},
        {"BM", 2, 0, "a BMP image"},
        {"PK\x03\x04", 4, 0, "a ZIP archive, as PyTorch's torch.save writes (.pt / .pth): convert the "
                             "checkpoint with tools/convert.py"},
        {"\x89HDF\r\n\x1a\n", 8, 0, "an HDF5 file (e.g. Keras .h5)"},
        {"\x1f\x8b", 2, 0, "gzip-compressed data: decompress it first"},
        {"GGUF", 4, 0, "a GGUF model (llama.cpp)"},
        {"TFL3", 4, 4, "a TensorFlow Lite model"},
        {"\x93NUMPY", 6, 0, "a NumPy .npy array"},
        {"%PDF", 4, 0, "a PDF document"},
        {"\x7f" "ELF", 4, 0, "an ELF executable"},
    };
    const char *what = NULL;
    for (size_t i = 0; i < CLI_ARRAY_LEN(k) && !what; i++)
        if (!memcmp(b + k[i].at, k[i].magic, k[i].len)) what = k[i].what;
    if (!what && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5)
        what = "a Python pickle (an older PyTorch checkpoint): convert it with tools/convert.py";
    if (!what && b[0] == 0x08 && b[1] < 0x20 && (b[2] == 0x12 || b[2] == 0x3a))
        what = "an ONNX model (protobuf): vkvit reads converted PyTorch checkpoints (tools/convert.py)";
    if (!what && (b[0] == '{' || b[0] == '['))
        what = "JSON text (a safetensors file starts with an 8-byte header length, then its JSON header)";
    if (what)
        return cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s' is not %s: it looks like %s", name, kind, what);
    return cli_error(VKVIT_ERROR_BAD_MODEL_FILE, "'%s' is not %s: a safetensors file starts with an 8-byte header "
                     "length and then '{', this one with %02x %02x %02x %02x %02x %02x %02x %02x %02x", name, kind,
                     b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8]);
}
