#!/bin/bash
set -e
cd /app
python3 - <<'PY'
src = open("src/ringbuf.c").read()
cut = src.index("/* TODO: everything below is still a stub. */")
impl = r'''
static size_t idx(const ringbuf_t *rb, size_t pos)
{
    /* pos < cap and head < cap, so no overflow */
    size_t i = rb->head + pos;
    return i >= rb->cap ? i - rb->cap : i;
}

/* copy n bytes starting at logical position pos into out (n <= len - pos) */
static void copy_out(const ringbuf_t *rb, size_t pos, uint8_t *out, size_t n)
{
    size_t start, first;

    if (n == 0)
        return;
    start = idx(rb, pos);
    first = rb->cap - start;
    if (first > n)
        first = n;
    memcpy(out, rb->buf + start, first);
    if (n > first)
        memcpy(out + first, rb->buf, n - first);
}

static void append(ringbuf_t *rb, const uint8_t *data, size_t n)
{
    /* caller guarantees n <= space */
    size_t tail, first;

    if (n == 0)
        return;
    tail = rb->len == rb->cap ? rb->head : idx(rb, rb->len);
    first = rb->cap - tail;
    if (first > n)
        first = n;
    memcpy(rb->buf + tail, data, first);
    if (n > first)
        memcpy(rb->buf, data + first, n - first);
    rb->len += n;
}

static void drop(ringbuf_t *rb, size_t n)
{
    /* n <= len */
    if (n == 0)
        return;
    if (n == rb->len) {
        rb->head = 0;
        rb->len = 0;
        return;
    }
    rb->head = idx(rb, n);
    rb->len -= n;
}

size_t rb_write(ringbuf_t *rb, const void *data, size_t n)
{
    size_t space = rb->cap - rb->len;

    if (n > space)
        n = space;
    append(rb, data, n);
    return n;
}

size_t rb_write_overwrite(ringbuf_t *rb, const void *data, size_t n)
{
    const uint8_t *d = data;
    size_t dropped = 0, excess;

    if (n >= rb->cap) {
        dropped = rb->len + (n - rb->cap);
        rb->head = 0;
        rb->len = 0;
        append(rb, d + (n - rb->cap), rb->cap);
        return dropped;
    }
    excess = rb->len + n > rb->cap ? rb->len + n - rb->cap : 0;
    drop(rb, excess);
    append(rb, d, n);
    return excess;
}

size_t rb_read(ringbuf_t *rb, void *out, size_t n)
{
    if (n > rb->len)
        n = rb->len;
    if (out)
        copy_out(rb, 0, out, n);
    drop(rb, n);
    return n;
}

size_t rb_peek(const ringbuf_t *rb, size_t offset, void *out, size_t n)
{
    if (offset >= rb->len)
        return 0;
    if (n > rb->len - offset)
        n = rb->len - offset;
    copy_out(rb, offset, out, n);
    return n;
}

ssize_t rb_find(const ringbuf_t *rb, uint8_t byte, size_t from)
{
    size_t pos;

    for (pos = from; pos < rb->len; pos++)
        if (rb->buf[idx(rb, pos)] == byte)
            return (ssize_t)pos;
    return -1;
}

ssize_t rb_read_line(ringbuf_t *rb, char *out, size_t outsz)
{
    ssize_t nl = rb_find(rb, '\n', 0);
    size_t L;

    if (nl < 0)
        return -1;
    L = (size_t)nl + 1;
    if (L >= outsz)
        return -2;
    copy_out(rb, 0, (uint8_t *)out, L);
    out[L] = '\0';
    drop(rb, L);
    return (ssize_t)L;
}

int rb_resize(ringbuf_t *rb, size_t new_capacity)
{
    uint8_t *nb;

    if (new_capacity == 0 || new_capacity < rb->len)
        return -1;
    nb = malloc(new_capacity);
    if (!nb)
        return -1;
    copy_out(rb, 0, nb, rb->len);
    free(rb->buf);
    rb->buf = nb;
    rb->cap = new_capacity;
    rb->head = 0;
    return 0;
}
'''
open("src/ringbuf.c", "w").write(src[:cut] + impl.lstrip("\n"))
PY
/usr/bin/make -C /app
