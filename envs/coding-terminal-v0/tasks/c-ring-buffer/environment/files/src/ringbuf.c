#include <stdlib.h>
#include <string.h>
#include "ringbuf.h"

struct ringbuf {
    uint8_t *buf;
    size_t cap;
    size_t head;   /* index of the oldest byte */
    size_t len;    /* number of stored bytes */
};

ringbuf_t *rb_new(size_t capacity)
{
    ringbuf_t *rb;

    if (capacity == 0)
        return NULL;
    rb = malloc(sizeof *rb);
    if (!rb)
        return NULL;
    rb->buf = malloc(capacity);
    if (!rb->buf) {
        free(rb);
        return NULL;
    }
    rb->cap = capacity;
    rb->head = 0;
    rb->len = 0;
    return rb;
}

void rb_free(ringbuf_t *rb)
{
    if (!rb)
        return;
    free(rb->buf);
    free(rb);
}

size_t rb_capacity(const ringbuf_t *rb) { return rb->cap; }
size_t rb_size(const ringbuf_t *rb) { return rb->len; }
size_t rb_space(const ringbuf_t *rb) { return rb->cap - rb->len; }

/* TODO: everything below is still a stub. */

size_t rb_write(ringbuf_t *rb, const void *data, size_t n)
{
    (void)rb; (void)data; (void)n;
    return 0;
}

size_t rb_write_overwrite(ringbuf_t *rb, const void *data, size_t n)
{
    (void)rb; (void)data; (void)n;
    return 0;
}

size_t rb_read(ringbuf_t *rb, void *out, size_t n)
{
    (void)rb; (void)out; (void)n;
    return 0;
}

size_t rb_peek(const ringbuf_t *rb, size_t offset, void *out, size_t n)
{
    (void)rb; (void)offset; (void)out; (void)n;
    return 0;
}

ssize_t rb_find(const ringbuf_t *rb, uint8_t byte, size_t from)
{
    (void)rb; (void)byte; (void)from;
    return -1;
}

ssize_t rb_read_line(ringbuf_t *rb, char *out, size_t outsz)
{
    (void)rb; (void)out; (void)outsz;
    return -1;
}

int rb_resize(ringbuf_t *rb, size_t new_capacity)
{
    (void)rb; (void)new_capacity;
    return -1;
}
