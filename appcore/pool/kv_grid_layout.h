#pragma once
// Where the block-pool view puts its cells: square cells in rows filling the widget, the device
// pool first, then when there is a host (swap) pool a captioned strip of host cells, then when
// the disk tier holds blocks of the chats a captioned strip of those, in cells half as big (the
// pool is what the view is about; the disk can hold more blocks than the pool). The cell size is
// the largest that fits them all (capped), so cells resize with the widget.

#include <QPoint>
#include <QRect>

enum class KvTier { Device, Host, Disk };

struct KvGridLayout {
  static constexpr int kMaxCellSize = 40;
  static constexpr int kHostCaptionHeight = 16;  // each strip's caption (host, disk)

  QRect area;            // what the cells may fill
  int numCells = 0;      // device blocks
  int numHostCells = 0;  // host blocks
  int numDiskCells = 0;  // disk strip blocks
  int cellSize = 1;      // pitch in pixels; cells leave a 1 px gap when it is >= kGapFrom
  int columns = 1;
  int diskCellSize = 1;  // the disk strip's pitch: half the pool's
  int diskColumns = 1;
  int hostCaptionTop = 0;  // y of the host strip's caption
  int hostTop = 0;         // y of the first host row
  int diskCaptionTop = 0;  // y of the disk strip's caption
  int diskTop = 0;         // y of the first disk row

  static constexpr int kGapFrom = 5;
  static KvGridLayout compute(const QRect& area, int numCells, int numHostCells, int numDiskCells = 0);

  int deviceRows() const { return rows(numCells); }
  // The painted square of device cell i (the gap left out).
  QRect cellRect(int i) const { return square(area.top(), i); }
  QRect hostCellRect(int i) const { return square(hostTop, i); }
  QRect diskCellRect(int i) const { return square(diskTop, i, diskCellSize, diskColumns); }
  QRect cellRect(KvTier tier, int i) const {
    return tier == KvTier::Device ? cellRect(i) : tier == KvTier::Host ? hostCellRect(i) : diskCellRect(i);
  }
  // The cell under p: its index in its tier (*tier), or -1.
  int cellAt(const QPoint& p, KvTier* tier) const;

 private:
  int rows(int n) const { return (n + columns - 1) / columns; }
  QRect square(int top, int i) const { return square(top, i, cellSize, columns); }
  QRect square(int top, int i, int pitch, int cols) const;
};
