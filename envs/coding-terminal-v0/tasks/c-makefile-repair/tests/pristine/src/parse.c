#include <stdlib.h>
#include <string.h>
#include "parse.h"

void numbuf_init(struct numbuf *b)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->invalid = 0;
}

void numbuf_free(struct numbuf *b)
{
    free(b->data);
    numbuf_init(b);
}

static void push(struct numbuf *b, double v)
{
    if (b->len == b->cap) {
        size_t ncap = b->cap ? b->cap * 2 : 64;
        double *nd = realloc(b->data, ncap * sizeof(double));
        if (!nd)
            abort();
        b->data = nd;
        b->cap = ncap;
    }
    b->data[b->len++] = v;
}

void parse_line(const char *line, struct numbuf *b)
{
    char *copy = strdup(line);
    char *save = NULL;
    char *tok;

    for (tok = strtok_r(copy, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
        char *end;
        double v = strtod(tok, &end);
        if (end == tok || *end != '\0')
            b->invalid++;
        else
            push(b, v);
    }
    free(copy);
}
