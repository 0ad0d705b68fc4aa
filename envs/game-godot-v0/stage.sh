#!/usr/bin/env bash
# Stage the host's Godot 3 headless engine and the shared libraries it loads into
# <context>/engine/root/, for the Dockerfile: builds are offline, so the image cannot apt-get
# godot3-server; it copies this machine's instead. `taskgym images build game-godot-v0` runs
# this on a copy of this folder (its one argument), so nothing is staged in the source tree.
set -euo pipefail
context="${1:?usage: stage.sh CONTEXT_FOLDER}"
engine=$(command -v godot3-server) || { echo "install godot3-server first: sudo apt-get install godot3-server" >&2; exit 1; }
root="$context/engine/root"
rm -rf "$context/engine" && mkdir -p "$root"
cp --parents "$(readlink -f "$engine")" "$root/"
# each library under its canonical folder (/lib is a link to /usr/lib in the image), by its
# soname; the C runtime, which every Debian image has, stays the image's own
for lib in $(ldd "$engine" | awk '/=> \//{print $3}'); do
  case "$(basename "$lib")" in libc.so*|libm.so*|libpthread.so*|libdl.so*|libgcc_s.so*|libstdc++.so*|libz.so*) continue;; esac
  dir=$(readlink -f "$(dirname "$lib")")
  mkdir -p "$root$dir"
  cp -L "$lib" "$root$dir/"
done
echo "staged $(find "$root" -type f | wc -l) files"
