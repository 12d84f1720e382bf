#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Seeds for the image-decoder fuzzer (tests/fuzz/fuzz_image.c): small files of every format and variant the CLI
decodes (PNG colour types, bit depths, interlacing and ancillary chunks; baseline, progressive, CMYK and EXIF JPEGs;
BMP bit depths, RLE, bit fields, OS/2 and V5 headers; GIF still and animated; TGA raw and RLE; WebP lossy, lossless,
alpha, EXIF and animated; TIFF in every compression, layout and sample kind the CLI decodes), written to
tests/fuzz/image_corpus/ (or the folder given). Deterministic (seeded). The corpus also holds, under found-*, the
files of fuzzing runs' findings; this script does not make those.

    /usr/bin/python3 tests/fuzz/make_image_corpus.py [OUT]        (needs Pillow)
"""
import io
import os
import random
import struct
import sys
import zlib

from PIL import Image

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "image_corpus")
os.makedirs(out, exist_ok=True)
random.seed(1)
def img(mode, w=7, h=5):
    im = Image.new('RGBA', (w, h))
    im.putdata([(random.randrange(256), random.randrange(256), random.randrange(256), random.randrange(256)) for _ in range(w*h)])
    if mode == 'P': return im.convert('RGB').quantize(8)
    return im.convert(mode)
def save(name, im, fmt, **kw):
    b = io.BytesIO(); im.save(b, fmt, **kw); open(os.path.join(out, name), 'wb').write(b.getvalue())
exif = Image.Exif(); exif[0x0112] = 6
exif8 = Image.Exif(); exif8[0x0112] = 8
for m in ['1', 'L', 'LA', 'P', 'RGB', 'RGBA']:
    save(f'png_{m.replace(";","")}.png', img(m), 'PNG')
save('png_exif6.png', img('RGB'), 'PNG', exif=exif)
save('png_P_trns.png', img('P'), 'PNG', transparency=0)
for m in ['L', 'RGB', 'CMYK']:
    save(f'jpg_{m}.jpg', img(m, 17, 9), 'JPEG', quality=80)
save('jpg_prog.jpg', img('RGB', 17, 19), 'JPEG', progressive=True, quality=70)
save('jpg_exif6.jpg', img('RGB', 9, 5), 'JPEG', exif=exif)
save('jpg_exif8_prog.jpg', img('RGB', 9, 5), 'JPEG', exif=exif8, progressive=True)
save('jpg_sub444.jpg', img('RGB', 9, 5), 'JPEG', subsampling=0)
save('jpg_sub422.jpg', img('RGB', 9, 5), 'JPEG', subsampling=1)
for m in ['1', 'L', 'P', 'RGB', 'RGBA']:
    save(f'bmp_{m}.bmp', img(m), 'BMP')
save('gif_P.gif', img('P'), 'GIF')
frames = [img('P') for _ in range(3)]
b = io.BytesIO(); frames[0].save(b, 'GIF', save_all=True, append_images=frames[1:], duration=10, loop=0, transparency=0, disposal=2)
open(os.path.join(out, 'gif_anim.gif'), 'wb').write(b.getvalue())
for m in ['L', 'P', 'RGB', 'RGBA']:
    save(f'tga_{m}.tga', img(m), 'TGA')
    save(f'tga_{m}_rle.tga', img(m), 'TGA', compression='tga_rle')
save('webp_lossy.webp', img('RGB', 17, 9), 'WEBP', quality=60)
save('webp_lossy_alpha.webp', img('RGBA', 17, 9), 'WEBP', quality=60)
save('webp_lossless.webp', img('RGBA', 9, 7), 'WEBP', lossless=True)
save('webp_exif6.webp', img('RGB', 9, 5), 'WEBP', exif=exif.tobytes())
frames = [img('RGBA') for _ in range(2)]
b = io.BytesIO(); frames[0].save(b, 'WEBP', save_all=True, append_images=frames[1:], duration=10)
open(os.path.join(out, 'webp_anim.webp'), 'wb').write(b.getvalue())

def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
def png(name, w, h, depth, ctype, interlace, extra=b''):
    ch = {0:1, 2:3, 3:1, 4:2, 6:4}[ctype]
    bpp_bits = depth * ch
    def rows(pw, ph):
        rb = (pw * bpp_bits + 7) // 8
        return b''.join(bytes([random.randrange(5)]) + bytes(random.randrange(256) for _ in range(rb)) for _ in range(ph))
    if interlace:
        raw = b''
        for (x0, y0, dx, dy) in [(0,0,8,8),(4,0,8,8),(0,4,4,8),(2,0,4,4),(0,2,2,4),(1,0,2,2),(0,1,1,2)]:
            pw = (w - x0 + dx - 1) // dx; ph = (h - y0 + dy - 1) // dy
            if pw and ph: raw += rows(pw, ph)
    else: raw = rows(w, h)
    d = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, depth, ctype, 0, 0, interlace))
    if ctype == 3: d += chunk(b'PLTE', bytes(random.randrange(256) for _ in range(3 * (1 << depth))))
    d += extra + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')
    open(os.path.join(out, name), 'wb').write(d)
png('png_rgb16.png', 5, 3, 16, 2, 0)
png('png_rgba16_adam7.png', 11, 9, 16, 6, 1)
png('png_grey16.png', 5, 3, 16, 0, 0)
png('png_ga16.png', 5, 3, 16, 4, 0)
png('png_rgb8_adam7.png', 10, 10, 8, 2, 1)
png('png_p2_adam7.png', 10, 10, 2, 3, 1)
png('png_p4.png', 10, 3, 4, 3, 0, chunk(b'tRNS', b'\x00\x80'))
png('png_g1.png', 13, 3, 1, 0, 0, chunk(b'tRNS', b'\x00\x01'))
png('png_g4_adam7.png', 13, 3, 4, 0, 1)
png('png_cgbi_like.png', 4, 4, 8, 6, 0, chunk(b'CgBI', b'\x50\x00\x20\x06'))
# BMP RLE8 and RLE4
def bmp_rle(name, bpp, comp, w, h, data):
    ncol = 1 << bpp
    pal = b''.join(bytes([random.randrange(256), random.randrange(256), random.randrange(256), 0]) for _ in range(ncol))
    off = 14 + 40 + len(pal)
    hdr = struct.pack('<IiiHHIIiiII', 40, w, h, 1, bpp, comp, len(data), 2835, 2835, ncol, 0)
    d = b'BM' + struct.pack('<IHHI', off + len(data), 0, 0, off) + hdr + pal + data
    open(os.path.join(out, name), 'wb').write(d)
bmp_rle('bmp_rle8.bmp', 8, 1, 6, 3, bytes([6, 1, 0, 0, 3, 2, 3, 3, 0, 0, 0, 1]))
bmp_rle('bmp_rle4.bmp', 4, 2, 6, 3, bytes([6, 0x12, 0, 0, 6, 0x34, 0, 0, 0, 2, 1, 1, 0, 1]))
# 16-bit bitfields BMP and OS/2 core header BMP
w, h = 5, 3
rowb = (w * 2 + 3) // 4 * 4
pix = bytes(random.randrange(256) for _ in range(rowb * h))
hdr = struct.pack('<IiiHHIIiiII', 40, w, -h, 1, 16, 3, len(pix), 0, 0, 0, 0) + struct.pack('<III', 0xF800, 0x07E0, 0x001F)
off = 14 + len(hdr)
open(os.path.join(out, 'bmp_565_topdown.bmp'), 'wb').write(b'BM' + struct.pack('<IHHI', off + len(pix), 0, 0, off) + hdr + pix)
rowb = (w * 3 + 3) // 4 * 4
pix = bytes(random.randrange(256) for _ in range(rowb * h))
hdr = struct.pack('<IHHHH', 12, w, h, 1, 24)
off = 14 + len(hdr)
open(os.path.join(out, 'bmp_os2.bmp'), 'wb').write(b'BM' + struct.pack('<IHHI', off + len(pix), 0, 0, off) + hdr + pix)
# BMP V5 header 32-bit with alpha mask
pix = bytes(random.randrange(256) for _ in range(w * 4 * h))
hdr = struct.pack('<IiiHHIIiiII', 124, w, h, 1, 32, 3, len(pix), 0, 0, 0, 0) + struct.pack('<IIII', 0xFF0000, 0xFF00, 0xFF, 0xFF000000) + bytes(124 - 56)
off = 14 + len(hdr)
open(os.path.join(out, 'bmp_v5_32.bmp'), 'wb').write(b'BM' + struct.pack('<IHHI', off + len(pix), 0, 0, off) + hdr + pix)
# TIFF: Pillow's libtiff writer (strips; every compression vkvit decodes) and tests/python/tiff_writer.py for the
# rest (tiles, 16-bit RGB(A), big-endian, Predictor 2, associated alpha)
for m in ['L', 'LA', 'RGB', 'RGBA', 'P', 'I;16']:
    for comp in ['raw', 'packbits', 'tiff_lzw', 'tiff_adobe_deflate']:
        im = img(m) if m != 'I;16' else Image.frombytes('I;16', (7, 5), bytes(random.randrange(256) for _ in range(70)))
        save(f'tif_{m.replace(";", "")}_{comp}.tif', im, 'TIFF', compression=comp)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'python'))
import numpy as np  # noqa: E402
from tiff_writer import write_tiff  # noqa: E402
rng = np.random.default_rng(1)
for photo, spp, extra in ((1, 1, None), (2, 3, None), (2, 4, (2,)), (2, 4, (1,)), (1, 2, (2,)), (3, 1, None)):
    for bits, big, comp, tile, pred in ((8, False, 5, (16, 16), 2), (16, True, 8, None, 2), (8, True, 32773, (16, 16), 1),
                                        (16, False, 1, (16, 16), 1)):
        if (photo == 3 or extra is not None and photo == 1 or extra == (1,)) and bits == 16:
            continue
        s = rng.integers(0, 1 << bits, (19, 21, spp), dtype=np.uint64).astype(np.uint8 if bits == 8 else np.uint16)
        cmap = rng.integers(0, 65536, 768).tolist() if photo == 3 else None
        write_tiff(os.path.join(out, f'tif_p{photo}s{spp}b{bits}{"be" if big else "le"}c{comp}{"t" if tile else "s"}{pred}.tif'),
                   s, photo, big=big, compression=comp, predictor=pred, rows_per_strip=4, tile=tile,
                   extra_samples=extra, colormap=cmap, orientation=6 if big else None)
