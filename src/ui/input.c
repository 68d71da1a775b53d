/* input: curses' keys -> struct key (see input.h). */
#define _XOPEN_SOURCE_EXTENDED 1
#include "ui/input.h"

#include <curses.h>

struct key input_decode(wint_t key, bool is_code)
{
    if (!is_code)
        return (struct key){false, (uint32_t)key};
    static const struct {
        int curses;
        enum keycode code;
    } codes[] = {
        {KEY_LEFT, KEYCODE_LEFT},
        {KEY_RIGHT, KEYCODE_RIGHT},
        {KEY_UP, KEYCODE_UP},
        {KEY_DOWN, KEYCODE_DOWN},
        {KEY_PPAGE, KEYCODE_PAGE_UP},
        {KEY_NPAGE, KEYCODE_PAGE_DOWN},
        {KEY_HOME, KEYCODE_HOME},
        {KEY_END, KEYCODE_END},
        {KEY_ENTER, KEYCODE_ENTER},
        {KEY_BTAB, KEYCODE_BACKTAB},
        {KEY_BACKSPACE, KEYCODE_BACKSPACE},
        {KEY_DC, KEYCODE_DELETE},
    };
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if ((int)key == codes[i].curses)
            return (struct key){true, (uint32_t)codes[i].code};
    if ((int)key >= KEY_F(1) && (int)key <= KEY_F(12))
        return (struct key){true, (uint32_t)(KEYCODE_F1 + ((int)key - KEY_F(1)))};
    return (struct key){true, KEYCODE_NONE};
}
