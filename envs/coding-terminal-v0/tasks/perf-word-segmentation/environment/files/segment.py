"""Compound-token splitter used by the search indexer.

Product feeds contain glued-together tokens ("stainlesssteelkettle"); the
indexer splits them into dictionary words.  All three helpers take the text
and an iterable of non-empty dictionary words (duplicates possible).
"""

MOD = 1_000_000_007


def count_segmentations(text, words):
    """Number of ways to write `text` as a concatenation of dictionary words,
    modulo MOD.  The empty text has exactly one segmentation."""
    words = list(words)
    if text == "":
        return 1
    total = 0
    for w in set(words):
        if text.startswith(w):
            total += count_segmentations(text[len(w):], words)
    return total % MOD


def _all_segmentations(text, words):
    if text == "":
        yield []
        return
    for w in set(words):
        if text.startswith(w):
            for rest in _all_segmentations(text[len(w):], words):
                yield [w] + rest


def fewest_words(text, words):
    """Smallest number of dictionary words that concatenate to `text`;
    -1 if impossible.  The empty text needs 0 words."""
    best = -1
    for seg in _all_segmentations(text, list(words)):
        if best == -1 or len(seg) < best:
            best = len(seg)
    return best


def split_fewest(text, words):
    """The segmentation of `text` with the fewest words, as a list of str.
    Among segmentations with that many words, return the smallest one in
    Python list order (element-wise string comparison).  None if `text`
    cannot be segmented."""
    best = None
    for seg in _all_segmentations(text, list(words)):
        if best is None or (len(seg), seg) < (len(best), best):
            best = seg
    return best
