/* test driver: executes ring-buffer operations read from stdin */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringbuf.h"

static unsigned char *unhex(const char *s, size_t *n)
{
    size_t len = strlen(s), i;
    unsigned char *out;
    if (strcmp(s, "-") == 0) { *n = 0; return malloc(1); }
    *n = len / 2;
    out = malloc(*n + 1);
    for (i = 0; i < *n; i++) { unsigned v; sscanf(s + 2 * i, "%2x", &v); out[i] = (unsigned char)v; }
    return out;
}

static void phex(const unsigned char *p, size_t n)
{
    size_t i;
    if (n == 0) { printf(" -"); return; }
    putchar(' ');
    for (i = 0; i < n; i++) printf("%02x", p[i]);
}

int main(void)
{
    static char line[1 << 20];
    static char arg[1 << 20];
    ringbuf_t *rb = NULL;
    while (fgets(line, sizeof line, stdin)) {
        char op[8];
        size_t a = 0, b = 0, n;
        if (sscanf(line, "%7s", op) != 1) continue;
        if (!strcmp(op, "new")) {
            sscanf(line + 3, "%zu", &a);
            rb_free(rb);
            rb = rb_new(a);
            printf(rb ? "ok\n" : "null\n");
        } else if (!strcmp(op, "w") || !strcmp(op, "o")) {
            unsigned char *d;
            sscanf(line + 1, "%s", arg);
            d = unhex(arg, &n);
            printf("%zu\n", op[0] == 'w' ? rb_write(rb, d, n) : rb_write_overwrite(rb, d, n));
            free(d);
        } else if (!strcmp(op, "r")) {
            unsigned char *out;
            sscanf(line + 1, "%zu", &a);
            out = malloc(a + 1);
            n = rb_read(rb, out, a);
            printf("%zu", n); phex(out, n); putchar('\n');
            free(out);
        } else if (!strcmp(op, "d")) {
            sscanf(line + 1, "%zu", &a);
            printf("%zu\n", rb_read(rb, NULL, a));
        } else if (!strcmp(op, "p")) {
            unsigned char *out;
            sscanf(line + 1, "%zu %zu", &a, &b);
            out = malloc(b + 1);
            n = rb_peek(rb, a, out, b);
            printf("%zu", n); phex(out, n); putchar('\n');
            free(out);
        } else if (!strcmp(op, "f")) {
            sscanf(line + 1, "%zu %zu", &a, &b);
            printf("%zd\n", rb_find(rb, (uint8_t)a, b));
        } else if (!strcmp(op, "l")) {
            char *out;
            ssize_t r;
            sscanf(line + 1, "%zu", &a);
            out = malloc(a ? a : 1);
            r = rb_read_line(rb, out, a);
            printf("%zd", r);
            if (r >= 0) { phex((unsigned char *)out, (size_t)r); printf(" %d", out[r] == '\0'); }
            putchar('\n');
            free(out);
        } else if (!strcmp(op, "z")) {
            sscanf(line + 1, "%zu", &a);
            printf("%d\n", rb_resize(rb, a));
        } else if (!strcmp(op, "s")) {
            printf("%zu %zu %zu\n", rb_size(rb), rb_space(rb), rb_capacity(rb));
        }
    }
    rb_free(rb);
    return 0;
}
