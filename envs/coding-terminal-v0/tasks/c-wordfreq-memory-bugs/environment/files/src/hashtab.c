#include <stdlib.h>
#include <string.h>
#include "hashtab.h"

#define INITIAL_BUCKETS 256

static unsigned long hash_str(const char *s)
{
    unsigned long h = 5381;
    while (*s)
        h = h * 33 + (unsigned char)*s++;
    return h;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    return p;
}

void ht_init(struct hashtab *ht)
{
    ht->nbuckets = INITIAL_BUCKETS;
    ht->nentries = 0;
    ht->buckets = calloc(ht->nbuckets, sizeof *ht->buckets);
    if (!ht->buckets)
        abort();
}

static void grow(struct hashtab *ht)
{
    size_t newsize = ht->nbuckets * 2;
    struct entry **nb = calloc(newsize, sizeof *nb);
    size_t i;

    if (!nb)
        abort();
    for (i = 0; i < ht->nbuckets; i++) {
        struct entry *e = ht->buckets[i], *next;
        for (; e; e = next) {
            size_t j = hash_str(e->word) % ht->nbuckets;
            next = e->next;
            e->next = nb[j];
            nb[j] = e;
        }
    }
    free(ht->buckets);
    ht->buckets = nb;
    ht->nbuckets = newsize;
}

void ht_add(struct hashtab *ht, const char *word)
{
    size_t i = hash_str(word) % ht->nbuckets;
    struct entry *e;

    for (e = ht->buckets[i]; e; e = e->next) {
        if (strcmp(e->word, word) == 0) {
            e->count++;
            return;
        }
    }
    e = xmalloc(sizeof *e);
    e->word = xmalloc(strlen(word));
    strcpy(e->word, word);
    e->count = 1;
    e->next = ht->buckets[i];
    ht->buckets[i] = e;
    ht->nentries++;
    if (ht->nentries * 4 > ht->nbuckets * 3)
        grow(ht);
}

struct entry **ht_entries(const struct hashtab *ht)
{
    struct entry **arr = xmalloc((ht->nentries + 1) * sizeof *arr);
    size_t i, k = 0;

    for (i = 0; i < ht->nbuckets; i++) {
        struct entry *e;
        for (e = ht->buckets[i]; e; e = e->next)
            arr[k++] = e;
    }
    return arr;
}

void ht_destroy(struct hashtab *ht)
{
    size_t i;

    for (i = 0; i < ht->nbuckets; i++) {
        struct entry *e = ht->buckets[i], *next;
        for (; e; e = next) {
            next = e->next;
            free(e->word);
            free(e);
        }
    }
    free(ht->buckets);
    ht->buckets = NULL;
    ht->nbuckets = ht->nentries = 0;
}
