/* vkvit inspect FILE [--json]: what a model file holds — architecture, shapes, parameters, FLOPs, classes,
 * preprocessing, dtypes. Everything comes from vkvit_describe_model (include/vkvit.h), which reads and validates
 * the whole file without a device; --json prints its document as it is, the text is rendered from it. */
#include "cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOW_LABELS 5

static void usage(FILE *f) {
    fprintf(f,
            "usage: vkvit inspect FILE [--json]\n"
            "\n"
            "Reads a vkvit model file (safetensors + `vkvit` metadata, docs/model-format.md), checks its header\n"
            "and every tensor's dtype, shape and byte range (the weight values are checked when a model is loaded)\n"
            "and describes it: architecture and flavour, input size, patch grid and token count, width / depth /\n"
            "heads, parameter count, FLOPs per image (the seed flop_count formulas, as docs/model-format.md lists\n"
            "them per architecture), classes and labels (the first %d in text, all in JSON), preprocessing\n"
            "(docs/preprocessing.md), the dtype mix and the file size. No GPU is used. A file that is not a\n"
            "model is named by what it looks like (an image, a PyTorch checkpoint, ...).\n"
            "\n"
            "options:\n"
            "  --json       print one JSON object instead of text (default: text)\n"
            "  -h, --help   this help\n"
            "\n"
            "exit codes: 0 success, 1 usage error, 2 bad, unreadable or unsupported model file (the reason is one\n"
            "sentence on stderr), 4 out of memory, an internal inconsistency, or the output could not be written\n",
            SHOW_LABELS);
}

/* 9412799616 -> "9,412,799,616" */
static const char *thousands(uint64_t v, char *buf, size_t cap) {
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
    size_t at = 0;
    for (int i = 0; i < n && at + 2 < cap; i++) {
        if (i > 0 && (n - i) % 3 == 0) buf[at++] = ',';
        buf[at++] = digits[i];
    }
    buf[at] = '\0';
    return buf;
}

/* Field access on the description (a missing field reads as 0 / "" / false: the document is vkvit's own). */
static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}
static uint32_t u32(const cJSON *o, const char *key) { return (uint32_t)num(o, key); }
static uint64_t u64(const cJSON *o, const char *key) { return (uint64_t)num(o, key); }
static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}
static bool flag(const cJSON *o, const char *key) { return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key)); }
static const cJSON *obj(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }
static uint32_t at(const cJSON *o, const char *key, int i) {
    const cJSON *v = cJSON_GetArrayItem(obj(o, key), i);
    return cJSON_IsNumber(v) ? (uint32_t)v->valuedouble : 0;
}
static const char *yn(bool b) { return b ? "yes" : "no"; }

/* "rmsnorm (eps 1e-06)", "layernorm (eps 1e-05, bias)", "identity" (no norm) */
static const char *norm_text(const cJSON *n, char *buf, size_t cap) {
    const char *kind = str(n, "kind");
    if (!strcmp(kind, "identity")) snprintf(buf, cap, "identity");
    else snprintf(buf, cap, "%s (eps %g%s)", kind, num(n, "eps"),
                  !strcmp(kind, "layernorm") && flag(n, "bias") ? ", bias" : "");
    return buf;
}

