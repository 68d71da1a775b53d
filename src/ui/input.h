/* input: what the terminal sends, as the explorer's keys.
 *
 * curses reports a key as a wide character or a KEY_* code; here both become a struct key of
 * src/explore, whose named keys do not depend on curses. Resize and mouse events are the
 * screen manager's and never reach this.
 */
#ifndef ATTNSCOPE_UI_INPUT_H
#define ATTNSCOPE_UI_INPUT_H

#include <stdbool.h>
#include <wchar.h>

#include "explore/keys.h"

/* key as get_wch returned it (is_code: KEY_CODE_YES). A code with no name here becomes
 * {true, KEYCODE_NONE}, which no action is bound to. */
struct key input_decode(wint_t key, bool is_code);

#endif
