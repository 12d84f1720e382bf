# SPDX-License-Identifier: Apache-2.0
"""Both model-file readers give the same verdict on a corpus of hostile files (issue 12 item 8).

The corpus is written to a temporary folder: a small valid vit5 file (tests/fuzz/corpus/vit5_nvsubq.vkvit) and a
resnet one, each mutated once per case: framing (lengths, truncation), JSON strictness (duplicate keys at every level,
U+0000, raw control characters, invalid UTF-8, lone surrogates, number grammar, nesting depth, trailing bytes),
the safetensors rules (dtype, shape, data_offsets, overlap, sizes) and the vkvit entry (duplicates, NUL, limits,
integral values written as 8.0).  Each file is read by

  * tools/vkvit_file.py: read_safetensors and read_model (accept, or FormatError; any other exception fails),
  * the C reader: build/reader_verdict (safetensors layer and whole model) and `build/vkvit inspect FILE`
    (exit 0 accept, 2 refuse),

and every case states the verdict it expects, so the test fails when the readers disagree with each other or with
docs/model-format.md.

Then both readers describe every model file the project ships (tests/golden/models/*.vkvit, assets/models/*.vkvit,
tests/fuzz/corpus/*.vkvit): `vkvit inspect --json FILE` (the public vkvit_describe_model) and
tools/vkvit_file.py describe(FILE) must give the same JSON document, member for member and in the same order:
architecture, flavour, hyperparameters (derived ones included), labels, pre-processing, parameter count, FLOPs and
their breakdown, and the tensor table; and vkvit_file.expected_tensors (the Python schema's table) must list exactly
the tensors the C reader accepted.  No GPU needed.
"""

import glob
import json
import os
import stat
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: cli_checks
import cli_checks as cc  # noqa: E402

sys.path.insert(0, os.path.join(cc.ROOT, "tools"))
import vkvit_file as vf  # noqa: E402

VERDICT = os.path.join(cc.BUILD, "reader_verdict")
ACCEPT, REFUSE = "accept", "refuse"


def load(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n]), raw[8 + n:]


VIT5_HDR, VIT5_DATA = load(os.path.join(cc.ROOT, "tests/fuzz/corpus/vit5_nvsubq.vkvit"))
RN_HDR, RN_DATA = load(os.path.join(cc.ROOT, "tests/fuzz/corpus/resnet_generic.vkvit"))
VIT5_DOC = json.loads(VIT5_HDR["__metadata__"]["vkvit"])
RN_DOC = json.loads(RN_HDR["__metadata__"]["vkvit"])


def dumps(v):
    return json.dumps(v, separators=(",", ":"))


def frame(text, data=VIT5_DATA, n=None):
    if isinstance(text, str):
        text = text.encode("utf-8")
    return struct.pack("<Q", len(text) if n is None else n) + text + data


def header_text(hdr=VIT5_HDR, doc_text=None, entry=None, meta_extra="", top_extra=""):
    """The header as text. doc_text replaces the vkvit entry (a JSON text, written as a JSON string); entry maps a
    tensor name to raw JSON text for its entry; meta_extra / top_extra are raw members appended to __metadata__ /
    the top-level object (each starting with ',')."""
    parts = []
    for name, e in hdr.items():
        if name == "__metadata__":
            meta = dict(e)
            if doc_text is not None:
                meta["vkvit"] = doc_text
            parts.append(dumps(name) + ":{" + ",".join(dumps(k) + ":" + dumps(v) for k, v in meta.items())
                         + meta_extra + "}")
        else:
            parts.append(dumps(name) + ":" + (entry or {}).get(name, dumps(e)))
    return "{" + ",".join(parts) + top_extra + "}"


def entry(name, hdr=VIT5_HDR, **raw):
    """A tensor entry as raw JSON text with some members replaced by raw text (None drops the member)."""
    members = {k: dumps(v) for k, v in hdr[name].items()}
    for k, v in raw.items():
        if v is None:
            members.pop(k, None)
        else:
            members[k] = v
    return "{" + ",".join(dumps(k) + ":" + v for k, v in members.items()) + "}"


def doc(base=VIT5_DOC, **over):
    d = json.loads(json.dumps(base))
    for path, v in over.items():
        keys = path.split("__")
        at = d
        for k in keys[:-1]:
            at = at[k]
        at[keys[-1]] = v
    return dumps(d)


