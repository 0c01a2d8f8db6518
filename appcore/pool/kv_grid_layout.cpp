// Cell geometry of the block-pool view.
#include "appcore/pool/kv_grid_layout.h"

#include <algorithm>

KvGridLayout KvGridLayout::compute(const QRect& area, int numCells, int numHostCells, int numDiskCells) {
  KvGridLayout g;
  g.area = area;
  g.numCells = std::max(0, numCells);
  g.numHostCells = std::max(0, numHostCells);
  g.numDiskCells = std::max(0, numDiskCells);
  auto fits = [&](int s) {
    auto rows = [&](int n, int pitch) {
      const int cols = std::max(1, area.width() / pitch);
      return static_cast<int64_t>((n + cols - 1) / cols) * pitch;
    };
    int64_t h = rows(g.numCells, s);
    if (g.numHostCells > 0) h += kHostCaptionHeight + rows(g.numHostCells, s);
    if (g.numDiskCells > 0) h += kHostCaptionHeight + rows(g.numDiskCells, std::max(1, s / 2));
    return h <= area.height();
  };
  int s = kMaxCellSize;
  while (s > 1 && !fits(s)) --s;  // a pool too big even at 1 px is clipped at the bottom
  g.cellSize = s;
  g.columns = std::max(1, area.width() / s);
  g.diskCellSize = std::max(1, s / 2);
  g.diskColumns = std::max(1, area.width() / g.diskCellSize);
  g.hostCaptionTop = area.top() + g.deviceRows() * s;
  g.hostTop = g.hostCaptionTop + kHostCaptionHeight;
  // The disk strip under the host strip, or where the host strip would be.
  g.diskCaptionTop = g.numHostCells > 0 ? g.hostTop + g.rows(g.numHostCells) * s : g.hostCaptionTop;
  g.diskTop = g.diskCaptionTop + kHostCaptionHeight;
  return g;
}

QRect KvGridLayout::square(int top, int i, int pitch, int cols) const {
  const int inner = pitch >= kGapFrom ? pitch - 1 : pitch;
  return QRect(area.left() + (i % cols) * pitch, top + (i / cols) * pitch, inner, inner);
}

int KvGridLayout::cellAt(const QPoint& p, KvTier* tier) const {
  auto index = [&](int top, int n, int pitch, int cols) {
    if (p.x() < area.left() || p.y() < top) return -1;
    const int col = (p.x() - area.left()) / pitch, row = (p.y() - top) / pitch;
    if (col >= cols) return -1;
    const int i = row * cols + col;
    return i < n ? i : -1;
  };
  KvTier at = KvTier::Device;
  int i = -1;
  if (p.y() < hostCaptionTop) {
    i = index(area.top(), numCells, cellSize, columns);
  } else if (numDiskCells > 0 && p.y() >= diskCaptionTop) {
    at = KvTier::Disk;
    i = p.y() < diskTop ? -1 : index(diskTop, numDiskCells, diskCellSize, diskColumns);
  } else if (numHostCells > 0) {
    at = KvTier::Host;
    i = p.y() < hostTop ? -1 : index(hostTop, numHostCells, cellSize, columns);
  }
  if (tier) *tier = at;
  return i;
}
