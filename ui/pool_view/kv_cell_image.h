#pragma once
// The cell fills of the block-pool view (background, cell colours, the outlines of cached and
// shared cells), drawn two ways that give the same pixels: scanline by scanline straight into
// an image (the fast path: each grid row is built as one or two lines and copied down), and
// with QPainter fillRects (the reference, and the path for a fractional device pixel ratio or
// translucent colours). Counts, the swap hatch, selection and flashes are drawn by the view.

#include <QImage>
#include <QPainter>

#include "ui/pool_view/kv_cell_colors.h"
#include "appcore/pool/kv_cell_model.h"
#include "appcore/pool/kv_grid_layout.h"

// Whether fillKvCells can draw these colours (it writes pixels, it does not blend).
bool kvCellFillsAreOpaque(const KvCellColors& colors);

// Fills image (Format_RGB32 or Format_ARGB32_Premultiplied) whole: the background, then every
// cell of the model placed by g, in logical pixels times scale (an integer device pixel ratio).
// Precondition: kvCellFillsAreOpaque(colors).
void fillKvCells(QImage& image, int scale, const KvGridLayout& g, const KvCellModel& model, const KvCellColors& colors);

// The same picture with QPainter: fills area with the background, then the cells.
void paintKvCells(QPainter& p, const QRect& area, const KvGridLayout& g, const KvCellModel& model, const KvCellColors& colors);