def cases():
    """(name, file bytes, expected safetensors verdict, expected model verdict)."""
    good = frame(header_text())
    yield "valid_vit5", good, ACCEPT, ACCEPT
    yield "valid_resnet", frame(header_text(RN_HDR), RN_DATA), ACCEPT, ACCEPT

    # Framing.
    yield "empty_file", b"", REFUSE, REFUSE
    yield "seven_bytes", b"\x02\0\0\0\0\0\0", REFUSE, REFUSE
    yield "header_length_0", frame("{}", b"", n=0), REFUSE, REFUSE
    yield "header_length_1", frame("{}", b"", n=1), REFUSE, REFUSE
    yield "header_length_huge", frame("{}", b"", n=2**64 - 1), REFUSE, REFUSE
    yield "header_length_100MiB_plus_1", frame("{}", b"", n=100 * 2**20 + 1), REFUSE, REFUSE
    yield "header_length_past_end", frame("{}", b"", n=3), REFUSE, REFUSE
    n = len(header_text().encode())
    for cut in (9, 8 + n // 2, 8 + n - 1, 8 + n, 8 + n + 1, len(good) - 1):
        yield f"truncated_at_{cut}", good[:cut], REFUSE, REFUSE
    yield "trailing_data_bytes", good + b"\0" * 16, ACCEPT, ACCEPT
    yield "empty_object", frame("{}", b""), ACCEPT, REFUSE
    yield "header_array", frame("[]", b""), REFUSE, REFUSE
    yield "header_null", frame("null", b""), REFUSE, REFUSE
    yield "header_spaces", frame("  ", b""), REFUSE, REFUSE
    yield "header_bom", frame(b"\xef\xbb\xbf{}", b""), REFUSE, REFUSE
    text = header_text()
    yield "leading_and_trailing_whitespace", frame(" \t\r\n" + text + " \n\t\r "), ACCEPT, ACCEPT
    yield "trailing_form_feed", frame(text + "\f"), REFUSE, REFUSE
    yield "trailing_vertical_tab", frame(text + "\v"), REFUSE, REFUSE
    yield "trailing_nul_byte", frame(text.encode() + b"\0"), REFUSE, REFUSE
    yield "two_objects", frame(text + "{}"), REFUSE, REFUSE
    yield "trailing_comma", frame(text[:-1] + ",}"), REFUSE, REFUSE
    yield "single_quotes", frame("{'a':1}", b""), REFUSE, REFUSE
    yield "comment", frame("{/*x*/}", b""), REFUSE, REFUSE
    yield "bare_word", frame("{\"a\":tru}", b""), REFUSE, REFUSE

    # Duplicate keys at every level.
    pe = dumps(VIT5_HDR["pos_embed"])
    yield "dup_tensor_name", frame(header_text(top_extra=',"pos_embed":' + pe)), REFUSE, REFUSE
    yield "dup_metadata", frame(header_text(top_extra=',"__metadata__":{}')), REFUSE, REFUSE
    yield "dup_key_in_entry_same_value", frame(header_text(entry={"pos_embed": entry(
        "pos_embed", dtype='"F32","dtype":"F32"')})), REFUSE, REFUSE
    yield "dup_key_in_entry_other_value", frame(header_text(entry={"pos_embed": entry(
        "pos_embed", shape='[1,4,8],"shape":[128]')})), REFUSE, REFUSE
    yield "dup_key_in_entry_by_escape", frame(header_text(entry={"pos_embed": entry(
        "pos_embed", dtype='"F32","d\\u0074ype":"F32"')})), REFUSE, REFUSE
    yield "dup_key_in_ignored_entry_member", frame(header_text(entry={"pos_embed": entry(
        "pos_embed", extra='{"a":1,"a":1}')})), REFUSE, REFUSE
    yield "dup_key_in_metadata", frame(header_text(meta_extra=',"x":"1","x":"2"')), REFUSE, REFUSE
    yield "dup_tensor_name_by_escape", frame(header_text(top_extra=',"pos\\u005fembed":' + pe)), REFUSE, REFUSE
    yield "distinct_keys_differing_in_case", frame(header_text(meta_extra=',"x":"1","X":"2"')), ACCEPT, ACCEPT

    # U+0000, control characters, UTF-8, surrogates.
    yield "dtype_f32_nul", frame(header_text(entry={"pos_embed": entry("pos_embed", dtype='"F32\\u0000"')})), \
        REFUSE, REFUSE
    yield "tensor_name_with_nul", frame(header_text(top_extra=',"zz\\u0000":{"dtype":"F32","shape":[0],'
                                                    '"data_offsets":[0,0]}')), REFUSE, REFUSE
    yield "metadata_value_with_nul", frame(header_text(meta_extra=',"x":"a\\u0000b"')), REFUSE, REFUSE
    yield "metadata_key_with_nul", frame(header_text(meta_extra=',"x\\u0000":"a"')), REFUSE, REFUSE
    t = header_text(meta_extra=',"x":"a_b"').encode()
    yield "raw_nul_in_string", frame(t.replace(b'"a_b"', b'"a\x00b"')), REFUSE, REFUSE
    yield "raw_control_in_string", frame(t.replace(b'"a_b"', b'"a\x01b"')), REFUSE, REFUSE
    yield "raw_tab_in_string", frame(t.replace(b'"a_b"', b'"a\tb"')), REFUSE, REFUSE
    yield "raw_del_in_string", frame(t.replace(b'"a_b"', b'"a\x7fb"')), ACCEPT, ACCEPT
    yield "escaped_control_in_string", frame(header_text(meta_extra=',"x":"a\\u0001\\t\\n\\/"')), ACCEPT, ACCEPT
    yield "invalid_escape", frame(header_text(meta_extra=',"x":"a\\qb"')), REFUSE, REFUSE
    yield "short_u_escape", frame(header_text(meta_extra=',"x":"a\\u12"')), REFUSE, REFUSE
    yield "byte_ff_in_string", frame(t.replace(b'"a_b"', b'"a\xffb"')), REFUSE, REFUSE
    yield "overlong_utf8", frame(t.replace(b'"a_b"', b'"a\xc0\xafb"')), REFUSE, REFUSE
    yield "utf8_encoded_surrogate", frame(t.replace(b'"a_b"', b'"a\xed\xa0\x80b"')), REFUSE, REFUSE
    yield "utf8_above_10ffff", frame(t.replace(b'"a_b"', b'"a\xf4\x90\x80\x80b"')), REFUSE, REFUSE
    yield "utf8_truncated", frame(t.replace(b'"a_b"', b'"a\xe2\x82"')), REFUSE, REFUSE
    yield "utf8_valid", frame(t.replace(b'"a_b"', "\"caf\u00e9 \u20ac \U0001F600\"".encode())), ACCEPT, ACCEPT
    yield "lone_high_surrogate", frame(header_text(meta_extra=',"x":"\\ud800"')), REFUSE, REFUSE
    yield "lone_low_surrogate", frame(header_text(meta_extra=',"x":"\\udc00x"')), REFUSE, REFUSE
    yield "reversed_surrogates", frame(header_text(meta_extra=',"x":"\\udc00\\ud800"')), REFUSE, REFUSE
    yield "surrogate_pair", frame(header_text(meta_extra=',"x":"\\ud83d\\ude00"')), ACCEPT, ACCEPT
    yield "non_utf8_outside_strings", frame(t.replace(b'"a_b"', b"\xe9")), REFUSE, REFUSE

    # Numbers.
    def shape(raw, name="pos_embed"):
        return frame(header_text(entry={name: entry(name, shape=raw)}))

    def extra(raw):
        return frame(header_text(entry={"pos_embed": entry("pos_embed", extra=raw)}))

    yield "shape_leading_zero", shape("[1,04,8]"), REFUSE, REFUSE
    yield "shape_3_0", shape("[1,4.0,8]"), REFUSE, REFUSE
    yield "shape_exponent", shape("[1,4e0,8]"), REFUSE, REFUSE
    yield "shape_negative", shape("[1,-4,8]"), REFUSE, REFUSE
    yield "shape_minus_zero", frame(header_text(top_extra=',"zz":{"dtype":"F32","shape":[-0],"data_offsets":[0,0]}')), \
        ACCEPT, REFUSE
    yield "shape_plus", shape("[1,+4,8]"), REFUSE, REFUSE
    yield "shape_trailing_dot", shape("[1,4.,8]"), REFUSE, REFUSE
    yield "shape_string", shape('[1,"4",8]'), REFUSE, REFUSE
    yield "shape_bool", shape("[1,true,8]"), REFUSE, REFUSE
    yield "shape_nine_dims", shape("[1,1,1,1,1,1,1,4,8]"), REFUSE, REFUSE
    yield "shape_eight_dims", shape("[1,1,1,1,1,1,4,8]"), ACCEPT, REFUSE
    yield "shape_not_array", shape('{"0":1}'), REFUSE, REFUSE
    yield "shape_missing", frame(header_text(entry={"pos_embed": entry("pos_embed", shape=None)})), REFUSE, REFUSE
    empty = ',"zz":{"dtype":"F32","shape":[0,%s],"data_offsets":[0,0]}'
    yield "empty_tensor_2_53_minus_1", frame(header_text(top_extra=empty % (2**53 - 1))), ACCEPT, REFUSE
    yield "empty_tensor_2_53", frame(header_text(top_extra=empty % 2**53)), REFUSE, REFUSE
    yield "empty_tensor_2_53_plus_1", frame(header_text(top_extra=empty % (2**53 + 1))), REFUSE, REFUSE
    yield "empty_tensor_2_64", frame(header_text(top_extra=empty % 2**64)), REFUSE, REFUSE
    yield "shape_product_overflows", frame(header_text(top_extra=',"zz":{"dtype":"F32","shape":[4294967296,'
                                                       '4294967296,4294967296],"data_offsets":[0,0]}')), REFUSE, REFUSE
    yield "extra_member_float", extra("1.5"), ACCEPT, ACCEPT
    yield "extra_member_huge_exponent", extra("1e400"), ACCEPT, ACCEPT
    yield "extra_member_32_chars", extra("1." + "0" * 30), ACCEPT, ACCEPT
    yield "extra_member_33_chars", extra("1." + "0" * 31), REFUSE, REFUSE
    yield "extra_member_5000_digits", extra("1" * 5000), REFUSE, REFUSE
    yield "extra_member_nan", extra("NaN"), REFUSE, REFUSE
    yield "extra_member_infinity", extra("-Infinity"), REFUSE, REFUSE
    yield "extra_member_minus_alone", extra("-"), REFUSE, REFUSE
    yield "extra_member_dot5", extra(".5"), REFUSE, REFUSE
    yield "extra_member_exponent_no_digits", extra("1e+"), REFUSE, REFUSE

    # Nesting: the header object is level 1, a tensor entry level 2.
    yield "depth_64", extra("[" * 62 + "]" * 62), ACCEPT, ACCEPT
    yield "depth_65", extra("[" * 63 + "]" * 63), REFUSE, REFUSE
    yield "depth_100000", extra("[" * 100000 + "]" * 100000), REFUSE, REFUSE
    yield "depth_objects_65", extra('{"a":' * 63 + "1" + "}" * 63), REFUSE, REFUSE
    yield "nested_junk_accepted", extra('{"a":[1,{"b":[true,false,null,"x"]}],"c":{}}'), ACCEPT, ACCEPT

    # dtype.
    def dtype(raw):
        return frame(header_text(entry={"pos_embed": entry("pos_embed", dtype=raw)}))

    for name, raw in (("f64", '"F64"'), ("lowercase", '"f32"'), ("number", "32"), ("list", '["F32"]'),
                      ("object", '{"F32":1}'), ("null", "null"), ("space", '" F32"'), ("f16_size_mismatch", '"F16"')):
        yield f"dtype_{name}", dtype(raw), REFUSE, REFUSE
    yield "dtype_missing", frame(header_text(entry={"pos_embed": entry("pos_embed", dtype=None)})), REFUSE, REFUSE

    # data_offsets.
    b, e = VIT5_HDR["pos_embed"]["data_offsets"]

    def offs(raw):
        return frame(header_text(entry={"pos_embed": entry("pos_embed", data_offsets=raw)}))

    for name, raw in (("one", f"[{b}]"), ("three", f"[{b},{e},{e}]"), ("negative", f"[-1,{e}]"),
                      ("float", f"[{b}.0,{e}]"), ("exponent", f"[{b},{e}e0]"), ("strings", f'["{b}","{e}"]'),
                      ("reversed", f"[{e},{b}]"), ("past_end", f"[{len(VIT5_DATA)},{len(VIT5_DATA) + e - b}]"),
                      ("size_mismatch", f"[{b},{e - 4}]"), ("overlap", f"[{b - 4},{e - 4}]"), ("null", "null"),
                      ("huge", f"[{2**64},{2**64 + e - b}]")):
        yield f"offsets_{name}", offs(raw), REFUSE, REFUSE
    yield "offsets_missing", frame(header_text(entry={"pos_embed": entry("pos_embed", data_offsets=None)})), \
        REFUSE, REFUSE
    yield "empty_tensor_inside_another", frame(header_text(top_extra=f',"zz":{{"dtype":"F32","shape":[0],'
                                                           f'"data_offsets":[{b + 4},{b + 4}]}}')), ACCEPT, REFUSE
    yield "entry_not_object", frame(header_text(entry={"pos_embed": "[1]"})), REFUSE, REFUSE

    # __metadata__.
    yield "metadata_not_object", frame(dumps({**VIT5_HDR, "__metadata__": [VIT5_HDR["__metadata__"]]})), \
        REFUSE, REFUSE
    yield "metadata_value_number", frame(header_text(meta_extra=',"x":5')), REFUSE, REFUSE
    yield "metadata_value_null", frame(header_text(meta_extra=',"x":null')), REFUSE, REFUSE
    no_meta = {k: v for k, v in VIT5_HDR.items() if k != "__metadata__"}
    yield "no_metadata", frame(header_text(no_meta)), ACCEPT, REFUSE
    yield "metadata_without_vkvit", frame(header_text(doc_text=None, meta_extra="").replace(
        '"vkvit":', '"vkvix":')), ACCEPT, REFUSE

    # The vkvit entry.
    def vk(text, hdr=VIT5_HDR, data=VIT5_DATA):
        return frame(header_text(hdr, doc_text=text), data)

    vtext = doc()
    yield "vkvit_not_json", vk("{not json"), ACCEPT, REFUSE
    yield "vkvit_trailing_text", vk(vtext + " x"), ACCEPT, REFUSE
    yield "vkvit_trailing_space", vk(vtext + " \n"), ACCEPT, ACCEPT
    yield "vkvit_array", vk("[1]"), ACCEPT, REFUSE
    yield "vkvit_dup_root_key", vk(vtext[:-1] + ',"architecture":"vit5"}'), ACCEPT, REFUSE
    yield "vkvit_dup_config_key", vk(vtext.replace('"dim":8', '"dim":8,"dim":8')), ACCEPT, REFUSE
    yield "vkvit_dup_bias_key", vk(vtext.replace('"qkv":true', '"qkv":true,"qkv":true')), ACCEPT, REFUSE
    yield "vkvit_dup_preprocess_key", vk(vtext.replace('"resize_shorter":8', '"resize_shorter":8,'
                                                       '"resize_shorter":8')), ACCEPT, REFUSE
    yield "vkvit_dup_ignored_root_object", vk(vtext[:-1] + ',"extra":{"a":1,"a":2}}'), ACCEPT, REFUSE
    yield "vkvit_ignored_root_object", vk(vtext[:-1] + ',"extra":{"a":[1,2.5,{"b":null}]}}'), ACCEPT, ACCEPT
    rtext = doc(RN_DOC)
    yield "vkvit_dup_resnet_block_key", vk(rtext.replace('"mlp_norm":', '"mlp_norm":{"type":"identity"},'
                                                         '"mlp_norm":', 1), RN_HDR, RN_DATA), ACCEPT, REFUSE
    yield "vkvit_architecture_nul", vk(vtext.replace('"vit5"', '"vit5\\u0000"')), ACCEPT, REFUSE
    yield "vkvit_flavour_nul", vk(vtext.replace('"nvsubq"', '"nvsubq\\u0000x"')), ACCEPT, REFUSE
    yield "vkvit_label_nul", vk(vtext.replace('"cat"', '"c\\u0000t"')), ACCEPT, REFUSE
    yield "vkvit_name_lone_surrogate", vk(vtext.replace('"seed-nvsubq"', '"\\udead"')), ACCEPT, REFUSE
    yield "vkvit_name_unicode", vk(vtext.replace('"seed-nvsubq"', '"caf\\u00e9 \\ud83d\\ude00"')), ACCEPT, ACCEPT
    yield "vkvit_raw_control", vk(vtext.replace('"seed-nvsubq"', '"a\x01b"')), ACCEPT, REFUSE
    yield "vkvit_depth_64", vk(vtext[:-1] + ',"extra":' + "[" * 63 + "]" * 63 + "}"), ACCEPT, ACCEPT
    yield "vkvit_depth_65", vk(vtext[:-1] + ',"extra":' + "[" * 64 + "]" * 64 + "}"), ACCEPT, REFUSE
    yield "vkvit_long_number", vk(vtext.replace('"dim":8', '"dim":8.' + "0" * 31)), ACCEPT, REFUSE
    yield "vkvit_nan", vk(vtext.replace('"norm_eps":1e-06', '"norm_eps":NaN')), ACCEPT, REFUSE
    yield "vkvit_leading_zero", vk(vtext.replace('"dim":8', '"dim":08')), ACCEPT, REFUSE
    # Inside the vkvit entry a number is its value (docs/model-format.md): 8.0 and 8e0 are the integer 8.
    yield "vkvit_dim_8_0", vk(vtext.replace('"dim":8', '"dim":8.0')), ACCEPT, ACCEPT
    yield "vkvit_dim_0_8e1", vk(vtext.replace('"dim":8', '"dim":0.8e1')), ACCEPT, ACCEPT
    yield "vkvit_dim_8_5", vk(vtext.replace('"dim":8', '"dim":8.5')), ACCEPT, REFUSE
    yield "vkvit_format_version_1_0", vk(doc(format_version=1.0).replace('"format_version":1,',
                                                                         '"format_version":1.0,')), ACCEPT, ACCEPT
    yield "vkvit_format_version_2", vk(doc(format_version=2)), ACCEPT, REFUSE
    yield "vkvit_format_version_true", vk(doc(format_version=True)), ACCEPT, REFUSE
    yield "vkvit_dim_bool", vk(doc(config__depth=True)), ACCEPT, REFUSE
    yield "vkvit_depth_string", vk(doc(config__depth="1")), ACCEPT, REFUSE
    yield "vkvit_classes_above_limit", vk(doc(config__num_classes=65537)), ACCEPT, REFUSE
    yield "vkvit_image_above_limit", vk(doc(config__image_size=[8192 + 4, 8])), ACCEPT, REFUSE
    yield "vkvit_resize_above_limit", vk(doc(preprocess__resize_shorter=8193)), ACCEPT, REFUSE
    yield "vkvit_unknown_config_key", vk(doc(config__dimm=8)), ACCEPT, REFUSE
    yield "vkvit_unknown_preprocess_key", vk(doc(preprocess__extra=1)), ACCEPT, ACCEPT
    yield "vkvit_unknown_root_key", vk(doc(extra="x")), ACCEPT, ACCEPT
    yield "vkvit_labels_count", vk(doc(labels=["cat"])), ACCEPT, REFUSE
    yield "vkvit_labels_number", vk(doc(labels=["cat", 1])), ACCEPT, REFUSE
    yield "vkvit_no_labels", vk(json.dumps({k: v for k, v in VIT5_DOC.items() if k != "labels"})), ACCEPT, ACCEPT
    yield "vkvit_no_preprocess", vk(json.dumps({k: v for k, v in VIT5_DOC.items() if k != "preprocess"})), \
        ACCEPT, REFUSE
    yield "vkvit_std_zero", vk(doc(preprocess__std=[0.2, 0, 0.2])), ACCEPT, REFUSE
    yield "vkvit_mean_inf", vk(doc(preprocess__mean=[0.5, 0.5, 0.5]).replace("[0.5,0.5,0.5]", "[0.5,1e999,0.5]")), \
        ACCEPT, REFUSE
    # fp32 turns these into 0 or inf and every logit into NaN (found by a hostile-input sweep, 2026-11-27)
    yield "vkvit_std_denormal", vk(doc(preprocess__std=[0.2, 1e-45, 0.2])), ACCEPT, REFUSE
    yield "vkvit_std_tiny", vk(doc(preprocess__std=[1e-300, 0.2, 0.2])), ACCEPT, REFUSE
    yield "vkvit_std_huge", vk(doc(preprocess__std=[0.2, 0.2, 1e300])), ACCEPT, REFUSE
    yield "vkvit_mean_huge", vk(doc(preprocess__mean=[1e300, 0.5, 0.5])), ACCEPT, REFUSE
    yield "vkvit_std_255", vk(doc(preprocess__mean=[123.7, 116.3, 103.5], preprocess__std=[58.4, 57.1, 57.4])), \
        ACCEPT, ACCEPT
    yield "vkvit_std_1_over_255", vk(doc(preprocess__std=[1 / 255, 1 / 255, 1 / 255])), ACCEPT, ACCEPT
    yield "vkvit_eps_zero", vk(doc(config__norm_eps=0)), ACCEPT, REFUSE
    yield "vkvit_eps_huge", vk(doc(config__norm_eps=1e300)), ACCEPT, REFUSE
    yield "vkvit_eps_one", vk(doc(config__qk_norm_eps=1.0)), ACCEPT, ACCEPT
    yield "vkvit_rope_base_tiny", vk(doc(config__rope_base=1e-300)), ACCEPT, REFUSE
    yield "vkvit_rope_base_huge", vk(doc(config__reg_rope_base=1e300)), ACCEPT, REFUSE
    yield "vkvit_flavour_rule", vk(doc(flavour="paper")), ACCEPT, REFUSE
    yield "vkvit_heads_not_dividing", vk(doc(config__num_heads=3)), ACCEPT, REFUSE


def python_verdict(fn, path):
    try:
        fn(path)
        return ACCEPT, "ok"
    except vf.FormatError as e:
        return REFUSE, str(e)


def main():
    if not os.path.exists(VERDICT):
        print(f"FAIL: {VERDICT} is missing (build the tests first)")
        return 1
    with tempfile.TemporaryDirectory(prefix="vkvit-agree-") as tmp:
        corpus = list(cases())
        names = [c[0] for c in corpus]
        cc.check(len(set(names)) == len(names), "case names are unique")
        paths = []
        for name, blob, _, _ in corpus:
            p = os.path.join(tmp, name + ".vkvit")
            with open(p, "wb") as f:
                f.write(blob)
            paths.append(p)
        out = subprocess.run([VERDICT] + paths, capture_output=True, text=True, timeout=300)
        lines = out.stdout.splitlines()
        cc.check(out.returncode == 0 and len(lines) == len(paths),
                 f"reader_verdict ran on every file (exit {out.returncode}, {len(lines)} lines): {out.stderr[-500:]}")
        for (name, _, want_st, want_model), path, line in zip(corpus, paths, lines):
            c_st, c_model, sentence = line.split(" ", 2)
            c_st = ACCEPT if c_st == "0" else REFUSE
            c_model = ACCEPT if c_model == "0" else REFUSE
            try:
                py_st, py_st_msg = python_verdict(vf.read_safetensors, path)
                py_model, py_msg = python_verdict(vf.read_model, path)
            except Exception as e:  # anything but FormatError is a bug in the Python reader
                cc.check(False, f"{name}: the Python reader raised {type(e).__name__}: {e}")
                continue
            code, _, err = cc.run(["inspect", path], timeout=60)
            cli = {0: ACCEPT, 2: REFUSE}.get(code, f"exit {code}")
            detail = f"C: {sentence} | Python: {py_msg if py_model == REFUSE else py_st_msg}"
            cc.check(c_st == py_st == want_st,
                     f"{name}: safetensors verdicts C {c_st}, Python {py_st}, expected {want_st} ({detail})")
            cc.check(c_model == py_model == cli == want_model,
                     f"{name}: model verdicts C {c_model}, Python {py_model}, vkvit inspect {cli}, expected "
                     f"{want_model} ({detail})")
            if cli == REFUSE:
                cc.check(err.strip().count("\n") == 0 and err.strip() != "",
                         f"{name}: vkvit inspect printed one sentence: {err.strip()[:300]!r}")
        print(f"{len(corpus)} files in the corpus")

        # Special files: refused at once by both readers and by `vkvit inspect` (a FIFO used to block forever).
        fifo = os.path.join(tmp, "fifo.vkvit")
        os.mkfifo(fifo)
        # (/dev/zero and /dev/null only where they are the devices: a shared machine may have had one replaced.)
        devices = [d for d in ("/dev/zero", "/dev/null") if stat.S_ISCHR(os.stat(d).st_mode)]
        for path in [fifo] + devices + [tmp]:
            try:
                code, _, err = cc.run(["inspect", path], timeout=20)
            except subprocess.TimeoutExpired:
                code, err = "timeout", ""
            cc.check(code == 2 and "vkvit reads only regular files" in err,
                     f"vkvit inspect {path}: exit {code}, {err.strip()[:200]!r}")
            try:
                vf.read_model(path)
                verdict = ACCEPT
            except vf.FormatError as e:
                verdict = REFUSE if "not a regular file" in str(e) else f"FormatError {e}"
            cc.check(verdict == REFUSE, f"vkvit_file.read_model({path}): {verdict}")
        out = subprocess.run([VERDICT, fifo, tmp], capture_output=True, text=True, timeout=20)
        cc.check(out.stdout.count("vkvit reads only regular files") == 2, f"reader_verdict: {out.stdout!r}")
    describe_agreement()
    return cc.summary()


def _plain(x):
    """A parsed JSON value with integral floats as ints (C's cJSON prints 10000.0 as 10000), booleans kept apart."""
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_plain(v) for v in x]
    return x


