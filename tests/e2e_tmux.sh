#!/usr/bin/env bash
# e2e_tmux: the real attnscope binary driven in tmux, the way a person uses it.
#
# Each check starts the explorer in its own tmux session (private socket, fixed size), sends
# keys, reads the screen with capture-pane and asserts what a user would see: the default
# scene, a softmax value equal to `attnscope print`, a sentence edit, heads/d_out with an
# invalid combination, an export, resize to the minimum and back, and every way out (q, C-c,
# SIGTERM, C-z + fg) leaving the terminal as it was (C-c, as q, asking first when there are
# unsaved edits, a second C-c quitting), and a LLaMA-style block scene stepped to
# its end, shifted and exported, a 200-token scene zoomed out to its overview and back, the
# token view following the cursor, a lesson stepped through, left and resumed, a lesson's step
# saved as a scene of its own, text with control characters shown escaped, and the predictions
# panel, the lens, ablation and the rollout on the induction model; every family's checkpoint
# (Llama, Qwen2, Qwen3, Mistral, BERT): its model view, heads, RoPE, KV heads, SwiGLU,
# predictions, lens, ablation, an edit and an export; a model folder opened with --text, its
# scene saved with w, a sentence past its context, and a sentence piped in (--text-file -).
# Usage: e2e_tmux.sh ATTNSCOPE_BINARY
set -u
BIN=$(realpath "$1")
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
. "$SRC/tests/tmux_lib.sh"
tmux_open e2e

export ATTNSCOPE_CONFIGS_DIR="$SRC/configs"
export XDG_CONFIG_HOME="$WORK/config" # a developer's own keys.yaml must not change the test

# start NAME COLS LINES COMMAND: a detached session running COMMAND under tmux-256color.
start() {
  T new-session -d -s "$1" -x "$2" -y "$3" -e TERM=tmux-256color \
    -e ATTNSCOPE_CONFIGS_DIR="$ATTNSCOPE_CONFIGS_DIR" -e XDG_CONFIG_HOME="$XDG_CONFIG_HOME" "$4"
  T set-option -t "$1" -g status off >/dev/null
}
quiet() { "$@" >/dev/null; }

# A pane command that records the terminal settings around attnscope and its exit status.
wrapped() { # tag [args...]
  local tag=$1
  shift
  # The exit status is written last, so once it exists the "after" settings do too.
  # After it, cat -v shows how a paste reaches the shell (paste_off).
  echo "stty -g > $WORK/$tag.before; $BIN $* 2>$WORK/$tag.err; s=\$?; stty -g > $WORK/$tag.after; echo \$s > $WORK/$tag.exit; cat -v > $WORK/$tag.paste; sleep 600"
}
# paste_off TAG: once attnscope has exited, a paste reaches the shell plain: bracketed paste is
# off again (with it on, tmux would wrap the text in ESC[200~ ... ESC[201~, ^[[200~ to cat -v).
# The pane sleeps on after its cat.
paste_off() {
  T set-buffer -b probe "probe"
  T paste-buffer -p -b probe -t "$1"
  keys "$1" Enter C-d
  wait_file "$WORK/$1.paste" && grep -qx probe "$WORK/$1.paste"
}
restored() { # tag: same stty settings before and after
  wait_file "$WORK/$1.exit" && cmp -s "$WORK/$1.before" "$WORK/$1.after"
}

# 1. Launch with the default scene.
start main 100 30 "$BIN"
check "launch: default scene header" main wait_for main "Your journey starts with one step"
check "launch: opens on the weights of head 0" main wait_for main "head 0 (of 2) · weights · 6×6"

# 2. Step away and back to softmax; the selected value equals `attnscope print`.
keys main , , .
check "stage: masked stage shows -∞" main wait_for main "-∞"
keys main . Down
# Row 1, column 0 of head 0's weights as `attnscope print` writes it (torch's format).
want=$("$BIN" print --stage weights --head 0 | grep -A1 '^tensor' | tail -1 | tr -d ' [' | cut -d, -f1)
check "softmax: print gives the book value 0.4776" main test "$want" = "0.4776"
check "softmax: inspector shows the same value" main wait_for main "= $want"
check "softmax: the heatmap cell reads 0.4776, as print" main wait_for main "journey    0.4776   0.5224"

# 3. Edit the sentence.
keys main t C-u
text main "The cat sat on the mat"
keys main Enter
check "edit: six new tokens in the header" main wait_for main "6 tokens"
check "edit: the new tokens label the rows" main wait_for main "mat"
check "edit: the title names the new sentence, not the old" main \
  wait_for main " The cat sat on the mat: multi-head attention (ch. 3.6)"

# 4. Heads and d_out, including an invalid combination.
keys main H C-u
text main "4"
keys main Enter
check "heads 4 with d_out 2 is refused with a message" main wait_for main "d_out 2 is not divisible by heads 4"
check "the last valid result stays on screen" main wait_for main "head 0 (of 2)"
keys main d C-u
text main "8"
keys main Enter
check "d_out 8 fixes it: 4 heads of head_dim 2" main wait_for main "d_out 8   heads 4"
check "the error is gone" main wait_gone main "not divisible"
keys main ]
check "head switch: head 1 of 4" main wait_for main "head 1 (of 4)"

# 5. Export, then check the CSV against print.
keys main e C-u
text main "$WORK/export"
keys main Enter
check "export: says where it wrote" main wait_for main "exported every stage as CSV to $WORK/export"
check "export: weights.csv has the token header" main \
  grep -q '^token,The,cat,sat,on,the,mat' "$WORK/export/head1/weights.csv"
check "export: scene.yaml reloads" main quiet "$BIN" check "$WORK/export/scene.yaml"

# 6. Resize down to below the minimum, to the minimum, and back.
T resize-window -t main -x 50 -y 12
check "resize: too small says what it needs" main wait_for main "terminal too small"
T resize-window -t main -x 64 -y 18
check "resize: the minimum size shows the explorer" main wait_for main "head 1 (of 4)"
T resize-window -t main -x 100 -y 30
check "resize: back to full size" main wait_for main "row Σ"
keys main q
check "q with unsaved edits asks first" main wait_for main "quit without saving your edits?"
keys main n
check "anything but y keeps the explorer open" main wait_for main "row Σ"
T kill-session -t main

# 7. Every way out restores the terminal.
start quit 100 30 "$(wrapped quit)"
wait_for quit "row Σ" && keys quit q
check "q: exit status 0 and terminal restored" quit restored quit
check "q: the explorer's screen is gone" quit wait_gone quit "row Σ"
check "q: exit status 0" quit grep -qx 0 "$WORK/quit.exit"
check "q: bracketed paste off again" quit paste_off quit

start ctrlc 100 30 "$(wrapped ctrlc)"
wait_for ctrlc "row Σ" && keys ctrlc C-c
check "C-c: terminal restored" ctrlc restored ctrlc
check "C-c: exit status 130" ctrlc grep -qx 130 "$WORK/ctrlc.exit"
check "C-c: bracketed paste off again" ctrlc paste_off ctrlc

# C-c asks as q does when there are unsaved edits (issue 27: it quit at once, the edits lost);
# anything but y or C-c keeps the explorer; a second C-c quits with C-c's status; q's question
# is answered by C-c too.
start ctrlc2 100 30 "$(wrapped ctrlc2)"
wait_for ctrlc2 "row Σ" && keys ctrlc2 c
check "an edit: causal off" ctrlc2 wait_for ctrlc2 "causal off"
keys ctrlc2 C-c
check "C-c with unsaved edits asks first" ctrlc2 \
  wait_for ctrlc2 "quit without saving your edits? (y/n; C-c again quits)"
