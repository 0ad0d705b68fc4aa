#!/usr/bin/env bash
# Install taskgym and the system packages its sandboxes use.
#   ./scripts/install.sh            taskgym itself
#   ./scripts/install.sh --test     plus the test, lint and docs tools, uvloop (fast extra), CadQuery (cad extra), trimesh
#                                   (mesh extra) and the Godot engine (game extra)
#   ./scripts/install.sh --game     plus the Godot 3 headless engine (godot3-server) of game-godot-v0
#                                   (--test installs it too)
# System packages: bubblewrap (the sandbox), and inside the sandbox python3 with pytest,
# git, make, gcc (what coding tasks use). Installed with apt-get when run as root or with
# sudo; otherwise the exact command to run is printed. Ends with `taskgym doctor`, which
# fails only when a required part is missing (optional ones, such as the cad and pdf extras,
# are "--" lines naming the extra that adds them).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(bubblewrap python3 python3-pytest git make gcc libc6-dev procps)
case "${1:-}" in --test|--game) packages+=(godot3-server) ;; esac  # the engine game-godot-v0 runs
# the copy-on-write tests make an XFS and a btrfs filesystem on a loop device (tests/sandbox/test_cow.py)
if [ "${1:-}" = "--test" ]; then packages+=(xfsprogs btrfs-progs); fi
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if ! command -v apt-get >/dev/null; then
    echo "taskgym needs: ${missing[*]} (package names as on Debian/Ubuntu); install them with your package manager" >&2
    exit 1
  elif [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  elif sudo -n true 2>/dev/null; then
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "taskgym needs system packages; run: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

extras=""
if [ "${1:-}" = "--test" ]; then extras="[test,fast,cad,pdf,docker,mesh,game,serve,endpoint,mcp]"; fi  # the extras of the envs whose tests run
if [ "${1:-}" = "--game" ]; then extras="[game]"; fi
python3 -m pip install --quiet --disable-pip-version-check -e ".${extras}"
if [ "${1:-}" = "--test" ]; then  # a third-party env package, as a user would install one (tests/core/test_plugins.py)
  python3 -m pip install --quiet --disable-pip-version-check --no-deps ./fixtures/plugin-env
fi
command -v pyenv >/dev/null && pyenv rehash || true
python3 -m taskgym doctor
