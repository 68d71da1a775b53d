/* predictions panel: the next-token predictions of the cursor's row (p), in place of the
 * inspector: Transformer Explainer's centre in a terminal. The top tokens as bars with their
 * probabilities at the temperature (a knob), the actual next token marked with its rank, and
 * with a head ablated its probability before -> after. In the lens view (y) it shows the picked
 * layer's guess instead. What it shows comes from explore/interp (kept per result, position
 * and temperature: a redraw computes nothing, a cursor move one row of logits). */
#ifndef ATTNSCOPE_UI_PREDICTIONS_H
#define ATTNSCOPE_UI_PREDICTIONS_H

#include "ui/panel.h"

void predictions_panel_init(struct panel *p);

#endif
