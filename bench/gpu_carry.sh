#!/usr/bin/env bash
# What `bench:gpu` (bench/engine/gpu_table.ts) needs on the GPU machine, where nothing is installed:
# .gpu-carry/ (a deno binary and the Vulkan loader, from ../shared/device/prepare-carry.sh) and
# the npm packages bench.ts imports, with theirs (about 8 MB; onnxruntime-web is loaded only for
# --engine ort). Prepares them, checks they fit the device tool's 64 MiB carry, and prints the
# `carry` list and the command for one call of the device tool's `run`.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
prepare=../shared/device/prepare-carry.sh
[ -f "$prepare" ] || { echo "no $prepare: the shared folder is beside the repository" >&2; exit 1; }
bash "$prepare" >&2
carry=(.gpu-carry node_modules/@huggingface node_modules/@mlc-ai node_modules/@noble
  node_modules/comlink)
for p in "${carry[@]}"; do
  [ -e "$p" ] || { echo "missing $p: run npm install first" >&2; exit 1; }
done
kib=$(du -sck "${carry[@]}" | tail -1 | cut -f1)
[ "$kib" -le $((64 * 1024)) ] || { echo "the carry is ${kib} KiB, over 64 MiB" >&2; exit 1; }
printf 'carry (%s KiB): [' "$kib"
sep=""
for p in "${carry[@]}"; do printf '%s"%s"' "$sep" "$p"; sep=", "; done
printf ']\n'
echo 'command: source .gpu-carry/gpu-env.sh && deno run -A bench/engine/gpu_table.ts --budget-s 540'
