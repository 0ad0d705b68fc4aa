#include <stdio.h>
#include <string.h>
#include "config.h"
#include "parse.h"
#include "stats.h"
#include "version.h"

int main(int argc, char **argv)
{
    char line[4096];
    struct numbuf buf;
    struct summary s;
    int p = STATS_PRECISION;

    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("statcalc %s\n", STATCALC_VERSION);
        return 0;
    }
    numbuf_init(&buf);
    while (fgets(line, sizeof line, stdin)) {
        if (line[0] == COMMENT_CHAR)
            continue;
        parse_line(line, &buf);
    }
    printf("count: %zu\n", buf.len);
    if (buf.len > 0) {
        summarize(buf.data, buf.len, &s);
        printf("min: %.*f\n", p, s.min);
        printf("max: %.*f\n", p, s.max);
        printf("mean: %.*f\n", p, s.mean);
        printf("stddev: %.*f\n", p, s.stddev);
        printf("median: %.*f\n", p, s.median);
    }
    printf("invalid: %zu\n", buf.invalid);
    numbuf_free(&buf);
    return 0;
}
