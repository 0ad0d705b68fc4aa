#ifndef STATS_H
#define STATS_H

#include <stddef.h>

struct summary {
    size_t count;
    double min, max, mean, stddev, median;
};

/* Sorts `values` in place. count must be > 0. */
void summarize(double *values, size_t count, struct summary *out);

#endif