keys ctrlc2 n
check "C-c's question: n keeps the explorer" ctrlc2 wait_gone ctrlc2 "quit without saving"
keys ctrlc2 q
check "q asks too" ctrlc2 wait_for ctrlc2 "quit without saving your edits? (y/n)"
keys ctrlc2 C-c
check "C-c answers q's question: out, terminal restored" ctrlc2 restored ctrlc2
check "C-c after q: exit status 130" ctrlc2 grep -qx 130 "$WORK/ctrlc2.exit"
start ctrlc3 100 30 "$(wrapped ctrlc3)"
wait_for ctrlc3 "row Σ" && keys ctrlc3 c
wait_for ctrlc3 "causal off" && keys ctrlc3 C-c
wait_for ctrlc3 "C-c again quits" && keys ctrlc3 C-c
check "C-c twice: out, terminal restored" ctrlc3 restored ctrlc3
check "C-c twice: exit status 130" ctrlc3 grep -qx 130 "$WORK/ctrlc3.exit"
check "C-c twice: bracketed paste off again" ctrlc3 paste_off ctrlc3

start term 100 30 "$(wrapped term)"
wait_for term "row Σ"
pid=$(pgrep -n -f "^$BIN\$")
[ -n "$pid" ] && kill -TERM "$pid"
check "SIGTERM: terminal restored" term restored term
check "SIGTERM: exit status 143" term grep -qx 143 "$WORK/term.exit"
check "SIGTERM: bracketed paste off again" term paste_off term

# The terminal modes tmux tracks for the pane: alternate screen, cursor shown, keypad and mouse
# modes. After attnscope exits they must be what the shell had before it started.
term_flags() {
  T display-message -p -t "$1" \
    '#{alternate_on} #{cursor_flag} #{keypad_cursor_flag} #{keypad_flag} #{mouse_any_flag} #{mouse_standard_flag} #{mouse_button_flag} #{mouse_sgr_flag}'
}
fresh_flags="0 1 0 0 0 0 0 0"

start hup 100 30 "$(wrapped hup)"
wait_for hup "row Σ"
pid=$(pgrep -n -f "^$BIN\$")
[ -n "$pid" ] && kill -HUP "$pid"
check "SIGHUP (the ssh window closed): terminal restored" hup restored hup
check "SIGHUP: exit status 129" hup grep -qx 129 "$WORK/hup.exit"
check "SIGHUP: screen modes restored" hup test "$(term_flags hup)" = "$fresh_flags"
check "SIGHUP: bracketed paste off again" hup paste_off hup

# A crash (SIGSEGV, SIGBUS, SIGABRT) restores the terminal first, then says what happened, and
# dies of the signal as the system would.
for sig in SEGV BUS ABRT; do
  tag=crash$sig
  start "$tag" 100 30 "$(wrapped "$tag")"
  wait_for "$tag" "row Σ"
  check "SIG$sig: the explorer has the alternate screen, keypad and mouse" "$tag" \
    test "$(term_flags "$tag")" != "$fresh_flags"
  pid=$(pgrep -n -f "^$BIN\$")
  [ -n "$pid" ] && kill -"$sig" "$pid"
  num=$(kill -l "$sig")
  check "SIG$sig: terminal modes restored (stty)" "$tag" restored "$tag"
  check "SIG$sig: exit status $((128 + num))" "$tag" grep -qx $((128 + num)) "$WORK/$tag.exit"
  check "SIG$sig: screen, cursor, keypad and mouse restored" "$tag" \
    test "$(term_flags "$tag")" = "$fresh_flags"
  check "SIG$sig: says it crashed, after restoring" "$tag" \
    grep -q "crashed with .*(SIG$sig); the terminal was restored" "$WORK/$tag.err"
  check "SIG$sig: bracketed paste off again" "$tag" paste_off "$tag"
  T kill-session -t "$tag"
done

# 8. C-z suspends to the shell; fg brings the explorer back intact.
start susp 100 30 "bash --norc --noprofile -i"
text susp "PS1='ready> '; stty -g > $WORK/susp.before; $BIN"
keys susp Enter
wait_for susp "row Σ"
keys susp C-z
check "C-z: back at the shell" susp wait_for susp "ready>"
text susp "fg"
keys susp Enter
check "fg: the explorer is redrawn" susp wait_for susp "row Σ"
keys susp q
wait_gone susp "row Σ"
text susp "stty -g > $WORK/susp.after"
keys susp Enter
wait_file "$WORK/susp.after"
check "C-z/fg then q: terminal restored" susp cmp -s "$WORK/susp.before" "$WORK/susp.after"

# 9. Characters that share numbers with curses key codes are text, never keys: 'ą' is U+0105
# and KEY_RIGHT 0405, 'ć' U+0107 and KEY_BACKSPACE 0407.
start pl 100 30 "$BIN"
wait_for pl "row Σ"
keys pl Down
check "polish: cursor on journey/Your" pl wait_for pl "row 1 “journey” · column 0 “Your”"
text pl "ąćą"
sleep 0.3
check "polish: typing ą in the map does not move the cursor" pl \
  wait_for pl "row 1 “journey” · column 0 “Your”"
keys pl t C-u
text pl "Zażółć gęślą jaźń"
keys pl BSpace
text pl "ć"
keys pl Enter
check "polish: the sentence editor keeps every letter (ń erased, ć typed)" pl wait_for pl "Zażółć    gęślą     jaźć │"
check "polish: three tokens" pl wait_for pl "3 tokens"
T kill-session -t pl

# 10. A comma-decimal locale (de_DE.UTF-8, generated when the system has none): the screen,
# the prompts and the export all use '.', and a typed "0,5" is understood.
comma=""
for l in de_DE.UTF-8 de_DE.utf8; do
  if LC_ALL=$l locale -k decimal_point 2>/dev/null | grep -q '","'; then comma=$l; fi
done
locpath=""
if [ -z "$comma" ]; then
  mkdir -p "$WORK/locale"
  localedef -i de_DE -f UTF-8 "$WORK/locale/de_DE.UTF-8" >/dev/null 2>&1
  locpath="$WORK/locale"
  comma=de_DE.UTF-8
fi
check "locale: a comma-decimal locale is available" none \
  sh -c "LOCPATH='$locpath' LC_ALL=$comma locale -k decimal_point | grep -q '\",\"'"
T new-session -d -s de -x 100 -y 30 -e TERM=tmux-256color -e ATTNSCOPE_CONFIGS_DIR="$ATTNSCOPE_CONFIGS_DIR" \
  -e XDG_CONFIG_HOME="$XDG_CONFIG_HOME" -e LC_ALL="$comma" -e LOCPATH="$locpath" "$BIN"
T set-option -t de -g status off >/dev/null
wait_for de "row Σ"
keys de Down
check "locale: the cells and the inspector write 0.4776" de wait_for de "= 0.4776"
check "locale: no decimal comma on screen" de sh -c "! tmux -L '$SOCK' capture-pane -t de -p | grep -q '0,4776'"
keys de D C-u
text de "0,5"
keys de Enter
check "locale: a typed 0,5 sets dropout 0.5" de wait_for de "dropout 0.5"
keys de D C-u
text de "0.25"
keys de Enter
check "locale: a typed 0.25 sets dropout 0.25" de wait_for de "dropout 0.25"
keys de e C-u
text de "$WORK/de-export"
keys de Enter
check "locale: export says where it wrote" de wait_for de "exported every stage as CSV to $WORK/de-export"
check "locale: CSV numbers use '.' (journey row of head 0's weights)" de \
  grep -qE '^journey,0\.[0-9]+,0\.[0-9]+,0,0,0,0' "$WORK/de-export/head0/weights.csv"
check "locale: no decimal comma in any CSV" de sh -c "! grep -rqE '[0-9],[0-9]+,[0-9]' '$WORK/de-export/head0/scores.csv'"
check "locale: scene.yaml has dropout: 0.25 and loads" de \
  sh -c "grep -q 'dropout: 0.25' '$WORK/de-export/scene.yaml' && '$BIN' check '$WORK/de-export/scene.yaml' >/dev/null"
T kill-session -t de

# 11. A bad scene never opens the UI: file:line:col on stderr, exit 1.
printf 'text: hi\nattention:\n  heads: 3\n  d_out: 4\n' >"$WORK/bad.yaml"
start bad 100 30 "$(wrapped bad "$WORK/bad.yaml")"
wait_file "$WORK/bad.exit"
check "bad scene: exit 1" bad grep -qx 1 "$WORK/bad.exit"
check "bad scene: file:line:col message" bad grep -q "bad.yaml:4:10: d_out 4 is not divisible by heads 3" "$WORK/bad.err"

