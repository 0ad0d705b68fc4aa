#ifndef RINGBUF_H
#define RINGBUF_H
/*
 * Fixed-capacity byte FIFO used by the serial-port gateway.
 * Position 0 always means the oldest stored byte.  Any capacity >= 1 is valid
 * (not only powers of two).  Functions never write past the lengths they are
 * given and never read uninitialised memory.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct ringbuf ringbuf_t;

/* New empty buffer. NULL if capacity == 0 or allocation fails. */
ringbuf_t *rb_new(size_t capacity);
/* Releases everything; rb_free(NULL) is a no-op. */
void rb_free(ringbuf_t *rb);

size_t rb_capacity(const ringbuf_t *rb);
size_t rb_size(const ringbuf_t *rb);   /* bytes currently stored */
size_t rb_space(const ringbuf_t *rb);  /* capacity - size */

/* Appends min(n, space) bytes from data; returns how many were appended. */
size_t rb_write(ringbuf_t *rb, const void *data, size_t n);

/* Appends all n bytes, discarding the oldest stored bytes to make room.
 * If n > capacity, only the last `capacity` bytes of data are kept (the buffer
 * then holds exactly those).  Returns the total number of bytes discarded:
 * previously stored bytes dropped plus leading bytes of data that were skipped. */
size_t rb_write_overwrite(ringbuf_t *rb, const void *data, size_t n);

/* Removes up to n of the oldest bytes, copying them to out unless out is NULL.
 * Returns the number of bytes removed. */
size_t rb_read(ringbuf_t *rb, void *out, size_t n);

/* Copies up to n bytes starting at position `offset` into out without removing
 * anything. Returns the number copied (0 when offset >= size). */
size_t rb_peek(const ringbuf_t *rb, size_t offset, void *out, size_t n);

/* Position of the first occurrence of `byte` at position >= from, or -1. */
ssize_t rb_find(const ringbuf_t *rb, uint8_t byte, size_t from);

/* If the buffer holds a '\n', let L be the length of the line including that
 * first '\n'.  If L < outsz: removes the L bytes, copies them to out followed by
 * a '\0' and returns L.  If L >= outsz: returns -2 and changes nothing.
 * If there is no '\n' stored: returns -1 and changes nothing. */
ssize_t rb_read_line(ringbuf_t *rb, char *out, size_t outsz);

/* Changes the capacity, keeping the stored bytes in order.  Returns 0 on
 * success; -1 (buffer unchanged) if new_capacity == 0, new_capacity < size,
 * or allocation fails. */
int rb_resize(ringbuf_t *rb, size_t new_capacity);

#endif
