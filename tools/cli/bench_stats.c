// SPDX-License-Identifier: Apache-2.0
/* Latency statistics of the two benchmarks (bench_stats.h). */
#include "bench_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void cli_sort(double *x, uint32_t n) { qsort(x, n, sizeof *x, cmp_double); }

double cli_percentile(const double *sorted, uint32_t n, double p) {
    uint32_t rank = (uint32_t)ceil(p / 100.0 * n);
    return sorted[rank ? rank - 1 : 0];
}

cli_stats cli_stats_of(double *x, uint32_t n) {
    cli_stats st = {.n = n};
    double sum = 0, sq = 0;
    for (uint32_t i = 0; i < n; i++) sum += x[i];
    st.mean = sum / n;
    for (uint32_t i = 0; i < n; i++) sq += (x[i] - st.mean) * (x[i] - st.mean);
    st.stddev = n > 1 ? sqrt(sq / (n - 1)) : 0.0;
    cli_sort(x, n);
    st.min = x[0];
    st.p50 = cli_percentile(x, n, 50);
    st.p90 = cli_percentile(x, n, 90);
    st.p99 = cli_percentile(x, n, 99);
    st.max = x[n - 1];
    return st;
}

double cli_median(const double *x, uint32_t n) {
    double *c = malloc(n * sizeof *c);
    if (!c) return NAN;
    memcpy(c, x, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_double);
    double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

void cli_stats_json(cJSON *o, const cli_stats *st) {
    cJSON_AddItemToObject(o, "runs", cJSON_CreateNumber(st->n));
    cJSON_AddItemToObject(o, "min_ms", cli_jnum(st->min));
    cJSON_AddItemToObject(o, "median_ms", cli_jnum(st->p50));
    cJSON_AddItemToObject(o, "p50_ms", cli_jnum(st->p50));
    cJSON_AddItemToObject(o, "p90_ms", cli_jnum(st->p90));
    cJSON_AddItemToObject(o, "p99_ms", cli_jnum(st->p99));
    cJSON_AddItemToObject(o, "max_ms", cli_jnum(st->max));
    cJSON_AddItemToObject(o, "mean_ms", cli_jnum(st->mean));
    cJSON_AddItemToObject(o, "stddev_ms", cli_jnum(st->stddev));
}