# 12. A later system: the LLaMA-style block. Step to the block's last stage, compare a cell with
# `attnscope print`, shift the positions (RoPE keeps the weights), export the block's files.
start llama 120 32 "$BIN $SRC/scenes/28-llama-block.yaml"
check "llama: the stage bar opens on the first stages, by their names" llama \
  wait_for llama " inputs norm1 queries keys values queries_rotated keys_rotated scores"
keys llama . . . . . . . . . . . . .
check "llama: the last stage is residual2, the block's output" llama wait_for llama "residual2 (+ ffn_out) · 10×8"
check "llama: the stage bar follows, the block's stages by the names print --stage takes" llama \
  wait_for llama "output residual1 norm2 ffn_hidden ffn_activated ffn_out residual2"
want=$("$BIN" print "$SRC/scenes/28-llama-block.yaml" --stage residual2 | grep '^tensor' | tr -d ' [' | cut -d, -f1 | sed 's/tensor(//')
check "llama: residual2[0][0] equals print ($want)" llama wait_for llama "= $want"
keys llama o C-u
text llama "7"
keys llama Enter
check "llama: the shift keeps the weights" llama wait_for llama "positions now 7–16"
keys llama e C-u
text llama "$WORK/llama-export"
keys llama Enter
check "llama: export says where it wrote" llama wait_for llama "exported every stage as CSV to $WORK/llama-export"
check "llama: block_output.csv and the rotated keys are there" llama \
  test -s "$WORK/llama-export/block_output.csv" -a -s "$WORK/llama-export/head3/keys_rotated.csv"
check "llama: the export's scene keeps offset 7" llama grep -q "offset: 7" "$WORK/llama-export/scene.yaml"
T kill-session -t llama

# 13. A GPT-2 checkpoint: its BPE tokens on screen, a sentence edit tokenised by it, the
# induction score in the model view.
start gpt2 120 32 "$BIN $SRC/tests/golden/gpt2/scenes/tiny-all.yaml"
check "gpt2: byte-level tokens with a visible space" gpt2 wait_for gpt2 "␣cat"
keys gpt2 t C-u
text gpt2 "the cat sat"
keys gpt2 Enter
check "gpt2: the edit is tokenised by the checkpoint's BPE" gpt2 wait_for gpt2 "the sentence (18 → 3 tokens)"
# a title that names no sentence stays as it is, and nothing says "edited" over it
check "gpt2: the title stays true" gpt2 wait_for gpt2 " tiny GPT-2: all three layers, F32   "
check "gpt2: no '· edited' tag" gpt2 wait_gone gpt2 "edited"
T kill-session -t gpt2

# 14. A long scene (200 tokens): it opens on the overview, where a cell is a block of values and
# the legend says how many, each row on its own scale; zoom in to the numbers and out again,
# switch the blocks to their mean, step a block, and zoom back in with the cursor where the step
# left it.
start long 120 40 "$BIN $SRC/tests/fixtures/long/200-tokens.yaml"
check "long: opens on the overview, its legend naming its blocks, per row" long \
  wait_for long "1 cell = 5×2 tokens, max · row scale"
check "long: the last rows are labelled by their positions" long wait_for long "190–199"
keys long z z z z
check "long: z zooms in to the numbers" long wait_for long "row Σ"
keys long Z
check "long: Z zooms out to colours, one value a cell" long wait_for long "1 cell = 1 value"
keys long Z Z Z
check "long: back at the overview" long wait_for long "1 cell = 5×2 tokens, max"
keys long Z
check "long: Z at the overview says the whole matrix is in view" long \
  wait_for long "zoomed out to the whole matrix"
keys long b
check "long: b shows the blocks' mean" long wait_for long "1 cell = 5×2 tokens, mean"
keys long Down
check "long: a step moves one block" long wait_for long "rows 5–9 × columns 0–1: max"
check "long: the inspector explains the block" long wait_for long "block: rows 5–9 × columns 0–1"
keys long z z z z
check "long: z four times is back to the numbers" long wait_for long "row Σ"
check "long: the cursor kept the row the step reached" long \
  wait_for long "row 5 “the” · column 0 “trees”"
T kill-session -t long

# 15. The shipped trained model (models/induction): it opens on layer 1's induction head, where
# the second " moon" looks at the " king" that followed the first; { goes to layer 0's
# previous-token head, and the inspector names each head by its score.
start ind 150 45 "$BIN $SRC/scenes/29-induction-head.yaml"
check "induction: opens on layer 1's head" ind wait_for ind "layer 1 · head 0 (of 1) · weights"
check "induction: the second moon looks at the king after the first" ind \
  wait_for ind "␣moon    0.278  0.091  0.621"
keys ind "{"
check "induction: { shows layer 0" ind wait_for ind "layer 0 · head 0 (of 1)"
T kill-session -t ind

# 16. A baseline (B): pin the default scene, change the seed, see the Δ title and the inspector's
# baseline → now; B again unpins, and undo still walks the edit back.
start base 120 32 "$BIN"
wait_for base "row Σ"
keys base B
check "baseline: B pins it" base wait_for base "baseline pinned"
keys base s C-u
text base "7"
keys base Enter
check "baseline: the title says Δ vs baseline and what changed" base \
  wait_for base "Δ vs baseline (seed 123 → 7)"
keys base Down
check "baseline: the inspector shows baseline, now and Δ" base wait_for base "Δ = "
keys base B
check "baseline: B again unpins" base wait_for base "baseline unpinned"
check "baseline: the title is the values' again" base wait_gone base "Δ vs baseline"
keys base u
check "baseline: undo still works" base wait_for base "undid: seed 7 → 123"
T kill-session -t base

# 17. The token view (v): the sentence with the query marked ▶ and drawn reversed, the keys it
# sees as sorted bars with their values. Moving the cursor moves the query, and the bars follow.
start tv 120 30 "$BIN $SRC/scenes/10-mha.yaml"
wait_for tv "row Σ"
keys tv Down v
# top_bar: the first bar under the heading, "value token" (the map's columns cut off).
top_bar() { screen tv | grep -A1 ' top [0-9]* of ' | tail -1 | sed 's/.*│//' | awk '{print $1, $2}'; }
# reversed QUERY: the chip ▶QUERY is drawn in reverse video (SGR 7), as the map's cursor.
reversed() { T capture-pane -t tv -p -e | grep -qE $'\e\\[([0-9]+;)*7(;[0-9]+)*m(\e\\[[0-9;]*m)*▶'"$1"; }
check "tokens: v shows the token view beside the map" tv wait_for tv "│ token view · head 0 · weights"
check "tokens: the query is journey, row 1" tv wait_for tv "▶journey ×starts"
check "tokens: the query is drawn reversed" tv reversed journey
check "tokens: journey sees two keys" tv wait_for tv "top 2 of 2 keys “journey” sees"
check "tokens: the top bar is journey itself, 0.5224" tv test "$(top_bar)" = "0.5224 journey"
keys tv Down
check "tokens: Down makes starts the query" tv wait_for tv "▶starts ×with"
moved_to_starts() { reversed starts && ! reversed journey; }
check "tokens: starts is drawn reversed, journey no longer" tv moved_to_starts
check "tokens: starts sees three keys" tv wait_for tv "top 3 of 3 keys “starts” sees"
check "tokens: the top bar is now 0.3434 journey" tv test "$(top_bar)" = "0.3434 journey"
keys tv v
check "tokens: v again shows the inspector" tv wait_for tv "│ inspector"
T kill-session -t tv

# 18. A workshop's lesson (scenes/lessons/3-causal-mask.yaml): it opens in lesson mode on step 1,
# caption and position shown; a step the learner changed (c, another stage) has its caption
# marked stale until it is as written again; Space and the arrows step (an edit made, then
# undone going back),
# i leaves the lesson (the arrows move the cursor again) and comes back to the step as written,
# and at the last step q quits without asking, however many edits the lesson made.
start lesson 100 30 "$(wrapped lesson "$SRC/scenes/lessons/3-causal-mask.yaml")"
check "lesson: opens on step 1 of 7" lesson wait_for lesson "lesson 1/7"
check "lesson: the caption quotes the number on screen" lesson \
  wait_for lesson "it gives 0.1510 of its attention"
