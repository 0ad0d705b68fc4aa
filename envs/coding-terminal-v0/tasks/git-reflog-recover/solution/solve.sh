#!/bin/bash
set -euo pipefail
cd /app
jitter=$(git log -g --format='%H %s' | awk '$2=="Add" && $3=="full" {print $1; exit}')
ra=$(git log -g --format='%H %s' | awk '$2=="Honour" {print $1; exit}')
git cherry-pick "$jitter" "$ra" >/dev/null
