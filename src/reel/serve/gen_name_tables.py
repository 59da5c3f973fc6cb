"""Writes name_tables.inc (request_parse.cc): python3 gen_name_tables.py > name_tables.inc"""
import sys, unicodedata as ud

def ranges(pred):
    out, start, prev = [], None, None
    for cp in range(0x110000):
        v = pred(cp)
        if v:
            if start is None or v != prev_v or cp != prev + 1:
                if start is not None: out.append((start, prev, prev_v))
                start, prev_v = cp, v
            prev = cp
        # close run on gap handled above
    if start is not None: out.append((start, prev, prev_v))
    return out

def ranges_val(f):
    out = []
    cur = None
    for cp in range(0x110000):
        v = f(cp)
        if v:
            if cur and cur[2] == v and cur[1] == cp - 1:
                cur[1] = cp
            else:
                if cur: out.append(tuple(cur))
                cur = [cp, cp, v]
    if cur: out.append(tuple(cur))
    return out

# NFC_QC = No: the character never survives NFC.  Maybe: it can be the second half of a primary composite.
no = set(cp for cp in range(0x110000) if not (0xD800 <= cp <= 0xDFFF) and ud.normalize('NFC', chr(cp)) != chr(cp))
maybe = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))
for cp in range(0x110000):
    if 0xD800 <= cp <= 0xDFFF: continue
    d = ud.decomposition(chr(cp))
    if not d or d.startswith('<'): continue
    parts = [int(x, 16) for x in d.split()]
    if len(parts) == 2 and ud.normalize('NFC', chr(parts[0]) + chr(parts[1])) == chr(cp):
        maybe.add(parts[1])
maybe -= no
bad_cat = {'Cc', 'Cf', 'Cs', 'Co', 'Cn', 'Zl', 'Zp'}
di = [(0xAD,0xAD),(0x34F,0x34F),(0x61C,0x61C),(0x115F,0x1160),(0x17B4,0x17B5),(0x180B,0x180F),(0x200B,0x200F),
      (0x202A,0x202E),(0x2060,0x206F),(0x3164,0x3164),(0xFE00,0xFE0F),(0xFEFF,0xFEFF),(0xFFA0,0xFFA0),
      (0xFFF0,0xFFF8),(0x1BCA0,0x1BCA3),(0x1D173,0x1D17A),(0xE0000,0xE0FFF)]
def in_di(cp): return any(a <= cp <= b for a, b in di)
def refused(cp):
    return ud.category(chr(cp)) in bad_cat or in_di(cp) or (0xFDD0 <= cp <= 0xFDEF) or (cp & 0xFFFE) == 0xFFFE
space = lambda cp: ud.category(chr(cp)) == 'Zs' or chr(cp).isspace()

def emit(name, rs, with_val=False):
    print(f"constexpr CodeRange {name}[] = {{")
    line = " "
    for a, b, v in rs:
        item = f" {{0x{a:X}, 0x{b:X}, {v if with_val else 0}}},"
        if len(line) + len(item) > 100:
            print(line); line = " "
        line += item
    print(line); print("};")

print(f"// Generated from Python {sys.version.split()[0]}'s unicodedata (Unicode {ud.unidata_version}) by")
print("// src/reel/serve/gen_name_tables.py; do not edit by hand. Each table is sorted, ranges inclusive.")
emit("kRefused", ranges_val(lambda cp: 1 if (not 0xD800 <= cp <= 0xDFFF) and refused(cp) else 0))
emit("kNotNfc", ranges_val(lambda cp: 1 if cp in no or cp in maybe else 0))
emit("kCombiningClass", ranges_val(lambda cp: 0 if 0xD800 <= cp <= 0xDFFF else ud.combining(chr(cp))), True)
emit("kSpace", ranges_val(lambda cp: 1 if space(cp) else 0))