check "lesson: the lesson keys in the status line" lesson wait_for lesson "Space/→:next ←:back"
keys lesson Space
check "lesson: Space goes to step 2, its edit made" lesson wait_for lesson "lesson 2/7"
check "lesson: the message says what the step changed" lesson wait_for lesson "causal on"
check "lesson: step 2's caption" lesson wait_for lesson "The first idea (the book's masked_simple)"
keys lesson c
check "lesson: a changed step's caption is marked stale, Space's part told truly" lesson \
  wait_for lesson "you changed this step: Space goes on from it as written"
keys lesson c
check "lesson: the step as written again: the caption is not stale" lesson \
  wait_gone lesson "you changed this step"
keys lesson .
check "lesson: another stage makes it stale too" lesson wait_for lesson "you changed this step"
keys lesson ,
check "lesson: back on the step's stage" lesson wait_gone lesson "you changed this step"
keys lesson Right
check "lesson: → goes to step 3" lesson wait_for lesson "lesson 3/7"
check "lesson: renormalised weights" lesson wait_for lesson "journey    0.5517   0.4483"
keys lesson Right
check "lesson: step 4 masks with -inf" lesson wait_for lesson "journey    0.3293   0.1218       -∞"
keys lesson Left
check "lesson: ← goes back, undoing step 4's edit" lesson wait_for lesson "undid: mask after_softmax"
check "lesson: step 3 again" lesson wait_for lesson "lesson 3/7"
keys lesson i
check "lesson: i leaves the lesson" lesson wait_gone lesson "lesson · step"
check "lesson: the way back offered" lesson wait_for lesson "i:back to the lesson"
keys lesson Right
check "lesson: out of it → moves the cursor" lesson \
  wait_for lesson "row 1 “journey” · column 1 “journey”"
keys lesson c
check "lesson: out of it the keys edit as ever" lesson wait_for lesson "causal off"
keys lesson i
check "lesson: i comes back to step 3 as written" lesson wait_for lesson "lesson 3/7"
check "lesson: the step's scene restored" lesson wait_for lesson "journey    0.5517   0.4483"
keys lesson Space Space Space Space
check "lesson: the last step" lesson wait_for lesson "lesson 7/7"
keys lesson Space
check "lesson: Space at the end says so" lesson wait_for lesson "the last step of the lesson"
keys lesson q
check "lesson: q at a lesson's step quits without asking, terminal restored" lesson \
  restored lesson
check "lesson: exit status 0" lesson test "$(cat "$WORK/lesson.exit" 2>/dev/null)" = 0
T kill-session -t lesson

# 19. Saving in a lesson (lesson 3, Space Space w): the step on screen is saved as a scene of
# its own, without lesson:, in the current folder (scenes/lessons/ is shipped), and the prompt
# says so. With the lesson kept, the file would reopen on step 1 already masked, under a caption
# quoting the unmasked 0.1510. `attnscope check` passes the saved file, which opens as a plain
# scene with step 3's weights.
mkdir -p "$WORK/save"
start lsave 100 30 "cd $WORK/save && $BIN $SRC/scenes/lessons/3-causal-mask.yaml; sleep 600"
check "lesson save: opens on step 1" lsave wait_for lsave "lesson 1/7"
keys lsave Space
check "lesson save: step 2" lsave wait_for lsave "lesson 2/7"
keys lsave Space
check "lesson save: step 3" lsave wait_for lsave "lesson 3/7"
keys lsave w
check "lesson save: the prompt says the lesson is left out, in the current folder" lsave \
  wait_for lsave "save this step (no lesson) as: 3-causal-mask-step3.yaml"
keys lsave Enter
check "lesson save: saved" lsave \
  wait_for lsave "saved step 3 as a scene of its own (without the lesson) to 3-causal-mask-step3"
check "lesson save: nothing written beside the shipped lesson" lsave \
  test ! -e "$SRC/scenes/lessons/3-causal-mask-step3.yaml"
check "lesson save: the file has no lesson" lsave \
  sh -c "! grep -q 'lesson' '$WORK/save/3-causal-mask-step3.yaml'"
check "lesson save: attnscope check passes it" lsave \
  quiet "$BIN" check "$WORK/save/3-causal-mask-step3.yaml"
keys lsave q
T kill-session -t lsave
start lopen 100 30 "$BIN $WORK/save/3-causal-mask-step3.yaml; sleep 600"
check "lesson save: reopened, step 3's weights" lopen wait_for lopen "journey    0.5517   0.4483"
check "lesson save: reopened as a plain scene, not a lesson" lopen wait_gone lopen "lesson 1/"
keys lopen q
T kill-session -t lopen

# 20. Text with control characters (tests/fixtures/text/controls.yaml): its ESC sequences would
# set the window title to "pwned" and clear the screen, its U+202E turn the line around. They
# reach the terminal only as visible escapes: the title stays, the screen shows \e and <U+202E>.
start ctl 100 30 "$(wrapped ctl "$SRC/tests/fixtures/text/controls.yaml")"
check "controls: the title escaped in the header" ctl \
  wait_for ctl 'Evil \e]0;pwned\x07 title <U+202E>right-to-left'
check "controls: the tokens escaped in the map" ctl wait_for ctl '<U+009B>2J      0.1694'
keys ctl /
text ctl "evil"
keys ctl Enter
check "controls: the message line escaped" ctl wait_for ctl '“<U+202E>evil” at row 2'
check "controls: the inspector escaped" ctl wait_for ctl '“<U+202E>evil” looks at “Hi\e[31m”'
check "controls: no ESC reached the terminal (the pane title is not pwned)" ctl \
  test "$(T display-message -p -t ctl '#{pane_title}')" != pwned
no_raw_bidi() { ! screen ctl | grep -q $'\xe2\x80\xae'; }
check "controls: no raw bidi control on the screen" ctl no_raw_bidi
keys ctl q
T kill-session -t ctl

# 21. What a head does (models/induction): p shows the predictions of the cursor's row, and a
# sentence edit updates them live to what `attnscope predict` prints for the new sentence; X
# ablates the head shown, the header marks it and the panel says before -> after, after being
# what `attnscope ablate` gives; u undoes it; the temperature knob sharpens the predictions; y
# opens the logit lens and ← picks layer 0; r shows the rollout; p on drawn embeddings says why
# there is nothing.
edited="fish moon king door gold rain fish moon king door"
sed -e "s/^text: .*/text: \"$edited\"/" -e "s#\.\./models/#$SRC/models/#g" \
  "$SRC/scenes/29-induction-head.yaml" >"$WORK/edited.yaml"
want_next=$("$BIN" predict "$WORK/edited.yaml" --position 8 --top 1 |
  sed -n "s/^# position 8 ' king' → next ' door': \(rank [0-9]*, p [0-9.]*\),.*/\1/p")
want_cold=$("$BIN" predict "$WORK/edited.yaml" --position 8 --top 1 --temperature 0.5 |
  sed -n "s/^ *1 *360 *' moon' *4.8241 *\([0-9.]*\) .*/\1/p")
want_after=$("$BIN" ablate "$WORK/edited.yaml" --positions 8:9 --csv |
  awk -F, '$1 == 1 && $2 == 0 { printf "%.4f", exp(-$4) }')
check "what a head does: the commands gave the expected values" none \
  test -n "$want_next" -a -n "$want_cold" -a -n "$want_after"
start wh 120 40 "$BIN $SRC/scenes/29-induction-head.yaml"
wait_for wh "row Σ"
keys wh p
check "what a head does: p opens the predictions" wh wait_for wh "predictions · after “fish” (position 0)"
keys wh t C-u
text wh "$edited"
keys wh Enter
check "what a head does: the sentence edit is made" wh wait_for wh "10 tokens"
keys wh K Down Down Down Down Down Down Down Down
check "what a head does: the panel follows the cursor to position 8" wh \
  wait_for wh "predictions · after “␣king” (position 8)"
check "what a head does: the next token's rank and p are predict's for the new sentence" wh \
  wait_for wh "next ␣door: $want_next,"
