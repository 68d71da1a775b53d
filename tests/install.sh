#!/usr/bin/env bash
# install: `meson install` puts libattnscope, its headers and attnscope.pc where a front end
# finds them: examples/print_head.c builds with only `pkg-config --cflags --libs attnscope`
# against the installed copy (not the source tree) and runs.
# Usage: install.sh BUILD_DIR PRINT_HEAD_C SCENE
set -eu
build=$1
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >/dev/null
pc=$(find "$dest" -name attnscope.pc | head -1)
[ -n "$pc" ] || { echo "not ok - no attnscope.pc installed"; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "$pc")
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$dest$prefix" \
  --cflags --libs attnscope)
echo "pkg-config: $flags"
case $flags in *"$(dirname "$2")"* | *"/src"*) echo "not ok - the flags point into the source tree"; exit 1 ;; esac
cc -std=c11 -Wall -Werror "$2" $flags -o "$dest/print_head"
"$dest/print_head" "$3" 0 | head -2
echo "ok - the installed library builds and runs examples/print_head.c"