def _first_difference(a, b, where=""):
    """Where two JSON values first differ (type, key order, value), for the failure sentence."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return f"{where or 'the document'} has members {list(a)} in C, {list(b)} in Python"
        for k in a:
            d = _first_difference(a[k], b[k], f"{where}.{k}" if where else k)
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            d = _first_difference(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    if type(a) is not type(b) or a != b:
        return f"{where}: C {json.dumps(a)[:200]}, Python {json.dumps(b)[:200]}"
    return None


def describe_agreement():
    """vkvit_describe_model (C) and vkvit_file.describe (Python) agree on every shipped model file."""
    files = sorted(glob.glob(os.path.join(cc.ROOT, pattern)) for pattern in (
        "tests/golden/models/*.vkvit", "assets/models/*.vkvit", "tests/fuzz/corpus/*.vkvit"))
    files = [f for group in files for f in group]
    cc.check(len(files) >= 15, f"found the golden, bundled and corpus model files ({len(files)})")
    archs = set()
    for path in files:
        name = os.path.relpath(path, cc.ROOT)
        code, out, err = cc.run(["inspect", "--json", path], timeout=60)
        cc.check(code == 0, f"{name}: vkvit inspect --json exit {code}: {err.strip()[:300]}")
        if code != 0:
            continue
        c_doc = _plain(json.loads(out))
        try:
            py_doc = _plain(vf.describe(path))
        except vf.FormatError as e:
            cc.check(False, f"{name}: the Python reader refuses a file the C reader accepts: {e}")
            continue
        diff = _first_difference(c_doc, py_doc)
        cc.check(diff is None, f"{name}: the descriptions differ: {diff}")
        # The Python schema's tensor table is exactly the file's, which the C reader checked against its own table.
        _, doc = vf.read_model(path)
        table = [{"name": k, "shape": list(v)} for k, v in sorted(vf.expected_tensors(doc).items())]
        listed = [{"name": t["name"], "shape": t["shape"]} for t in c_doc["tensors"]["list"]]
        cc.check(table == listed, f"{name}: vkvit_file.expected_tensors differs from the C reader's tensor list")
        cc.check(c_doc["params"] == vf.count_params(doc) and c_doc["flops"] == vf.flops(doc),
                 f"{name}: params / FLOPs C {c_doc['params']} / {c_doc['flops']}, Python {vf.count_params(doc)} / "
                 f"{vf.flops(doc)}")
        archs.add((c_doc["architecture"], c_doc["flavour"]))
    want = {(a, f) for a, row in vf.ARCHS.items() for f in row.flavours}
    cc.check(archs == want, f"the files cover every architecture and flavour: {sorted(archs)} of {sorted(want)}")
    print(f"{len(files)} model files described by both readers")


if __name__ == "__main__":
    sys.exit(main())