keys wh X
check "what a head does: X marks the head ablated in the header" wh \
  wait_for wh "layer 1 of 2 · L1 h0 ablated (zero)"
check "what a head does: before -> after, after as ablate gives it" wh \
  wait_for wh "next ␣door: p ${want_next#*p } → $want_after"
keys wh u
check "what a head does: u undoes the ablation" wh wait_for wh "undid: layer 1 head 0 no longer ablated"
check "what a head does: the header mark is gone" wh wait_gone wh "L1 h0 ablated"
keys wh BTab - - - - -
check "what a head does: the temperature knob at 0.5" wh wait_for wh "after “␣king” (position 8) · temp 0.5"
check "what a head does: sharper, as predict --temperature 0.5" wh \
  wait_for wh "4.8241 $want_cold"
keys wh y
check "what a head does: y opens the logit lens" wh wait_for wh "logit lens: top-1 by layer · temp 0.5"
keys wh Left
check "what a head does: ← picks layer 0 for the panel" wh \
  wait_for wh "lens · layer 0 after “␣king” (position 8)"
keys wh y r
check "what a head does: r shows the rollout through the layer shown (0, the lens's pick)" wh \
  wait_for wh "attention rollout · layer 0 (the first) · 10×10"
keys wh "}"
check "what a head does: } the rollout through both layers" wh \
  wait_for wh "attention rollout · layers 0–1 (of 2) · 10×10"
keys wh r
check "what a head does: r again, the weights" wh wait_for wh "head 0 (of 1) · weights · 10×10"
T kill-session -t wh
start drawn 100 30 "$BIN"
wait_for drawn "row Σ"
keys drawn p
check "what a head does: p on drawn embeddings says why" drawn \
  wait_for drawn "no next-token predictions: drawn embeddings have no vocabulary to unembed"
T kill-session -t drawn

# 22. Every family's checkpoint (tests/golden/families, gen_families.py): Llama with GQA, Qwen2
# with biases, Qwen3 with q/k norm, Mistral with its sliding window, OLMo 2 with its norms moved. For each: the header names
# the family's parts, the model view tiles name each head's KV head, head 2 reads KV head 1, the
# inspector on a RoPE'd query cell shows the rotation (its pair of dimensions and angle
# 3 × θ_2), the SwiGLU stage is silu(gate) · up, p shows what `attnscope predict` prints, y the
# lens, X ablates head 2 (header and before -> after), a sentence edit retokenises, e exports.
fam="$SRC/tests/golden/families/scenes"
for f in llama-gqa:8:"GQA 2 KV heads" qwen2-bias:8:"scaled linear ×2" \
  qwen3-qknorm:16:"qk-norm" mistral-window:8:"sliding window 5" \
  olmo2:8:"qk-norm over all heads, GQA 2 KV heads"; do
  IFS=: read -r name hd part <<<"$f"
  sc="$fam/$name.yaml"
  want_p=$("$BIN" predict "$sc" --position 3 --top 1 |
    sed -n "s/^# position 3 'un' → next 's': \(rank [0-9]*, p [0-9.]*\),.*/\1/p")
  start fm 200 50 "$BIN $sc"
  check "$name: opens on its checkpoint" fm wait_for fm "row Σ"
  check "$name: the header names $part" fm wait_for fm "$part"
  keys fm a
  check "$name: the model view names each head's KV head" fm wait_for fm "L1 h3 · KV 1"
  keys fm Enter ] ]
  check "$name: head 2 reads KV head 1, with head 3" fm wait_for fm "head 2 (of 4) · weights · 23×23 · KV head 1 (heads 2–3)"
  keys fm , , , , ,
  check "$name: five stages back is the rotated query" fm wait_for fm "queries_rotated (RoPE) · 23×$hd"
  keys fm Down Down Down Right Right
  check "$name: the inspector turns dimension 2 with its rotate_half partner" fm \
    wait_for fm "RoPE turns dimensions (2, $((2 + hd / 2))) together"
  check "$name: by position 3's angle" fm wait_for fm "angle = 3 × "
  keys fm . . . . . . . . . . . . . . .
  check "$name: the SwiGLU stage" fm wait_for fm "layer 0 · ffn_activated · 23×"
  check "$name: the inspector multiplies silu(gate) by up" fm wait_for fm "SwiGLU: silu(gate) · up"
  keys fm p
  check "$name: p shows predict's next token at position 3" fm wait_for fm "next s: $want_p,"
  keys fm y
  check "$name: y opens the lens" fm wait_for fm "logit lens: top-1 by layer"
  keys fm y X
  check "$name: X ablates head 2" fm wait_for fm "L0 h2 ablated (zero)"
  check "$name: the panel says before -> after" fm wait_for fm "next s: p ${want_p#*p } → "
  keys fm u t C-u
  text fm "the sea runs"
  keys fm Enter
  check "$name: the edit is tokenised by the checkpoint's BPE" fm wait_for fm "(23 → "
  keys fm e C-u
  text fm "$WORK/$name-export"
  keys fm Enter
  check "$name: export says where it wrote" fm wait_for fm "exported every stage as CSV to $WORK/$name-export"
  check "$name: the export has the rotated keys and the SwiGLU stage" fm \
    test -s "$WORK/$name-export/layer0/head3/keys_rotated.csv" -a -s "$WORK/$name-export/layer1/ffn_activated.csv"
  T kill-session -t fm
done

# Mistral's window in the mask and Qwen2's q/k/v biases: the inspector says each.
start mw 160 45 "$BIN $fam/mistral-window.yaml"
wait_for mw "row Σ"
keys mw , J Home
check "mistral-window: a key 22 tokens back is outside the sliding window" mw \
  wait_for mw "“The” is 22 tokens before “.”, outside the sliding window of 5"
check "mistral-window: its score is -inf" mw wait_for mw "so the score becomes -∞"
T kill-session -t mw
start qb 160 45 "$BIN $fam/qwen2-bias.yaml"
wait_for qb "row Σ"
keys qb , , , , , , , ,
check "qwen2-bias: eight stages back are the queries" qb wait_for qb "head 0 (of 4) · queries (Q) · 23×8"
check "qwen2-bias: the inspector adds q_proj's bias" qb wait_for qb "(bias)"
T kill-session -t qb

# 22b. GPT-NeoX in Pythia's layout (pythia-par: a quarter of each head turned, attention and the
# MLP side by side): the header says both; the inspector turns dimension 2 with its partner in
# the rotary part and passes dimension 5 unturned; residual2 adds both branches to the input; p
# shows what `attnscope predict` prints.
want_p=$("$BIN" predict "$fam/pythia-par.yaml" --position 3 --top 1 |
  sed -n "s/^# position 3 'un' → next 's': \(rank [0-9]*, p [0-9.]*\),.*/\1/p")
start nx 200 50 "$BIN $fam/pythia-par.yaml"
check "pythia-par: opens on its checkpoint" nx wait_for nx "row Σ"
check "pythia-par: the header says partial rotary" nx wait_for nx "RoPE (halves) on 4 of 16 dims"
check "pythia-par: and the parallel block" nx wait_for nx "fused qkv per head, parallel-norm"
keys nx , , , , ,
check "pythia-par: five stages back is the rotated query" nx wait_for nx "queries_rotated (RoPE) · 23×16"
keys nx Down Down Down Right Right
check "pythia-par: dimension 2 turns with dimension 0" nx wait_for nx "RoPE turns dimensions (0, 2) together"
check "pythia-par: only the first 4 of 16 turn" nx wait_for nx "partial rotary: only dims 0..3 of 16 turn"
keys nx Right Right Right
check "pythia-par: dimension 5 passes unturned" nx wait_for nx "dimension 5 passes unturned"
keys nx . . . . . . . . . . . . . . . .
check "pythia-par: the last stage is residual2" nx wait_for nx "layer 0 · residual2 (inputs + output + ffn_out) · 23×64"
check "pythia-par: the inspector adds both branches to the input" nx \
  wait_for nx "residual2 = ffn_out + output + inputs"
