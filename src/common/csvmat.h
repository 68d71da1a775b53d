/* csvmat: a matrix from a CSV file, for scenes that name one as {file: name.csv}.
 *
 * Two layouts are read, told apart by the first field of the file:
 *   - a labelled table, as attnscope export writes it (and pandas' DataFrame.to_csv): a header
 *     row, then one row per matrix row whose first field is its label. The first field of the
 *     file is a word ("token", "row") or empty. The labels and the header's names are not read.
 *   - bare numbers, as numpy.savetxt(name, a, delimiter=",") writes them: the first field is a
 *     number, and every field of every line is one. A number in any spelling strtof takes
 *     ("0x1p-1", and "\u22120.5" with U+2212 MINUS SIGN) counts, so it is never taken for a
 *     header; those two spellings are then refused, saying how to write them.
 * Fields follow RFC 4180 (quotes, doubled quotes, line breaks inside quotes, CRLF or LF line
 * ends). Numbers are read as a scene's YAML numbers are (C locale, rounded to the nearest
 * float32; blanks around them are ignored); NaN, infinities, values beyond float32 and empty
 * fields are refused. Every line must have as many fields as the first; blank lines at the end
 * are ignored, one in between is refused. A UTF-8 byte order mark (Excel's) is skipped.
 */
#ifndef ATTNSCOPE_CSVMAT_H
#define ATTNSCOPE_CSVMAT_H

#include <stddef.h>

#include "common/diag.h"
#include "common/npy.h"

/* Reads path as a rows x cols matrix (out->ndim 2, at least one row and one column), in the
 * array struct attn_npy_read fills, so a caller treats both files alike. More than max_values
 * numbers are refused. On failure err names the file, and its message the line and field
 * ("line 3, field 2: 'x' is not a number"). */
int attn_csvmat_read(struct npy_array *out, const char *path, size_t max_values, struct diag *err);

#endif
