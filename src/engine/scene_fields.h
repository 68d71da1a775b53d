/* scene_fields: what the scene's own files (scene*.c) share beyond the installed scene.h. Not
 * installed: no front end relies on it. It includes no scene.h (scene.c includes it). */
#ifndef ATTNSCOPE_SCENE_FIELDS_H
#define ATTNSCOPE_SCENE_FIELDS_H

struct attn_book_rows;

/* One sharer fewer of a book of rows (embed.book); the last frees it. Takes NULL. */
void attn_book_rows_unref(struct attn_book_rows *b);

#endif