keys nx p
check "pythia-par: p shows predict's next token at position 3" nx wait_for nx "next s: $want_p,"
T kill-session -t nx
# A later checkpoint against the first: --baseline pins it, and every view is the change.
start nb 160 45 "$BIN $fam/pythia-par-step2.yaml --baseline $fam/pythia-par.yaml"
check "pythia-par-step2 --baseline: pinned from the start" nb \
  wait_for nb "baseline pythia-par.yaml pinned: every view shows Δ = this − it (B unpins)"
check "pythia-par-step2 --baseline: the heading names the other checkpoint" nb \
  wait_for nb "Δ vs baseline (pythia-par.yaml) · layer 0 · head 0 (of 4) · weights · 23×23"
check "pythia-par-step2 --baseline: row 2 moved as diff says" nb wait_for nb "␣r      -0.200  0.142  0.057"
keys nb a
check "pythia-par-step2 --baseline: the model view gives each head's mean |Δ|, as diff --layer all" nb \
  wait_for nb "L1 h3 · Δ 0.0203"
keys nb a B
check "pythia-par-step2: B unpins it" nb wait_for nb "baseline unpinned: the values again"
T kill-session -t nb

# 22b'. An encoder-decoder (T5's shapes, random weights: tests/golden/seq2seq): the decoder's
# self-attention first, its cross-attention next with the source across and the inspector naming
# the encoder's output; the token view over the source; E shows the encoder and back; g extends
# the target; `export` writes both stacks.
s2s="$SRC/tests/golden/seq2seq/scenes"
start t5 160 45 "$BIN $s2s/t5.yaml"
check "t5: opens on the decoder's self-attention" t5 \
  wait_for t5 "decoder layer 0, self-attention · head 0 (of 4) · weights · 9×9"
check "t5: the relative position bias on the stage bar" t5 wait_for t5 "position_bias biased"
keys t5 '}'
check "t5: } is the cross-attention, target by source" t5 \
  wait_for t5 "decoder layer 0, cross-attention · head 0 (of 4) · weights · 9×16"
check "t5: the inspector says the key is the encoder's output" t5 \
  wait_for t5 "key 0 is the encoder's output at source token 0"
keys t5 v
check "t5: the token view shows the source's tokens" t5 wait_for t5 "top 16 of 16 keys"
keys t5 v E
check "t5: E shows the encoder, at the same depth" t5 \
  wait_for t5 "encoder layer 0 · head 0 (of 4) · weights · 16×16"
keys t5 E
check "t5: E again: the decoder's cross-attention" t5 \
  wait_for t5 "decoder layer 0, cross-attention · head 0 (of 4) · weights · 9×16"
keys t5 g
check "t5: g appends a target token, its cross-attention row with it" t5 \
  wait_for t5 "weights · 10×16"
T kill-session -t t5
rm -rf "$WORK/t5-export"
"$BIN" export "$s2s/t5.yaml" -o "$WORK/t5-export" >/dev/null 2>&1
check "t5: export writes the encoder's and the decoder's stages" t5 \
  test -f "$WORK/t5-export/encoder/layer1/head3/position_bias.csv" -a \
  -f "$WORK/t5-export/decoder/layer1/cross/head0/keys.csv"

# 22b''. Marian as opus-mt's folders hold it (source.spm, target.spm, vocab.json; no
# tokenizer.json), opened with --text: the source, to translate, the target empty; E and t edit
# the source; back in the decoder, g writes the target a token at a time.
start mt 220 45 "$BIN $SRC/tests/golden/seq2seq/marian --text 'The small dog sees the red ball .'"
check "marian folder: opens on an empty target (the start token alone)" mt \
  wait_for mt "decoder layer 0, self-attention · head 0 (of 4) · weights · 1×1"
keys mt E
check "marian folder: E shows the source, read with source.spm" mt \
  wait_for mt "encoder layer 0 · head 0 (of 4) · weights · 11×11"
check "marian folder: the header counts the source's tokens" mt wait_for mt "11 tokens · d_in 32"
keys mt t C-u
text mt "The green garden ."
keys mt Enter
check "marian folder: t in the encoder edits the source" mt wait_for mt "the source (11 → 7 tokens)"
check "marian folder: the encoder reads the new source" mt \
  wait_for mt "encoder layer 0 · head 0 (of 4) · weights · 7×7"
keys mt E
check "marian folder: E again: the cross-attention over the new source" mt \
  wait_for mt "decoder layer 0, cross-attention · head 0 (of 4) · weights · 1×7"
keys mt g
check "marian folder: g writes the target's first token" mt \
  wait_for mt "decoder layer 0, cross-attention · head 0 (of 4) · weights · 2×7"
T kill-session -t mt

# 22c. Phi-3 (phi3-longrope: fused projections, half of each head turned, longrope past its
# original 16 positions, a window of 9): the header and the inspector on a turned dimension.
start ph 200 50 "$BIN $fam/phi3-longrope.yaml"
check "phi3-longrope: opens on its checkpoint" ph wait_for ph "row Σ"
check "phi3-longrope: the header says partial rotary, longrope and the window" ph \
  wait_for ph "RoPE (halves) on 8 of 16 dims scaled longrope, sliding window 9"
keys ph , , , , ,
keys ph Down Down Down Right Right
check "phi3-longrope: dimension 2 turns with dimension 6" ph wait_for ph "RoPE turns dimensions (2, 6) together"
check "phi3-longrope: by the long factor, past 16 positions" ph wait_for ph "θ_2 divided by longrope's long factor"
check "phi3-longrope: and its attention factor" ph wait_for ph "cos and sin × longrope's attention factor 1.2247"
T kill-session -t ph

# 22d. Gemma 2 (soft-capped scores and logits, a sliding and a full layer) and Gemma 3 (its sliding
# layers' own RoPE base): the capped stage and its inspector, the predictions' cap, the model
# view's sliding and global layers, a sliding layer's RoPE.
start gm 200 50 "$BIN $fam/gemma2.yaml"
check "gemma2: opens on its checkpoint" gm wait_for gm "row Σ"
check "gemma2: the stage bar has capped" gm wait_for gm "scores scaled capped masked weights"
keys gm , ,
keys gm Down Down Down Right
check "gemma2: two stages back are the capped scores" gm wait_for gm "capped (cap · tanh(s ÷ cap)) · 23×23"
check "gemma2: the inspector soft-caps a score" gm wait_for gm "soft-capping: cap · tanh(s ÷ cap), cap = 5"
keys gm p
check "gemma2: the predictions say the logits are capped" gm wait_for gm "logits soft-capped: 3·tanh(z÷3)"
keys gm p a
check "gemma2: the model view marks layer 0 sliding" gm wait_for gm "L0 h0 · KV 0 · sliding 6"
check "gemma2: and layer 1 global" gm wait_for gm "L1 h0 · KV 0 · global"
T kill-session -t gm
start g3 200 50 "$BIN $fam/gemma3.yaml"
check "gemma3: opens on its checkpoint" g3 wait_for g3 "row Σ"
check "gemma3: the header gives both RoPE bases" g3 wait_for g3 "base 1e+06 (sliding layers: 10000)"
keys g3 , , , , ,
keys g3 Down Down Down Right Right
check "gemma3: a sliding layer turns on its own base" g3 \
  wait_for g3 "a sliding layer: its own base 10000, unscaled (full layers: 1e+06)"
keys g3 } }
check "gemma3: the full layer's is stretched" g3 wait_for g3 "θ_2 scaled by rope type linear (factor 2)"
T kill-session -t g3

# 22e. A mixture of experts (qwen2-moe: 6 experts, two a token, a shared expert): the router's
# stages and the inspector's routing, the model view's expert-load row.
start mo 200 50 "$BIN $fam/qwen2-moe.yaml"
check "qwen2-moe: opens on its checkpoint" mo wait_for mo "row Σ"
check "qwen2-moe: the stage bar has the router" mo wait_for mo "norm2 router_logits routed ffn_out residual2"
keys mo . . . . . . . . .
keys mo Down Down Right
check "qwen2-moe: the routed stage" mo wait_for mo "layer 0 · routed (each expert's weight: the top k) · 23×6"
check "qwen2-moe: the inspector names the chosen experts" mo \
  wait_for mo "the router's softmax over 6 experts, the top 2 kept (not renormalised):"
