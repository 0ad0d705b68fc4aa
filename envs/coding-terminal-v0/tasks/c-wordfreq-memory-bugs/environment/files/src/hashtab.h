#ifndef HASHTAB_H
#define HASHTAB_H

#include <stddef.h>

struct entry {
    char *word;
    unsigned long count;
    struct entry *next;
};

struct hashtab {
    struct entry **buckets;
    size_t nbuckets;
    size_t nentries;
};

void ht_init(struct hashtab *ht);
/* Adds one occurrence of word (copied). */
void ht_add(struct hashtab *ht, const char *word);
/* Returns a malloc'd array of all entries (ht->nentries of them). */
struct entry **ht_entries(const struct hashtab *ht);
void ht_destroy(struct hashtab *ht);

#endif
