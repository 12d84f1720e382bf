// SPDX-License-Identifier: Apache-2.0
/* Latency statistics of the two benchmarks (`vkvit bench --model`, `vkvit bench gemm`). */
#ifndef VKVIT_CLI_BENCH_STATS_H
#define VKVIT_CLI_BENCH_STATS_H

#include "cli.h"

typedef struct cli_stats {
    uint32_t n;
    double min, p50, p90, p99, max, mean, stddev;
} cli_stats;

/* The statistics of x[0 .. n) (n >= 1), sorting x in place; stddev is the sample standard deviation. */
cli_stats cli_stats_of(double *x, uint32_t n);
/* Sorts x[0 .. n) ascending. */
void cli_sort(double *x, uint32_t n);
/* Nearest-rank percentile p (0 < p <= 100) of sorted x[0 .. n). */
double cli_percentile(const double *sorted, uint32_t n, double p);
/* The median of x[0 .. n), x left as it is (NAN when out of memory). */
double cli_median(const double *x, uint32_t n);
/* runs, min_ms, median_ms (= p50_ms), p50_ms, p90_ms, p99_ms, max_ms, mean_ms, stddev_ms. */
void cli_stats_json(cJSON *o, const cli_stats *st);

#endif /* VKVIT_CLI_BENCH_STATS_H */
