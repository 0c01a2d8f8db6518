#pragma once
// The cell grid of the KV block-pool view: every physical block one cell, coloured by state
// and owning chat, shared cells with their ref count, cached cells faded and outlined, the host
// (swap) pool in a strip below. The cells are drawn scanline by scanline into an image kept
// until the frame, size or palette changes (ui/pool_view/kv_cell_image.h); a paint copies it and draws
// the selection and flashes over it. Hovering a cell shows what it holds; clicking
// one selects its chat; cells named by the frame's events flash and fade.

#include <QElapsedTimer>
#include <QImage>
#include <QPixmap>
#include <QTimer>
#include <QWidget>

#include <memory>
#include <unordered_map>
#include <vector>

#include "ui/pool_view/kv_cell_colors.h"
#include "appcore/pool/kv_cell_model.h"
#include "appcore/pool/kv_flashes.h"
#include "appcore/pool/kv_grid_layout.h"
#include "appcore/pool/pool_frame.h"

class KvPoolView : public QWidget {
  Q_OBJECT
 public:
  explicit KvPoolView(QWidget* parent = nullptr);

  // Keeps the frame, starts flashes for its events and schedules a repaint; the cell model is
  // built at the next paint (or the next cellModel() call).
  void setFrame(std::shared_ptr<const PoolFrame> frame);
  const PoolFrame* frame() const { return m_frame.get(); }
  const KvCellModel& cellModel();
  KvGridLayout gridLayout() const;
  const KvCellColors& colors() const { return m_colors; }

  void setSelectedSequence(pagedchat::SequenceId seq);  // -1: none
  // Blocks outlined (an event log line picked): device and host block ids; empty: none.
  void setMarkedBlocks(const std::vector<int32_t>& blocks, const std::vector<int32_t>& hostBlocks);
  const std::vector<int32_t>& markedBlocks() const { return m_marked; }
  pagedchat::SequenceId selectedSequence() const { return m_selected; }

  // What hovering at pos shows, as plain text; empty away from a cell.
  QString tooltipAt(const QPoint& pos);
  const KvFlashes& flashes() const { return m_flashes; }
  // While held (the engine paused), a step's marks stay at full strength until the next
  // step's replace them, so that what a step did can be looked at and explained.
  void setFlashesHeld(bool held);
  bool flashesHeld() const { return m_held; }
  bool isAnimating() const { return m_flashTimer.isActive(); }

  QSize sizeHint() const override { return {420, 300}; }
  QSize minimumSizeHint() const override { return {120, 80}; }

 signals:
  // A cell was clicked: the first chat that owns it (-1 for a cell nobody owns).
  void sequenceClicked(pagedchat::SequenceId seq);

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void onFlashTick();
  qint64 flashClock() const;  // the flashes' time: frozen while held
  // The picture of the frame's cells (fills, counts, swap hatch, host caption) at the widget's
  // size, drawn again only after a new frame, a resize or a palette, style or font change:
  // flash ticks and selection changes repaint over it.
  const QImage& gridImage(const KvGridLayout& g);
  void paintCellMarks(QPainter& p, const KvGridLayout& g);
  void paintSelection(QPainter& p, const KvGridLayout& g);
  void paintFlashes(QPainter& p, const KvGridLayout& g);
  const QPixmap& countLabel(int32_t refCount, int cellSize, const QColor& color);

  std::shared_ptr<const PoolFrame> m_frame;
  KvCellModel m_model;
  bool m_modelStale = true;
  KvCellColors m_colors;
  pagedchat::SequenceId m_selected = -1;
  KvFlashes m_flashes;
  QTimer m_flashTimer;
  QElapsedTimer m_clock;
  bool m_held = false;
  std::vector<int32_t> m_marked, m_markedHost;
  qint64 m_heldAtMs = 0;
  QImage m_gridImage;  // [height() * dpr, width() * dpr]
  bool m_gridImageStale = true;
  std::vector<QRect> m_swapped;  // kept between paints so that painting does not allocate
  std::vector<QRect> m_outside;  // cells outside the sliding window, likewise
  std::vector<QRect> m_onDisk;   // the corner marks of cells the disk tier holds too
  // Ref-count labels drawn once per (count, cell size): drawText per cell is too slow for
  // thousands of shared cells.
  std::unordered_map<uint64_t, QPixmap> m_labels;  // by (text colour, cell size, ref count)
  int m_labelCellSize = 0;
};