keys mo .
check "qwen2-moe: ffn_out sums them with the shared expert" mo \
  wait_for mo "output times its weight, summed, plus the shared expert"
keys mo a
check "qwen2-moe: the model view has each layer's expert load" mo wait_for mo "L0 shared · load "
check "qwen2-moe: and how many experts were used" mo wait_for mo "(6 of 6)"
T kill-session -t mo

# 23. BERT (tests/golden/families/scenes/bert-pair.yaml: two sentences, two [MASK]s): the model
# view, a head, and what a masked LM's tools say. p at a [MASK] shows what fills it as `predict`
# does, at a token "itself"; X's before -> after follows the model's answer, after as `ablate
# --positions 6:7` gives it; y's lens scores each token itself; an edit of the first sentence
# keeps the second; export.
sc="$fam/bert-pair.yaml"
want_top=$("$BIN" predict "$sc" --position 6 --top 1 | sed -n "s/^ *1 *20 *'river' *\([0-9.]*\) *\([0-9.]*\) .*/\1 \2/p")
want_self=$("$BIN" predict "$sc" --position 2 --top 1 |
  sed -n "s/^# position 2 'cat' → itself 'cat': \(rank [0-9]*, p [0-9.]*\),.*/\1/p")
want_after=$("$BIN" ablate "$sc" --positions 6:7 --csv | awk -F, '$1 == 0 && $2 == 0 { printf "%.4f", exp(-$4) }')
check "bert: the commands gave the expected values" none test -n "$want_self" -a -n "$want_after" -a -n "$want_top"
start bert 200 50 "$BIN $sc"
check "bert: opens on the two sentences" bert wait_for bert "sunny"
check "bert: the header says post-norm" bert wait_for bert "post-norm block"
keys bert a
check "bert: the model view" bert wait_for bert "model view: 2 layers × 4 heads"
keys bert Enter p Down Down
check "bert: p at a token scores the token itself" bert wait_for bert "predictions · at “cat” (position 2)"
check "bert: its rank and p as predict's" bert wait_for bert "itself cat: $want_self,"
keys bert Down Down Down Down
check "bert: at a [MASK] the model fills it in" bert wait_for bert "[MASK]: the model fills it in"
check "bert: its top token as predict's" bert wait_for bert "river  ${want_top% *} ${want_top#* }"
keys bert X
check "bert: X ablates L0 h0" bert wait_for bert "L0 h0 ablated (zero)"
check "bert: before -> after of the answer, after as ablate gives it" bert \
  wait_for bert "[MASK] answer river: p ${want_top#* } → $want_after"
keys bert u y
check "bert: y's lens scores each token itself" bert wait_for bert "MLM lens: top-1 by layer"
check "bert: its column says itself" bert wait_for bert "pos token  itself"
check "bert: the status line says the MLM head" bert wait_for bert "each layer's output through the MLM head"
keys bert y t C-u
text bert "the dog sat on the [MASK] ."
keys bert Enter
check "bert: t offers the second sentence too, after the first" bert \
  wait_for bert "sentence B (of 2; empty: one sentence): It was a sunny [MASK] ."
keys bert Enter
check "bert: the edit keeps the second sentence" bert wait_for bert "16 tokens"
check "bert: the new word is on screen" bert wait_for bert "dog"
keys bert e C-u
text bert "$WORK/bert-export"
keys bert Enter
check "bert: export says where it wrote" bert wait_for bert "exported every stage as CSV to $WORK/bert-export"
check "bert: the export's predictions are at the [MASK]s" bert grep -q "^6,1," "$WORK/bert-export/predictions.csv"
T kill-session -t bert

# 24. Hostile input at run time (issue 26). A paste is text, never keys: bracketed paste is on
# while the explorer runs, and a 100 KB paste of "e", line ends and "y" (as keys: an export, its
# folder accepted, replaced, again and again, 416 MB in the issue) opens the sentence editor with
# what the line holds, and nothing is exported.
mkdir -p "$WORK/paste"
start paste 100 30 "cd $WORK/paste && $BIN"
wait_for paste "row Σ"
head -c 100000 /dev/zero | tr '\0' 'x' | sed 's/x/e\n\ny\n/g' | head -c 100000 >"$WORK/paste.txt"
T load-buffer -b big "$WORK/paste.txt"
T paste-buffer -p -b big -t paste
check "a 100 KB paste: the sentence editor holds what fits, and says so" paste \
  wait_for paste "pasted 65535 of"
check "a 100 KB paste: its text is in the editor" paste wait_for paste "y e  y e  y e  y e"
check "a 100 KB paste: nothing exported" paste test -z "$(ls -A "$WORK/paste")"
keys paste Escape
check "Esc drops the pasted sentence" paste wait_gone paste "sentence:"
check "the sentence is as it was" paste wait_for paste "Your journey starts with one step"
check "a 100 KB paste: still nothing exported" paste test -z "$(ls -A "$WORK/paste")"
# Into an open prompt: inserted at the cursor, its line end not taken for Enter.
keys paste /
T set-buffer -b word "journey
"
T paste-buffer -p -b word -t paste
check "a paste into the find prompt: its text, not accepted" paste wait_for paste "find token: journey"
keys paste Enter
check "Enter accepts it" paste wait_for paste "“journey” at row 1"
# A question is answered by a key, never by a paste's y.
keys paste e C-u
text paste "$WORK/paste/out"
keys paste Enter
wait_for paste "exported every stage"
keys paste e C-u
text paste "$WORK/paste/out"
keys paste Enter
wait_for paste "replace it? (y/n)"
T set-buffer -b yes "y"
T paste-buffer -p -b yes -t paste
check "a paste into a y/n question: refused, the question still open" paste \
  wait_for paste "a paste answers no question: press y or n"
keys paste n
check "n answers it" paste wait_gone paste "replace it? (y/n)"
T kill-session -t paste

# SIGHUP (the terminal closed) during the explorer's export stops it at the next head and
# removes its temporary folder, as C-c and SIGTERM do: the export does not appear, nothing hidden.
mkdir -p "$WORK/hupx"
printf 'text: "%s"\nembeddings: {dim: 32}\nattention: {heads: 32, d_out: 32}\n' \
  "$(for i in $(seq 1 512); do printf 'w%d ' "$i"; done)" >"$WORK/hupx.yaml"
start hupx 100 30 "$(wrapped hupx "$WORK/hupx.yaml")"
wait_for hupx "512 tokens"
wait_gone hupx "computing:" # the export would first wait for the compute (app_exact)
keys hupx e C-u
text hupx "$WORK/hupx/out"
keys hupx Enter
seen=""
for _ in $(seq 1 500); do
  if [ -n "$(find "$WORK/hupx" -mindepth 2 -maxdepth 2 -path '*/.out.attnscope-*/head1')" ]; then
    seen=yes
    break
  fi
  sleep 0.01
done
pid=$(pgrep -n -f "^$BIN $WORK/hupx.yaml\$")
[ -n "$pid" ] && kill -HUP "$pid"
check "SIGHUP during the explorer's export: caught while its files were written" hupx test -n "$seen"
check "SIGHUP during the explorer's export: terminal restored" hupx restored hupx
check "SIGHUP during the explorer's export: exit status 129" hupx grep -qx 129 "$WORK/hupx.exit"
check "SIGHUP during the explorer's export: no temporary folder is left" hupx \
  test -z "$(find "$WORK/hupx" -maxdepth 1 -name '.out.attnscope-*')"
check "SIGHUP during the explorer's export: stopped, the folder not made" hupx \
  test -z "$(ls -A "$WORK/hupx")"
T kill-session -t hupx

# C-c (SIGINT) during the explorer's export stops it the same way, and the explorer stays: C-c
# stops what is running and is never also a quit (issue 27).
mkdir -p "$WORK/intx"
start intx 100 30 "$(wrapped intx "$WORK/hupx.yaml")"
wait_for intx "512 tokens"
wait_gone intx "computing:"
keys intx e C-u
text intx "$WORK/intx/out"
keys intx Enter
seen=""
for _ in $(seq 1 500); do
  if [ -n "$(find "$WORK/intx" -mindepth 2 -maxdepth 2 -path '*/.out.attnscope-*/head1')" ]; then
    seen=yes
    break
  fi
  sleep 0.01