static void print_text(const cJSON *d) {
    char a[32], b[32], c3[32], c4[32];
    const char *arch = str(d, "architecture"), *flavour = str(d, "flavour");
    uint32_t classes = u32(d, "num_classes");
    printf("file           ");
    cli_put_clean(stdout, str(d, "file"), 300);
    printf(" (%s bytes, format_version %u)\n", thousands(u64(d, "file_size"), a, sizeof a), u32(d, "format_version"));
    printf("name           ");
    cli_put_clean(stdout, str(d, "name")[0] ? str(d, "name") : "(none)", 120);
    printf("\n");

    if (!strcmp(arch, "vit5")) {
        const cJSON *bias = obj(d, "bias");
        printf("architecture   vit5, flavour %s (%s RoPE, tokens [%s])\n", flavour,
               !strcmp(str(d, "rope_pairing"), "split_half") ? "split_half" : "adjacent", str(d, "token_layout"));
        printf("input          %u x %u RGB, patch %u -> %u x %u grid = %u patches\n", at(d, "image_size", 0),
               at(d, "image_size", 1), u32(d, "patch_size"), at(d, "grid", 0), at(d, "grid", 1), u32(d, "patches"));
        printf("tokens         %u (%u patches%s + %u registers)\n", u32(d, "tokens"), u32(d, "patches"),
               flag(d, "has_cls") ? " + CLS" : "", u32(d, "num_registers"));
        printf("width          %u, depth %u, heads %u (head dim %u), MLP %u (%s)\n", u32(d, "dim"), u32(d, "depth"),
               u32(d, "num_heads"), u32(d, "head_dim"), u32(d, "mlp_hidden"), str(d, "mlp_activation"));
        printf("blocks         QK-norm %s, layer scale %s, GRN %s; biases: patch_embed %s, qkv %s, proj %s, mlp %s, "
               "head %s\n", yn(flag(d, "qk_norm")), yn(flag(d, "layer_scale")), yn(flag(d, "grn")),
               yn(flag(bias, "patch_embed")), yn(flag(bias, "qkv")), yn(flag(bias, "proj")), yn(flag(bias, "mlp")),
               yn(flag(bias, "head")));
        if (!strcmp(str(d, "readout"), "register_concat"))
            printf("readout        register_concat (%u registers x neck %u) -> out_norm -> out_proj (%u -> %u)\n",
                   u32(d, "num_registers"), u32(d, "neck_dim"), u32(d, "head_in"), classes);
        else
            printf("readout        %s -> out_norm -> out_proj (%u -> %u)\n", str(d, "readout"), u32(d, "head_in"),
                   classes);
    } else if (!strcmp(arch, "resnet")) {
        const cJSON *blk = obj(d, "block"), *sm = obj(blk, "sequence_mixer"), *cm = obj(blk, "condition_mixer"),
                    *mm = obj(blk, "mlp"), *norms = obj(d, "norms"), *bias = obj(d, "bias");
        char n1[48], n2[48], n3[48];
        printf("architecture   resnet, flavour %s (ClassificationResNet of generic ResidualBlocks)\n", flavour);
        printf("input          %u x %u RGB, patch %u -> %u x %u grid = %u tokens%s\n", at(d, "image_size", 0),
               at(d, "image_size", 1), u32(d, "patch_size"), at(d, "grid", 0), at(d, "grid", 1), u32(d, "tokens"),
               flag(d, "pos_embed") ? " (+ pos_embed)" : "");
        printf("width          %u, depth %u (every block alike)\n", u32(d, "dim"), u32(d, "depth"));
        if (!strcmp(str(sm, "type"), "attention"))
            printf("sequence mixer %s -> attention, heads %u (head dim %u), RoPE %s, qk-norm %s, causal %s, "
                   "bias %s\n", norm_text(obj(norms, "input_norm"), n1, sizeof n1), u32(sm, "num_heads"),
                   u32(sm, "head_dim"), yn(flag(sm, "rope")), yn(flag(sm, "qk_norm")), yn(flag(sm, "causal")),
                   yn(flag(sm, "bias")));
        else
            printf("sequence mixer identity\n");
        uint32_t tc = u32(d, "condition_tokens");
        if (!strcmp(str(cm, "type"), "attention"))
            printf("condition      %s -> cross-attention, heads %u (head dim %u), qk-norm %s, causal %s; "
                   "condition %s\n", norm_text(obj(norms, "condition_mixer_norm"), n2, sizeof n2),
                   u32(cm, "num_heads"), u32(cm, "head_dim"), yn(flag(cm, "qk_norm")), yn(flag(cm, "causal")),
                   tc ? "[B, Tc, C] tokens" : "[B, C] (one global token)");
        else
            printf("condition      identity (the network takes no condition)\n");
        if (tc) printf("               Tc = %u condition tokens of width %u\n", tc, u32(d, "condition_dim"));
        if (!strcmp(str(mm, "type"), "mlp"))
            printf("mlp            %s -> MLP %u (%s%s), bias %s\n", norm_text(obj(norms, "mlp_norm"), n3, sizeof n3),
                   u32(mm, "hidden"), str(mm, "activation"), u32(mm, "glu_factor") == 2 ? ", layer1 doubled" : "",
                   yn(flag(mm, "bias")));
        else
            printf("mlp            identity\n");
        printf("readout        gap -> out_norm %s -> out_proj (%u -> %u); biases: patch_embed %s, head %s\n",
               norm_text(obj(norms, "out_norm"), n1, sizeof n1), u32(d, "dim"), classes,
               yn(flag(bias, "patch_embed")), yn(flag(bias, "head")));
    } else {
        printf("architecture   vil, flavour %s (%s numerics)\n", flavour,
               !strcmp(flavour, "seed") ? "seed-004" : "official NX-AI v1");
        printf("input          %u x %u RGB, patch %u -> %u x %u grid\n", at(d, "image_size", 0), at(d, "image_size", 1),
               u32(d, "patch_size"), at(d, "grid", 0), at(d, "grid", 1));
        printf("tokens         %u (patches only; odd blocks run the sequence reversed)\n", u32(d, "tokens"));
        uint32_t qb = u32(d, "qkv_block_size");
        printf("width          %u, depth %u, inner %u, memory heads %u (head dim %u), q/k/v %u blocks of %ux%u, "
               "conv kernel %u\n", u32(d, "dim"), u32(d, "depth"), u32(d, "inner_dim"), u32(d, "num_heads"),
               u32(d, "head_dim"), u32(d, "num_proj_heads"), qb, qb, u32(d, "conv_kernel"));
        printf("readout        bilateral_avg -> LayerNorm -> head (%u -> %u)\n", u32(d, "dim"), classes);
    }

    const cJSON *fb = obj(d, "flops_breakdown");
    uint64_t total = u64(d, "flops");
    printf("parameters     %s\n", thousands(u64(d, "params"), a, sizeof a));
    double f = (double)total;
    const char *unit = f >= 1e9 ? "GFLOPs" : f >= 1e6 ? "MFLOPs" : "kFLOPs";
    double scaled = f >= 1e9 ? f * 1e-9 : f >= 1e6 ? f * 1e-6 : f * 1e-3;
    if (!strcmp(arch, "resnet"))
        printf("FLOPs          %s per image (%.2f %s; sequence mixer %s, condition mixer %s and block %s per "
               "block)\n", thousands(total, a, sizeof a), scaled, unit,
               thousands(u64(fb, "sequence_mixer_per_block"), b, sizeof b),
               thousands(u64(fb, "condition_mixer_per_block"), c3, sizeof c3), thousands(u64(fb, "block"), c4, sizeof c4));
    else
        printf("FLOPs          %s per image (%.2f %s; %s %s and block %s per block)\n", thousands(total, a, sizeof a),
               scaled, unit, !strcmp(arch, "vit5") ? "attention" : "mLSTM cell (parallel form)",
               thousands(u64(fb, !strcmp(arch, "vit5") ? "attention_per_block" : "cell_per_block"), b, sizeof b),
               thousands(u64(fb, "block"), c3, sizeof c3));

    const cJSON *labels = obj(d, "labels");
    int n_labels = cJSON_GetArraySize(labels);
    printf("classes        %u", classes);
    if (n_labels) {
        printf(": ");
        for (int i = 0; i < n_labels && i < SHOW_LABELS; i++) {
            const cJSON *l = cJSON_GetArrayItem(labels, i);
            if (i) printf(", ");
            cli_put_clean(stdout, cJSON_IsString(l) ? l->valuestring : "", 40);
        }
        if (n_labels > SHOW_LABELS) printf(", ... (--json lists all %d)", n_labels);
    } else {
        printf(" (no labels in the file)");
    }
    printf("\n");
    const cJSON *pp = obj(d, "preprocess"), *mean = obj(pp, "mean"), *std = obj(pp, "std");
#define AT(a_, i_) (cJSON_GetArrayItem(a_, i_) ? cJSON_GetArrayItem(a_, i_)->valuedouble : 0.0)
    printf("preprocess     shorter side -> %u (%s), centre crop %u x %u, mean [%.4g, %.4g, %.4g], std [%.4g, %.4g, "
           "%.4g]\n", u32(pp, "resize_shorter"), str(pp, "interpolation"), at(pp, "image_size", 0),
           at(pp, "image_size", 1), AT(mean, 0), AT(mean, 1), AT(mean, 2), AT(std, 0), AT(std, 1), AT(std, 2));
#undef AT
    const cJSON *t = obj(d, "tensors");
    printf("tensors        %u (", u32(t, "count"));
    bool first = true;
    static const char *const dtypes[] = {"F32", "F16", "BF16"};
    for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
        if (!u32(t, dtypes[k])) continue;
        printf("%s%u %s", first ? "" : ", ", u32(t, dtypes[k]), dtypes[k]);
        first = false;
    }
    printf("), %s bytes of data\n", thousands(u64(t, "data_bytes"), a, sizeof a));
}

