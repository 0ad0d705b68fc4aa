import sys

from . import count_levels, top_n


def main():
    counts = count_levels(sys.stdin)
    for level in top_n(counts, 5):
        print(f"{level}\t{counts[level]}")


if __name__ == "__main__":
    main()
