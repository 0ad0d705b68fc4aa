#ifndef PARSE_H
#define PARSE_H

#include <stddef.h>

struct numbuf {
    double *data;
    size_t len, cap;
    size_t invalid;
};

void numbuf_init(struct numbuf *b);
void numbuf_free(struct numbuf *b);
/* Parses whitespace-separated numbers from one line into b. */
void parse_line(const char *line, struct numbuf *b);

#endif