enum { OPT_JSON = 256 };

int vkvit_cli_inspect(int argc, char **argv) {
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    bool json = false;
    cli_opts o;
    cli_opts_init(&o, "inspect", argc, argv, "h", longopts);
    for (int c; (c = cli_opts_next(&o)) != -1;) {
        switch (c) {
        case 'h': usage(stdout); return cli_finish_stdout("inspect", CLI_OK);
        case OPT_JSON: json = true; break;
        default: return CLI_USAGE;
        }
    }
    if (o.first_operand == argc) return cli_usage_error("inspect", "no FILE given");
    if (argc - o.first_operand > 1)
        return cli_usage_error("inspect", "one FILE only (got '%s' and '%s')", argv[o.first_operand],
                               argv[o.first_operand + 1]);
    const char *path = argv[o.first_operand];
    if (cli_sniff_model(path) != VKVIT_OK) {
        cli_print_error("inspect", cli_last_error());
        return CLI_BAD_INPUT;
    }
    char *text = NULL;
    vkvit_result r = vkvit_describe_model(&(vkvit_model_desc){.path = path}, &text);
    if (r != VKVIT_OK) {
        cli_print_error("inspect", cli_last_error());
        return r == VKVIT_ERROR_OUT_OF_HOST_MEMORY ? CLI_FAILURE : CLI_BAD_INPUT;
    }
    int rc = CLI_OK;
    if (json) {
        printf("%s\n", text);
    } else {
        cJSON *d = cJSON_Parse(text);
        if (!d) {
            fprintf(stderr, "vkvit inspect: out of memory reading the description of '%s'\n", path);
            rc = CLI_FAILURE;
        } else {
            print_text(d);
            cJSON_Delete(d);
        }
    }
    vkvit_free(text);
    return cli_finish_stdout("inspect", rc);
}
