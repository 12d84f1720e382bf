# SPDX-License-Identifier: Apache-2.0
"""A small baseline-TIFF writer for the decoder tests (tests/python/test_tiff_agreement.py): the variants Pillow
cannot write itself (16-bit RGB and RGBA, tiles, big-endian files, horizontal differencing, associated alpha,
separate planes, old-style LZW), each then read by Pillow as the reference. Encoders: PackBits, TIFF LZW
(MSB-first, the code width growing as libtiff's encoder grows it), Deflate (zlib)."""

import struct
import zlib

import numpy as np


def packbits(data: bytes) -> bytes:
    out, i, n = bytearray(), 0, len(data)
    while i < n:
        j = i
        while j + 1 < n and data[j + 1] == data[i] and j - i < 127:
            j += 1
        if j > i:                                   # a run of j - i + 1 equal bytes
            out += struct.pack("b", -(j - i)) + data[i:i + 1]
            i = j + 1
            continue
        j = i + 1                                   # literals up to the next run of 2 or the 128 limit
        while j < n and j - i < 128 and not (j + 1 < n and data[j] == data[j + 1]):
            j += 1
        out += bytes([j - i - 1]) + data[i:j]
        i = j
    return bytes(out)


def lzw(data: bytes) -> bytes:
    """TIFF LZW as libtiff's LZWEncode / LZWPostEncode write it."""
    out, acc, nacc = bytearray(), 0, 0
    width, nxt = 9, 258

    def put(code):
        nonlocal acc, nacc
        acc = acc << width | code
        nacc += width
        while nacc >= 8:
            out.append(acc >> (nacc - 8) & 0xFF)
            nacc -= 8
        acc &= (1 << nacc) - 1

    put(256)
    table = {bytes([i]): i for i in range(256)}
    w = b""
    for c in data:
        wc = w + bytes([c])
        if wc in table:
            w = wc
            continue
        put(table[w])
        table[wc] = nxt
        nxt += 1
        if nxt == 4094:                            # full: a clear code, then 9 bits again
            put(256)
            table = {bytes([i]): i for i in range(256)}
            width, nxt = 9, 258
        elif nxt > (1 << width) - 1:
            width += 1
        w = bytes([c])
    if w:
        put(table[w])
        nxt += 1
        if nxt == 4094:
            put(256)
            width = 9
        elif nxt > (1 << width) - 1:
            width += 1
    put(257)
    if nacc:
        out.append(acc << (8 - nacc) & 0xFF)
    return bytes(out)


def differenced(a: np.ndarray) -> np.ndarray:
    """Horizontal differencing (Predictor 2) of [rows, cols, samples] unsigned samples, modulo their size."""
    d = a.copy()
    d[:, 1:] = a[:, 1:] - a[:, :-1]
    return d


def write_tiff(path, samples: np.ndarray, photometric: int, *, big=False, compression=1, predictor=1,
               rows_per_strip=None, tile=None, extra_samples=None, colormap=None, planar=1, orientation=None,
               sample_format=None, fill_order=None, old_lzw=False):
    """samples: [H, W, S] uint8 or uint16. tile: (tw, th) or None (strips of rows_per_strip rows, default all).
    Writes one IFD; returns the path."""
    e = ">" if big else "<"
    h, w, spp = samples.shape
    bits = samples.dtype.itemsize * 8
    dt = np.dtype(e + ("u1" if bits == 8 else "u2"))

    def encode(block: np.ndarray) -> bytes:
        if predictor == 2:
            block = differenced(block)
        raw = np.ascontiguousarray(block.astype(dt)).tobytes()
        if compression == 1:
            return raw
        if compression == 32773:
            return packbits(raw)
        if compression == 5:
            return lzw(raw) if not old_lzw else b"\x00\x01" + raw
        return zlib.compress(raw)

    chunks = []
    if planar == 2:
        for s in range(spp):
            chunks.append(encode(samples[:, :, s:s + 1]))
    elif tile:
        tw, th = tile
        for y in range(0, h, th):
            for x in range(0, w, tw):
                t = np.zeros((th, tw, spp), samples.dtype)
                part = samples[y:y + th, x:x + tw]
                t[:part.shape[0], :part.shape[1]] = part
                chunks.append(encode(t))
    else:
        rps = rows_per_strip or h
        for y in range(0, h, rps):
            chunks.append(encode(samples[y:y + rps]))

    tags = {256: (4, [w]), 257: (4, [h]), 258: (3, [bits] * spp), 259: (3, [compression]), 262: (3, [photometric]),
            277: (3, [spp]), 284: (3, [planar])}
    if predictor != 1:
        tags[317] = (3, [predictor])
    if extra_samples is not None:
        tags[338] = (3, list(extra_samples))
    if colormap is not None:
        tags[320] = (3, list(colormap))
    if orientation is not None:
        tags[274] = (3, [orientation])
    if sample_format is not None:
        tags[339] = (3, [sample_format] * spp)
    if fill_order is not None:
        tags[266] = (3, [fill_order])
    if tile and planar == 1:
        tags[322], tags[323] = (3, [tile[0]]), (3, [tile[1]])
        off_tag, cnt_tag = 324, 325
    else:
        tags[278] = (4, [h if planar == 2 else (rows_per_strip or h)])
        off_tag, cnt_tag = 273, 279
    # layout: header, chunk data, then the tag arrays, then the IFD
    body = bytearray(b"MM\x00*" if big else b"II*\x00") + b"\0\0\0\0"
    offsets = []
    for c in chunks:
        offsets.append(len(body))
        body += c
        if len(body) % 2:
            body += b"\0"
    tags[off_tag] = (4, offsets)
    tags[cnt_tag] = (4, [len(c) for c in chunks])
    arrays = {}
    for tag, (typ, vals) in sorted(tags.items()):
        size = {3: 2, 4: 4}[typ] * len(vals)
        if size > 4:
            arrays[tag] = len(body)
            body += struct.pack(e + ("H" if typ == 3 else "I") * len(vals), *vals)
            if len(body) % 2:
                body += b"\0"
    ifd = len(body)
    struct.pack_into(e + "I", body, 4, ifd)
    body += struct.pack(e + "H", len(tags))
    for tag, (typ, vals) in sorted(tags.items()):
        fmt = "H" if typ == 3 else "I"
        if tag in arrays:
            value = struct.pack(e + "I", arrays[tag])
        else:
            value = struct.pack(e + fmt * len(vals), *vals).ljust(4, b"\0")
        body += struct.pack(e + "HHI", tag, typ, len(vals)) + value
    body += b"\0\0\0\0"
    with open(path, "wb") as f:
        f.write(bytes(body))
    return path
