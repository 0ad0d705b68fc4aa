#!/bin/bash
set -e
cd /app
cat > Makefile <<'MK'
CC = gcc
CFLAGS = -Wall -O2 -Iinclude
DEPFLAGS = -MMD -MP
LDLIBS = -lm

SRCS = $(wildcard src/*.c)
OBJS = $(SRCS:.c=.o)
DEPS = $(OBJS:.o=.d)

.PHONY: all clean

all: statcalc

statcalc: $(OBJS)
	$(CC) $(CFLAGS) -o $@ $(OBJS) $(LDLIBS)

include/version.h: VERSION
	echo "#define STATCALC_VERSION \"$$(cat VERSION)\"" > $@

# generated header must exist before main.c is compiled (also for make -j)
src/main.o: include/version.h

src/%.o: src/%.c
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

clean:
	rm -f src/*.o src/*.d statcalc include/version.h

-include $(DEPS)
MK
/usr/bin/make -C /app
