/* vkvit inspect FILE [--json]: what a model file holds — architecture, shapes, parameters, FLOPs, classes,
 * preprocessing, dtypes. Reads and validates the whole file (src/model/); needs no GPU. */
#include "cli.h"
#include "model/model_file.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOW_LABELS 5

static void usage(FILE *f) {
    fprintf(f,
            "usage: vkvit inspect FILE [--json]\n"
            "\n"
            "Reads a vkvit model file (safetensors + `vkvit` metadata, docs/model-format.md), checks it completely\n"
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

typedef struct summary {
    uint64_t params;                        /* from the file's tensors */
    uint32_t count[VKVIT_ST_DTYPE_COUNT];
    uint64_t data_bytes;
    vkvit__flops flops;
} summary;

/* ---------------------------------------------------------------------------------------------------------------
 * Text
 * --------------------------------------------------------------------------------------------------------------- */

/* "rmsnorm (eps 1e-06)", "layernorm (eps 1e-05, bias)", "identity" (no norm) */
static const char *rn_norm_text(const vkvit__rn_norm_config *n, char *buf, size_t cap) {
    if (n->kind == VKVIT_RN_NORM_IDENTITY) snprintf(buf, cap, "identity");
    else snprintf(buf, cap, "%s (eps %g%s)", vkvit__rn_norm_name(n->kind), n->eps,
                  n->kind == VKVIT_RN_NORM_LAYERNORM && n->bias ? ", bias" : "");
    return buf;
}

static void print_text(const char *path, const vkvit__model_file *mf, const summary *s) {
    const vkvit__model_config *c = &mf->cfg;
    const vkvit__preprocess *pp = &c->preprocess;
    char a[32], b[32];
    printf("file           ");
    cli_put_clean(stdout, path, 300);
    printf(" (%s bytes, format_version %u)\n", thousands(mf->size, a, sizeof a),
           c->format_version);
    printf("name           ");
    cli_put_clean(stdout, c->name[0] ? c->name : "(none)", 120);
    printf("\n");

    uint32_t classes = vkvit__model_num_classes(c);
    if (c->arch == VKVIT_ARCH_VIT5) {
        const vkvit__vit5_config *v = &c->vit5;
        bool nv = c->flavour == VKVIT_FLAVOUR_NVSUBQ;
        printf("architecture   vit5, flavour %s (%s RoPE, tokens [%s])\n", vkvit__flavour_name(c->flavour),
               nv ? "split_half" : "adjacent", nv ? "patches, CLS, registers" : "CLS, patches, registers");
        printf("input          %u x %u RGB, patch %u -> %u x %u grid = %u patches\n", v->image_size[0],
               v->image_size[1], v->patch_size, v->grid[0], v->grid[1], v->num_patches);
        printf("tokens         %u (%u patches%s + %u registers)\n", v->num_tokens, v->num_patches,
               v->has_cls ? " + CLS" : "", v->num_registers);
        printf("width          %u, depth %u, heads %u (head dim %u), MLP %u (gelu)\n", v->dim, v->depth, v->num_heads,
               v->head_dim, v->mlp_hidden);
        printf("blocks         QK-norm %s, layer scale %s, GRN %s; biases: patch_embed %s, qkv %s, proj %s, mlp %s, "
               "head %s\n", v->qk_norm ? "yes" : "no", v->layer_scale ? "yes" : "no", v->grn ? "yes" : "no",
               v->bias.patch_embed ? "yes" : "no", v->bias.qkv ? "yes" : "no", v->bias.proj ? "yes" : "no",
               v->bias.mlp ? "yes" : "no", v->bias.head ? "yes" : "no");
        if (v->readout == VKVIT_READOUT_REGISTER_CONCAT)
            printf("readout        register_concat (%u registers x neck %u) -> out_norm -> out_proj (%u -> %u)\n",
                   v->num_registers, v->neck_dim, v->head_in, classes);
        else
            printf("readout        %s -> out_norm -> out_proj (%u -> %u)\n", vkvit__readout_name(v->readout),
                   v->head_in, classes);
    } else if (c->arch == VKVIT_ARCH_RESNET) {
        const vkvit__resnet_config *v = &c->resnet;
        char n1[48], n2[48], n3[48];
        printf("architecture   resnet, flavour %s (ClassificationResNet of generic ResidualBlocks)\n",
               vkvit__flavour_name(c->flavour));
        printf("input          %u x %u RGB, patch %u -> %u x %u grid = %u tokens%s\n", v->image_size[0],
               v->image_size[1], v->patch_size, v->grid[0], v->grid[1], v->num_tokens,
               v->pos_embed ? " (+ pos_embed)" : "");
        printf("width          %u, depth %u (every block alike)\n", v->dim, v->depth);
        if (v->seq.enabled)
            printf("sequence mixer %s -> attention, heads %u (head dim %u), RoPE %s, qk-norm %s, causal %s, "
                   "bias %s\n", rn_norm_text(&v->input_norm, n1, sizeof n1), v->seq.num_heads, v->seq_head_dim,
                   v->seq.rope ? "yes" : "no", v->seq.qk_norm ? "yes" : "no", v->seq.causal ? "yes" : "no",
                   v->seq.bias ? "yes" : "no");
        else
            printf("sequence mixer identity\n");
        if (v->cond.enabled)
            printf("condition      %s -> cross-attention, heads %u (head dim %u), qk-norm %s, causal %s; "
                   "condition %s\n", rn_norm_text(&v->condition_mixer_norm, n2, sizeof n2), v->cond.num_heads,
                   v->cond_head_dim, v->cond.qk_norm ? "yes" : "no", v->cond.causal ? "yes" : "no",
                   v->condition_tokens ? "[B, Tc, C] tokens" : "[B, C] (one global token)");
        else
            printf("condition      identity (the network takes no condition)\n");
        if (v->condition_tokens) printf("               Tc = %u condition tokens of width %u\n",
                                        v->condition_tokens, v->condition_dim);
        if (v->mlp.enabled)
            printf("mlp            %s -> MLP %u (%s%s), bias %s\n", rn_norm_text(&v->mlp_norm, n3, sizeof n3),
                   v->mlp.hidden, vkvit__rn_activation_name(v->mlp.activation),
                   v->mlp_glu_factor == 2 ? ", layer1 doubled" : "", v->mlp.bias ? "yes" : "no");
        else
            printf("mlp            identity\n");
        printf("readout        gap -> out_norm %s -> out_proj (%u -> %u); biases: patch_embed %s, head %s\n",
               rn_norm_text(&v->out_norm, n1, sizeof n1), v->dim, classes, v->bias.patch_embed ? "yes" : "no",
               v->bias.head ? "yes" : "no");
    } else {
        const vkvit__vil_config *v = &c->vil;
        printf("architecture   vil, flavour %s (%s numerics)\n", vkvit__flavour_name(c->flavour),
               c->flavour == VKVIT_FLAVOUR_SEED ? "seed-004" : "official NX-AI v1");
        printf("input          %u x %u RGB, patch %u -> %u x %u grid\n", v->image_size[0], v->image_size[1],
               v->patch_size, v->grid[0], v->grid[1]);
        printf("tokens         %u (patches only; odd blocks run the sequence reversed)\n", v->num_tokens);
        printf("width          %u, depth %u, inner %u, memory heads %u (head dim %u), q/k/v %u blocks of %ux%u, "
               "conv kernel %u\n", v->dim, v->depth, v->inner_dim, v->num_heads, v->head_dim, v->num_proj_heads,
               v->qkv_block_size, v->qkv_block_size, v->conv_kernel);
        printf("readout        bilateral_avg -> LayerNorm -> head (%u -> %u)\n", v->dim, classes);
    }

    printf("parameters     %s\n", thousands(s->params, a, sizeof a));
    double f = (double)s->flops.total;
    const char *unit = f >= 1e9 ? "GFLOPs" : f >= 1e6 ? "MFLOPs" : "kFLOPs";
    if (c->arch == VKVIT_ARCH_RESNET)
        printf("FLOPs          %s per image (%.2f %s; sequence mixer %s, condition mixer %s and block %s per "
               "block)\n", thousands(s->flops.total, a, sizeof a), f >= 1e9 ? f * 1e-9 : f >= 1e6 ? f * 1e-6 : f * 1e-3,
               unit, thousands(s->flops.mixer_per_block, b, sizeof b),
               thousands(s->flops.cond_mixer_per_block, (char[32]){0}, 32),
               thousands(s->flops.block, (char[32]){0}, 32));
    else
        printf("FLOPs          %s per image (%.2f %s; %s %s and block %s per block)\n",
               thousands(s->flops.total, a, sizeof a), f >= 1e9 ? f * 1e-9 : f >= 1e6 ? f * 1e-6 : f * 1e-3, unit,
               c->arch == VKVIT_ARCH_VIT5 ? "attention" : "mLSTM cell (parallel form)",
               thousands(s->flops.mixer_per_block, b, sizeof b), thousands(s->flops.block, (char[32]){0}, 32));

    printf("classes        %u", classes);
    if (c->n_labels) {
        printf(": ");
        for (uint32_t i = 0; i < c->n_labels && i < SHOW_LABELS; i++) {
            if (i) printf(", ");
            cli_put_clean(stdout, c->labels[i], 40);
        }
        if (c->n_labels > SHOW_LABELS) printf(", ... (--json lists all %u)", c->n_labels);
    } else {
        printf(" (no labels in the file)");
    }
    printf("\n");
    printf("preprocess     shorter side -> %u (%s), centre crop %u x %u, mean [%.4g, %.4g, %.4g], std [%.4g, %.4g, "
           "%.4g]\n", pp->resize_shorter, vkvit__interp_name(pp->interpolation), pp->image_size[0], pp->image_size[1],
           pp->mean[0], pp->mean[1], pp->mean[2], pp->std[0], pp->std[1], pp->std[2]);

    printf("tensors        %u (", mf->st.n_tensors);
    bool first = true;
    for (int d = 0; d < VKVIT_ST_DTYPE_COUNT; d++) {
        if (!s->count[d]) continue;
        printf("%s%u %s", first ? "" : ", ", s->count[d], vkvit__st_dtype_name((vkvit__st_dtype)d));
        first = false;
    }
    printf("), %s bytes of data\n", thousands(s->data_bytes, a, sizeof a));
}

/* ---------------------------------------------------------------------------------------------------------------
 * JSON
 * --------------------------------------------------------------------------------------------------------------- */

static cJSON *pair(uint32_t a, uint32_t b) {
    const double v[2] = {a, b};
    return cJSON_CreateDoubleArray(v, 2);
}

static int print_json(const char *path, const vkvit__model_file *mf, const summary *s) {
    const vkvit__model_config *c = &mf->cfg;
    const vkvit__preprocess *pp = &c->preprocess;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "file", cli_jstr(path));
    cJSON_AddNumberToObject(o, "file_size", (double)mf->size);
    cJSON_AddNumberToObject(o, "format_version", c->format_version);
    cJSON_AddItemToObject(o, "name", cli_jstr(c->name));
    cJSON_AddStringToObject(o, "architecture", vkvit__arch_name(c->arch));
    cJSON_AddStringToObject(o, "flavour", vkvit__flavour_name(c->flavour));
    if (c->arch == VKVIT_ARCH_VIT5) {
        const vkvit__vit5_config *v = &c->vit5;
        cJSON_AddItemToObject(o, "image_size", pair(v->image_size[0], v->image_size[1]));
        cJSON_AddNumberToObject(o, "patch_size", v->patch_size);
        cJSON_AddItemToObject(o, "grid", pair(v->grid[0], v->grid[1]));
        cJSON_AddNumberToObject(o, "patches", v->num_patches);
        cJSON_AddNumberToObject(o, "tokens", v->num_tokens);
        cJSON_AddNumberToObject(o, "dim", v->dim);
        cJSON_AddNumberToObject(o, "depth", v->depth);
        cJSON_AddNumberToObject(o, "num_heads", v->num_heads);
        cJSON_AddNumberToObject(o, "head_dim", v->head_dim);
        cJSON_AddNumberToObject(o, "mlp_hidden", v->mlp_hidden);
        cJSON_AddNumberToObject(o, "num_registers", v->num_registers);
        cJSON_AddBoolToObject(o, "has_cls", v->has_cls);
        cJSON_AddStringToObject(o, "readout", vkvit__readout_name(v->readout));
        cJSON_AddNumberToObject(o, "neck_dim", v->neck_dim);
        cJSON_AddNumberToObject(o, "head_in", v->head_in);
        cJSON_AddBoolToObject(o, "qk_norm", v->qk_norm);
        cJSON_AddBoolToObject(o, "layer_scale", v->layer_scale);
        cJSON_AddBoolToObject(o, "grn", v->grn);
    } else if (c->arch == VKVIT_ARCH_RESNET) {
        const vkvit__resnet_config *v = &c->resnet;
        cJSON_AddItemToObject(o, "image_size", pair(v->image_size[0], v->image_size[1]));
        cJSON_AddNumberToObject(o, "patch_size", v->patch_size);
        cJSON_AddItemToObject(o, "grid", pair(v->grid[0], v->grid[1]));
        cJSON_AddNumberToObject(o, "tokens", v->num_tokens);
        cJSON_AddNumberToObject(o, "dim", v->dim);
        cJSON_AddNumberToObject(o, "depth", v->depth);
        cJSON_AddBoolToObject(o, "pos_embed", v->pos_embed);
        cJSON *blk = cJSON_AddObjectToObject(o, "block");
        cJSON_AddStringToObject(blk, "input_norm", vkvit__rn_norm_name(v->input_norm.kind));
        cJSON *sm = cJSON_AddObjectToObject(blk, "sequence_mixer");
        cJSON_AddStringToObject(sm, "type", v->seq.enabled ? "attention" : "identity");
        if (v->seq.enabled) {
            cJSON_AddNumberToObject(sm, "num_heads", v->seq.num_heads);
            cJSON_AddBoolToObject(sm, "rope", v->seq.rope);
            cJSON_AddBoolToObject(sm, "qk_norm", v->seq.qk_norm);
            cJSON_AddBoolToObject(sm, "causal", v->seq.causal);
            cJSON_AddBoolToObject(sm, "bias", v->seq.bias);
        }
        cJSON_AddStringToObject(blk, "condition_mixer_norm", vkvit__rn_norm_name(v->condition_mixer_norm.kind));
        cJSON *cm = cJSON_AddObjectToObject(blk, "condition_mixer");
        cJSON_AddStringToObject(cm, "type", v->cond.enabled ? "attention" : "identity");
        if (v->cond.enabled) {
            cJSON_AddNumberToObject(cm, "num_heads", v->cond.num_heads);
            cJSON_AddBoolToObject(cm, "qk_norm", v->cond.qk_norm);
            cJSON_AddBoolToObject(cm, "causal", v->cond.causal);
        }
        cJSON_AddStringToObject(blk, "mlp_norm", vkvit__rn_norm_name(v->mlp_norm.kind));
        cJSON *mm = cJSON_AddObjectToObject(blk, "mlp");
        cJSON_AddStringToObject(mm, "type", v->mlp.enabled ? "mlp" : "identity");
        if (v->mlp.enabled) {
            cJSON_AddStringToObject(mm, "activation", vkvit__rn_activation_name(v->mlp.activation));
            cJSON_AddNumberToObject(mm, "hidden", v->mlp.hidden);
            cJSON_AddBoolToObject(mm, "bias", v->mlp.bias);
        }
        cJSON_AddNumberToObject(o, "condition_tokens", v->condition_tokens);
        cJSON_AddNumberToObject(o, "condition_dim", v->condition_dim);
        cJSON_AddStringToObject(o, "readout", "gap");
        cJSON_AddStringToObject(o, "out_norm", vkvit__rn_norm_name(v->out_norm.kind));
    } else {
        const vkvit__vil_config *v = &c->vil;
        cJSON_AddItemToObject(o, "image_size", pair(v->image_size[0], v->image_size[1]));
        cJSON_AddNumberToObject(o, "patch_size", v->patch_size);
        cJSON_AddItemToObject(o, "grid", pair(v->grid[0], v->grid[1]));
        cJSON_AddNumberToObject(o, "tokens", v->num_tokens);
        cJSON_AddNumberToObject(o, "dim", v->dim);
        cJSON_AddNumberToObject(o, "depth", v->depth);
        cJSON_AddNumberToObject(o, "inner_dim", v->inner_dim);
        cJSON_AddNumberToObject(o, "num_heads", v->num_heads);
        cJSON_AddNumberToObject(o, "head_dim", v->head_dim);
        cJSON_AddNumberToObject(o, "num_proj_heads", v->num_proj_heads);
        cJSON_AddNumberToObject(o, "conv_kernel", v->conv_kernel);
        cJSON_AddStringToObject(o, "pooling", "bilateral_avg");
    }
    cJSON_AddNumberToObject(o, "params", (double)s->params);
    cJSON_AddNumberToObject(o, "flops", (double)s->flops.total);
    cJSON *fb = cJSON_AddObjectToObject(o, "flops_breakdown");
    cJSON_AddNumberToObject(fb, "patch_embed", (double)s->flops.patch_embed);
    cJSON_AddNumberToObject(fb, "pos_embed", (double)s->flops.pos_embed);
    if (c->arch == VKVIT_ARCH_RESNET) {
        cJSON_AddNumberToObject(fb, "sequence_mixer_per_block", (double)s->flops.mixer_per_block);
        cJSON_AddNumberToObject(fb, "condition_mixer_per_block", (double)s->flops.cond_mixer_per_block);
    } else {
        cJSON_AddNumberToObject(fb, c->arch == VKVIT_ARCH_VIT5 ? "attention_per_block" : "cell_per_block",
                                (double)s->flops.mixer_per_block);
    }
    cJSON_AddNumberToObject(fb, "block", (double)s->flops.block);
    cJSON_AddNumberToObject(fb, "blocks", (double)s->flops.blocks);
    cJSON_AddNumberToObject(fb, "readout", (double)s->flops.readout);
    cJSON_AddNumberToObject(fb, "out_norm", (double)s->flops.out_norm);
    cJSON_AddNumberToObject(fb, "head", (double)s->flops.head);
    cJSON_AddNumberToObject(o, "num_classes", vkvit__model_num_classes(c));
    cJSON *labels = cJSON_AddArrayToObject(o, "labels");
    for (uint32_t i = 0; i < c->n_labels; i++) cJSON_AddItemToArray(labels, cli_jstr(c->labels[i]));
    cJSON *p = cJSON_AddObjectToObject(o, "preprocess");
    cJSON_AddItemToObject(p, "image_size", pair(pp->image_size[0], pp->image_size[1]));
    cJSON_AddNumberToObject(p, "resize_shorter", pp->resize_shorter);
    cJSON_AddStringToObject(p, "interpolation", vkvit__interp_name(pp->interpolation));
    cJSON_AddItemToObject(p, "mean", cJSON_CreateDoubleArray(pp->mean, 3));
    cJSON_AddItemToObject(p, "std", cJSON_CreateDoubleArray(pp->std, 3));
    cJSON *t = cJSON_AddObjectToObject(o, "tensors");
    cJSON_AddNumberToObject(t, "count", mf->st.n_tensors);
    for (int d = 0; d < VKVIT_ST_DTYPE_COUNT; d++)
        cJSON_AddNumberToObject(t, vkvit__st_dtype_name((vkvit__st_dtype)d), s->count[d]);
    cJSON_AddNumberToObject(t, "data_bytes", (double)s->data_bytes);

    return cli_json_print("inspect", o, 1);
}

/* --------------------------------------------------------------------------------------------------------------- */

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
        fprintf(stderr, "vkvit inspect: %s\n", vkvit_last_error());
        return CLI_BAD_INPUT;
    }

    vkvit__model_file mf;
    vkvit_result r = vkvit__model_file_open(path, &mf);
    if (r != VKVIT_OK) {
        fprintf(stderr, "vkvit inspect: %s\n", vkvit_last_error());
        return r == VKVIT_ERROR_OUT_OF_HOST_MEMORY ? CLI_FAILURE : CLI_BAD_INPUT;
    }

    summary s = {0};
    for (uint32_t i = 0; i < mf.st.n_tensors; i++) {
        const vkvit__st_tensor *t = &mf.st.tensors[i];
        s.params += t->numel;
        s.count[t->dtype]++;
        s.data_bytes += t->size;
    }
    vkvit__model_flops_breakdown(&mf.cfg, &s.flops);
    uint64_t formula = vkvit__model_param_count(&mf.cfg);
    int rc;
    if (s.params != formula) {
        /* Cannot happen once the tensor table matched; say so loudly rather than print a wrong number. */
        fprintf(stderr, "vkvit inspect: internal error: the file's tensors hold %llu parameters, the config's "
                        "formula says %llu\n", (unsigned long long)s.params, (unsigned long long)formula);
        rc = CLI_FAILURE;
    } else if (json) {
        rc = print_json(path, &mf, &s);
    } else {
        print_text(path, &mf, &s);
        rc = CLI_OK;
    }
    vkvit__model_file_close(&mf);
    return cli_finish_stdout("inspect", rc);
}
