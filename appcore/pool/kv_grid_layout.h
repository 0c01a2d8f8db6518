#pragma once
// Where the block-pool view puts its cells: square cells in rows filling the widget, the device
// pool first and, when there is a host (swap) pool, a captioned strip of host cells below it.
// The cell size is the largest that fits both (capped), so cells resize with the widget.

#include <QPoint>
#include <QRect>

struct KvGridLayout {
  static constexpr int kMaxCellSize = 40;
  static constexpr int kHostCaptionHeight = 16;

  QRect area;            // what the cells may fill
  int numCells = 0;      // device blocks
  int numHostCells = 0;  // host blocks
  int cellSize = 1;      // pitch in pixels; cells leave a 1 px gap when it is >= kGapFrom
  int columns = 1;
  int hostCaptionTop = 0;  // y of the host strip's caption
  int hostTop = 0;         // y of the first host row

  static constexpr int kGapFrom = 5;
  static KvGridLayout compute(const QRect& area, int numCells, int numHostCells);

  int deviceRows() const { return (numCells + columns - 1) / columns; }
  // The painted square of device cell i (the gap left out).
  QRect cellRect(int i) const { return square(area.top(), i); }
  QRect hostCellRect(int i) const { return square(hostTop, i); }
  // The cell under p: its index (device or host, per *host), or -1.
  int cellAt(const QPoint& p, bool* host) const;

 private:
  QRect square(int top, int i) const;
};