done
pid=$(pgrep -n -f "^$BIN $WORK/hupx.yaml\$")
[ -n "$pid" ] && kill -INT "$pid"
check "C-c during the explorer's export: caught while its files were written" intx test -n "$seen"
check "C-c during the explorer's export: stopped, said" intx \
  wait_for intx "interrupted; the folder is as it was"
check "C-c during the explorer's export: the explorer stays" intx test ! -e "$WORK/intx.exit"
check "C-c during the explorer's export: no temporary folder is left" intx \
  test -z "$(find "$WORK/intx" -maxdepth 1 -name '.out.attnscope-*')"
keys intx q
check "then q quits" intx restored intx
T kill-session -t intx

# C-\ (SIGQUIT) ends the explorer at once, as it is meant to (status 131, a core where enabled),
# but puts the terminal back first: modes, screen, keypad, mouse and bracketed paste. Typed in an
# interactive shell, as a user would: the shell ignores SIGQUIT, the explorer gets it.
start cquit 100 30 "bash --norc --noprofile -i"
text cquit "PS1='ready> '; ulimit -c 0; stty -g > $WORK/cquit.before; $BIN 2>$WORK/cquit.err; echo \$? > $WORK/cquit.exit"
keys cquit Enter
wait_for cquit "row Σ"
keys cquit 'C-\'
check "C-\\: back at the shell" cquit wait_for cquit "ready>"
wait_file "$WORK/cquit.exit"
check "C-\\: exit status 131 (SIGQUIT)" cquit grep -qx 131 "$WORK/cquit.exit"
check "C-\\: says the terminal was restored" cquit \
  grep -qF 'quit (SIGQUIT, C-\); the terminal was restored' "$WORK/cquit.err"
check "C-\\: screen, cursor, keypad and mouse restored" cquit test "$(term_flags cquit)" = "$fresh_flags"
text cquit "stty -g > $WORK/cquit.after; cat -v > $WORK/cquit.paste"
keys cquit Enter
wait_file "$WORK/cquit.after"
check "C-\\: terminal modes restored (stty)" cquit cmp -s "$WORK/cquit.before" "$WORK/cquit.after"
check "C-\\: bracketed paste off again" cquit paste_off cquit
T kill-session -t cquit

# A forward pass that makes a value that is not a number says where, on the message line: query
# and key weights of 3e38 (the softmax used to make weights of 0 of the nan rows), and the
# llama-gqa checkpoint under rope_scaling {linear, factor 5e-324}.
printf '%s\n' "text: the cat sat on the mat" "embeddings: {dim: 3}" "attention: {d_out: 2}" \
  "weights:" "  query: [[3e38, 3e38], [3e38, 3e38], [3e38, 3e38]]" \
  "  key: [[3e38, -3e38], [3e38, 3e38], [-3e38, 3e38]]" \
  "  value: [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]" >"$WORK/nan.yaml"
start nan 100 30 "$BIN $WORK/nan.yaml"
check "nan: the message line names the place" nan \
  wait_for nan "not a number: -inf at layer 0, head 0, queries, row 1 (“cat”), column 0"
check "nan: the weights show nan, as torch's" nan wait_for nan "nan      nan      nan      nan      nan      nan │"
keys nan c
check "nan: after an edit the report stands while the result has one" nan \
  wait_for nan "not a number: -inf at layer 0"
T kill-session -t nan
mkdir -p "$WORK/rope"
ln -s "$SRC/tests/golden/families/llama-gqa/model.safetensors" "$WORK/rope/model.safetensors"
sed 's/"max_position_embeddings": 64/&, "rope_scaling": {"type": "linear", "factor": 5e-324}/' \
  "$SRC/tests/golden/families/llama-gqa/config.json" >"$WORK/rope/config.json"
printf 'text: "The river runs to the sea."\ntokenizer: {kind: gpt2, vocab: %s, merges: %s}\nmodel: {file: rope/model.safetensors}\n' \
  "$SRC/tests/golden/gpt2/vocab.json" "$SRC/tests/golden/gpt2/merges.txt" >"$WORK/rope.yaml"
start rope 110 30 "$BIN $WORK/rope.yaml"
check "rope_scaling 5e-324: the message line names layer, head and stage" rope \
  wait_for rope "not a number: nan at layer 0, head 0, queries_rotated, row 0 (“The”), column 0"
T kill-session -t rope

# A model folder and a sentence (issue 27): models/english opened with --text, its title the
# folder's name; w offers english.yaml beside the folder and the scene it writes reopens on the
# same sentence; a sentence past its 128 positions is said at once, and l keeps the last words.
start folder 110 30 "$(wrapped folder "$SRC/models/english" --text "'The capital of France is'")"
check "folder: opens on the sentence given" folder wait_for folder "9 tokens · d_in 128 · layer 0 of 4"
check "folder: its title is the folder's name" folder wait_for folder " english "
check "folder: the sentence's tokens label the rows" folder wait_for folder "␣cap"
keys folder w
check "folder: w offers FOLDER.yaml beside the folder" folder \
  wait_for folder "save scene as: $SRC/models/english.yaml"
keys folder C-u
text folder "$WORK/france.yaml"
keys folder Enter
check "folder: w writes the scene" folder wait_file "$WORK/france.yaml"
check "folder: the saved scene has the sentence" folder grep -qx "text: The capital of France is" "$WORK/france.yaml"
check "folder: the saved scene predicts as the folder does" folder \
  test "$("$BIN" predict "$WORK/france.yaml" --top 3)" = \
  "$("$BIN" predict "$SRC/models/english" --text "The capital of France is" --top 3)"
keys folder t C-u
T set-buffer -b long "$(seq -f 'word%g' 0 199 | paste -sd ' ')"
T paste-buffer -p -b long -t folder
keys folder Enter
check "folder: a sentence past the context is said at once" folder \
  wait_for folder "865 tokens, but this model reads at most 128 (n_positions): keep the first or the last 128?"
check "folder: the map is still the old sentence's" folder wait_for folder "9 tokens · d_in 128"
check "folder: the keys it takes" folder wait_for folder "f:keep the first l:keep the last e:edit it"
keys folder l
check "folder: l keeps the last words that fit" folder wait_for folder "kept the last 125 of 865 tokens (whole words)"
check "folder: the map shows them" folder wait_for folder "125 tokens · d_in 128"
keys folder q y
check "folder: quits, the terminal restored" folder restored folder
check "folder: exit status 0" folder grep -qx 0 "$WORK/folder.exit"
T kill-session -t folder

# The sentence down a pipe (--text-file -): the keys still come from the terminal.
# Its exit is waited for before the session goes: under AddressSanitizer the leak check runs as
# the program ends, and a terminal taken away from it then left it spinning, an orphan that
# took a core for the rest of the run.
start piped 110 30 "echo 'The cat sat on the mat' | $BIN $SRC/models/english --text-file -; echo \$? >$WORK/piped.exit; sleep 600"
check "piped: opens on the sentence from standard input" piped wait_for piped "8 tokens · d_in 128"
keys piped '}'
check "piped: keys come from the terminal" piped wait_for piped "layer 1 of 4"
keys piped q
check "piped: q quits" piped wait_gone piped "layer 1 of 4"
wait_file "$WORK/piped.exit"
check "piped: exit status 0" piped grep -qx 0 "$WORK/piped.exit"
T kill-session -t piped

# A folder that is not a model's says what one holds; the explorer never starts.
mkdir -p "$WORK/notmodel"
start notmodel 110 30 "$(wrapped notmodel "$WORK/notmodel")"
wait_file "$WORK/notmodel.exit"
check "not a model folder: exit status 1" notmodel grep -qx 1 "$WORK/notmodel.exit"
check "not a model folder: says what a model folder holds" notmodel \
  grep -qF "not a model folder: a model folder holds config.json" "$WORK/notmodel.err"
T kill-session -t notmodel

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
