#!/usr/bin/env bash
# Stage the host's Godot 3 headless engine and the shared libraries it loads into
# envs/game-godot-v0/engine/ (git-ignored), for the Dockerfile: builds are offline, so the
# image cannot apt-get godot3-server; it copies this machine's instead.
#   envs/game-godot-v0/stage_engine.sh && python3 -m taskgym images build game-godot-v0
set -euo pipefail
cd "$(dirname "$0")"
engine=$(command -v godot3-server) || { echo "install godot3-server first: sudo apt-get install godot3-server" >&2; exit 1; }
rm -rf engine && mkdir -p engine/root
cp --parents "$(readlink -f "$engine")" engine/root/
# each library under its canonical folder (/lib is a link to /usr/lib in the image), by its
# soname; the C runtime, which every Debian image has, stays the image's own
for lib in $(ldd "$engine" | awk '/=> \//{print $3}'); do
  case "$(basename "$lib")" in libc.so*|libm.so*|libpthread.so*|libdl.so*|libgcc_s.so*|libstdc++.so*|libz.so*) continue;; esac
  dir=$(readlink -f "$(dirname "$lib")")
  mkdir -p "engine/root$dir"
  cp -L "$lib" "engine/root$dir/"
done
echo "staged $(find engine/root -type f | wc -l) files in $(pwd)/engine"
