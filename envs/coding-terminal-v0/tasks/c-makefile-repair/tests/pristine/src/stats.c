#include <math.h>
#include <stdlib.h>
#include "stats.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void summarize(double *values, size_t count, struct summary *out)
{
    double sum = 0.0, sq = 0.0;
    size_t i;

    for (i = 0; i < count; i++)
        sum += values[i];
    out->count = count;
    out->mean = sum / (double)count;
    for (i = 0; i < count; i++) {
        double d = values[i] - out->mean;
        sq += d * d;
    }
    out->stddev = sqrt(sq / (double)count);
    qsort(values, count, sizeof(double), cmp_double);
    out->min = values[0];
    out->max = values[count - 1];
    if (count % 2)
        out->median = values[count / 2];
    else
        out->median = (values[count / 2 - 1] + values[count / 2]) / 2.0;
}
