// Cell geometry of the block-pool view.
#include "appcore/pool/kv_grid_layout.h"

#include <algorithm>

KvGridLayout KvGridLayout::compute(const QRect& area, int numCells, int numHostCells) {
  KvGridLayout g;
  g.area = area;
  g.numCells = std::max(0, numCells);
  g.numHostCells = std::max(0, numHostCells);
  auto fits = [&](int s) {
    const int cols = std::max(1, area.width() / s);
    auto rows = [&](int n) { return static_cast<int64_t>((n + cols - 1) / cols); };
    int64_t h = rows(g.numCells) * s;
    if (g.numHostCells > 0) h += kHostCaptionHeight + rows(g.numHostCells) * s;
    return h <= area.height();
  };
  int s = kMaxCellSize;
  while (s > 1 && !fits(s)) --s;  // a pool too big even at 1 px is clipped at the bottom
  g.cellSize = s;
  g.columns = std::max(1, area.width() / s);
  g.hostCaptionTop = area.top() + g.deviceRows() * s;
  g.hostTop = g.hostCaptionTop + kHostCaptionHeight;
  return g;
}

QRect KvGridLayout::square(int top, int i) const {
  const int inner = cellSize >= kGapFrom ? cellSize - 1 : cellSize;
  return QRect(area.left() + (i % columns) * cellSize, top + (i / columns) * cellSize, inner, inner);
}

int KvGridLayout::cellAt(const QPoint& p, bool* host) const {
  auto index = [&](int top, int n) {
    if (p.x() < area.left() || p.y() < top) return -1;
    const int col = (p.x() - area.left()) / cellSize, row = (p.y() - top) / cellSize;
    if (col >= columns) return -1;
    const int i = row * columns + col;
    return i < n ? i : -1;
  };
  if (host) *host = false;
  if (p.y() < hostCaptionTop) return index(area.top(), numCells);
  if (numHostCells == 0 || p.y() < hostTop) return -1;
  if (host) *host = true;
  return index(hostTop, numHostCells);
}
