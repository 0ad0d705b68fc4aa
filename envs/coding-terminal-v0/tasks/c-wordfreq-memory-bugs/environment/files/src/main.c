/*
 * wordfreq - print the most frequent words of some text.
 *
 * usage: wordfreq [-n TOP] [-m MINLEN] [FILE...]      (no FILE: read stdin)
 *
 * A word is a maximal run of ASCII letters and digits, compared case-insensitively
 * (printed in lower case); every other byte separates words.  Words shorter than
 * MINLEN (default 1) are ignored entirely.  Prints the TOP (default 10) most
 * frequent words as "COUNT WORD", most frequent first, ties in strcmp order of
 * the word, then a line "total T distinct D" (T = counted words, D = distinct).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hashtab.h"

#define LINE_MAX_LEN 1024
#define WORD_MAX_LEN 64

static unsigned long total_words;
static size_t min_len = 1;

static void count_word(struct hashtab *ht, const char *w, size_t len)
{
    if (len < min_len)
        return;
    ht_add(ht, w);
    total_words++;
}

static void scan_stream(FILE *fp, struct hashtab *ht)
{
    char line[LINE_MAX_LEN];
    char word[WORD_MAX_LEN];

    while (fgets(line, sizeof line, fp)) {
        size_t wl = 0;
        char *p;
        for (p = line; *p; p++) {
            unsigned char c = (unsigned char)*p;
            if (c < 128 && isalnum(c)) {
                word[wl++] = (char)tolower(c);
            } else if (wl > 0) {
                word[wl] = '\0';
                count_word(ht, word, wl);
                wl = 0;
            }
        }
        if (wl > 0) {
            word[wl] = '\0';
            count_word(ht, word, wl);
        }
    }
}

static int cmp_entry(const void *a, const void *b)
{
    const struct entry *x = *(struct entry * const *)a;
    const struct entry *y = *(struct entry * const *)b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->word, y->word);
}

int main(int argc, char **argv)
{
    struct hashtab ht;
    struct entry **all;
    long top = 10;
    size_t i;
    int argi = 1;

    while (argi < argc && argv[argi][0] == '-' && argv[argi][1] != '\0') {
        if (strcmp(argv[argi], "-n") == 0 && argi + 1 < argc) {
            top = strtol(argv[argi + 1], NULL, 10);
            argi += 2;
        } else if (strcmp(argv[argi], "-m") == 0 && argi + 1 < argc) {
            min_len = (size_t)strtoul(argv[argi + 1], NULL, 10);
            argi += 2;
        } else {
            fprintf(stderr, "usage: wordfreq [-n TOP] [-m MINLEN] [FILE...]\n");
            return 2;
        }
    }
    if (top < 0)
        top = 0;

    ht_init(&ht);
    if (argi == argc) {
        scan_stream(stdin, &ht);
    } else {
        for (; argi < argc; argi++) {
            FILE *fp = fopen(argv[argi], "rb");
            if (!fp) {
                perror(argv[argi]);
                ht_destroy(&ht);
                return 1;
            }
            scan_stream(fp, &ht);
            fclose(fp);
        }
    }

    all = ht_entries(&ht);
    qsort(all, ht.nentries, sizeof *all, cmp_entry);
    for (i = 0; i < (size_t)top && i < ht.nentries; i++)
        printf("%lu %s\n", all[i]->count, all[i]->word);
    printf("total %lu distinct %zu\n", total_words, ht.nentries);
    free(all);
    ht_destroy(&ht);
    return 0;
}
