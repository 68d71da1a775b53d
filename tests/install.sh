#!/usr/bin/env bash
# install: `meson install` into a scratch folder gives a whole attnscope:
# - the program, which finds its data folder (scenes, lessons, models, configs) and opens the
#   shipped scenes by name;
# - attnscope(1), which man reads without a warning;
# - libattnscope, its header and attnscope.pc: the header is the API alone, every name prefixed
#   (tests/api_names.py); examples/print_head.c builds with only
#   `pkg-config --cflags --libs attnscope` against the installed copy (not the source tree) and
#   runs; and the whole archive links against what attnscope.pc names, so no dependency is
#   missing from it, whatever part of the library a program calls.
# Usage: install.sh BUILD_DIR PRINT_HEAD_C SCENE
set -eu
build=$1
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >/dev/null
pc=$(find "$dest" -name attnscope.pc | head -1)
[ -n "$pc" ] || { echo "not ok - no attnscope.pc installed"; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "$pc")
root=$dest$prefix

# The program and its data folder. The destdir is not the prefix the binary was built for, so
# ATTNSCOPE_DATA_DIR points at the staged copy, as the installed default would.
bin=$root/bin/attnscope
data=$root/share/attnscope
for d in configs scenes scenes/lessons models/induction; do
  [ -d "$data/$d" ] || { echo "not ok - $data/$d is not installed"; exit 1; }
done
[ ! -e "$data/models/induction/train.py" ] || { echo "not ok - a training script is installed"; exit 1; }
export ATTNSCOPE_DATA_DIR=$data
unset ATTNSCOPE_CONFIGS_DIR
n=$(ls "$data"/scenes/*.yaml "$data"/scenes/lessons/*.yaml | wc -l)
"$bin" check "$data"/scenes/*.yaml "$data"/scenes/lessons/*.yaml >/dev/null ||
  { echo "not ok - the installed scenes check"; exit 1; }
echo "ok - the $n installed scenes and lessons check"
(cd "$dest" && "$bin" check 29-induction-head lessons/3-causal-mask >/dev/null) ||
  { echo "not ok - scenes by name from the data folder"; exit 1; }
echo "ok - scenes by name (29-induction-head, lessons/3-causal-mask) from the data folder"
if ATTNSCOPE_DATA_DIR=$dest/nowhere "$bin" check 10-mha 2>"$dest/err"; then
  echo "not ok - a missing data folder goes unnoticed"
  exit 1
fi
grep -q "no such scene file (looked in ., scenes/ and $dest/nowhere/scenes)" "$dest/err" ||
  { echo "not ok - a missing data folder: $(cat "$dest/err")"; exit 1; }
echo "ok - a missing data folder is said"

# The manual pages, installed and read by man without a warning.
for page in "$root/share/man/man1/attnscope.1:attnscope - a terminal explorer" \
  "$root/share/man/man5/attnscope-scene.5:attnscope-scene - the scene files"; do
  file=${page%%:*}
  name=${page#*:}
  [ -f "$file" ] || { echo "not ok - $file is not installed"; exit 1; }
  warnings=$(man --warnings -l "$file" 2>&1 >/dev/null)
  [ -z "$warnings" ] || { echo "not ok - man --warnings $file: $warnings"; exit 1; }
  MANWIDTH=80 man -l "$file" 2>/dev/null | tr -s " " | grep -q "$name" ||
    { echo "not ok - man -l $file does not show its NAME"; exit 1; }
  echo "ok - $(basename "$file") installed, read by man without a warning"
done
# Every key of the scene format is in attnscope-scene(5): a key the loader knows and the manual
# does not fails the build (src/cli/manscene.c); here, a few that must be there.
for key in attention.kv_latent 'lesson[].caption' 'ablate[].mode' 'weights.heads[].query'; do
  grep -qxF ".B $key" "$root/share/man/man5/attnscope-scene.5" ||
    { echo "not ok - attnscope-scene(5) lacks $key"; exit 1; }
done

# The library.
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$root" \
  --cflags --libs attnscope)
echo "pkg-config: $flags"
case $flags in *"$(dirname "$2")"* | *"/src"*) echo "not ok - the flags point into the source tree"; exit 1 ;; esac
python3 "$(dirname "$0")/api_names.py" "$root/include"
cc -std=c11 -Wall -Werror "$2" $flags -o "$dest/print_head"
"$dest/print_head" "$3" 0 | head -2
echo "ok - the installed library builds and runs examples/print_head.c"
lib=$(find "$root" -name libattnscope.a | head -1)
pc_root() { PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$root" "$@"; }
cc -std=c11 "$2" $(pc_root --cflags attnscope) -Wl,--whole-archive "$lib" -Wl,--no-whole-archive \
  $(pc_root --libs attnscope) -o "$dest/whole" ||
  { echo "not ok - every object of libattnscope.a links with attnscope.pc's libraries"; exit 1; }
echo "ok - every object of libattnscope.a links with attnscope.pc's libraries"
