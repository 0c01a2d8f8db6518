// The block-pool cell grid: painting, hover text, selection by click, event flashes.
#include "ui/pool_view/kv_pool_view.h"

#include <QHelpEvent>
#include <QLocale>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>

#include "ui/pool_view/kv_cell_image.h"
#include "ui/theme/app_theme.h"

using namespace pagedchat;

namespace {
constexpr int kMargin = 4;
constexpr int kTickMs = 16;
constexpr int kTextFrom = 12;  // cell pitch from which the ref count is drawn
constexpr int kNumbersFrom = 28;  // ... and from which each cell's block number is

QString toolTipHtml(const QString& plain) {
  QString html = QStringLiteral("<p style='white-space:pre-wrap'>") + plain.toHtmlEscaped() + QStringLiteral("</p>");
  html.replace(QLatin1Char('\n'), QStringLiteral("<br>"));
  return html;
}
}  // namespace

KvPoolView::KvPoolView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("kvPoolView"));
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMouseTracking(false);
  m_colors = KvCellColors::fromPalette(palette());
  m_flashTimer.setInterval(kTickMs);
  connect(&m_flashTimer, &QTimer::timeout, this, &KvPoolView::onFlashTick);
  m_clock.start();
}

void KvPoolView::setFrame(std::shared_ptr<const PoolFrame> frame) {
  const bool poolChanged = !m_frame || !frame || m_frame->snapshot.blocks.size() != frame->snapshot.blocks.size() ||
                           m_frame->snapshot.host_blocks.size() != frame->snapshot.host_blocks.size();
  m_frame = std::move(frame);
  m_modelStale = true;
  m_gridImageStale = true;
  if (poolChanged) m_flashes.clear();  // ids of another pool
  if (m_frame && !m_frame->events.empty()) {
    if (m_held) {
      // Paused: this step's marks replace the last step's, at full strength until the next.
      m_flashes.clear();
      m_heldAtMs = m_clock.elapsed();
    }
    m_flashes.add(m_frame->events, flashClock());
    if (!m_flashes.empty() && !m_held && !m_flashTimer.isActive()) m_flashTimer.start();
  }
  update();
}

void KvPoolView::setFlashesHeld(bool held) {
  if (held == m_held) return;
  m_held = held;
  if (held) {
    // The marks on screen stay as they are now.
    m_heldAtMs = m_clock.elapsed();
    m_flashTimer.stop();
  } else if (!m_flashes.empty()) {
    // Running again: the held marks fade from here, as a fresh step's would.
    m_flashes.restart(m_clock.elapsed());
    m_flashTimer.start();
  }
  update();
}

qint64 KvPoolView::flashClock() const { return m_held ? m_heldAtMs : m_clock.elapsed(); }

const KvCellModel& KvPoolView::cellModel() {
  if (m_modelStale) {
    m_model = m_frame ? buildKvCellModel(*m_frame) : KvCellModel{};
    m_modelStale = false;
  }
  return m_model;
}

KvGridLayout KvPoolView::gridLayout() const {
  const int n = m_frame ? static_cast<int>(m_frame->snapshot.blocks.size()) : 0;
  const int h = m_frame ? static_cast<int>(m_frame->snapshot.host_blocks.size()) : 0;
  const int d = m_frame ? static_cast<int>(m_frame->diskBlocks.size()) : 0;
  return KvGridLayout::compute(rect().adjusted(kMargin, kMargin, -kMargin, -kMargin), n, h, d);
}

void KvPoolView::setMarkedBlocks(const std::vector<int32_t>& blocks, const std::vector<int32_t>& hostBlocks) {
  m_marked = blocks;
  m_markedHost = hostBlocks;
  update();
}

void KvPoolView::setSelectedSequence(SequenceId seq) {
  if (seq == m_selected) return;
  m_selected = seq;
  update();
}

QString KvPoolView::tooltipAt(const QPoint& pos) {
  if (!m_frame) return {};
  KvTier tier = KvTier::Device;
  const int i = gridLayout().cellAt(pos, &tier);
  if (i < 0) return {};
  if (tier == KvTier::Disk) return kvDiskBlockDescription(*m_frame, i);
  return kvBlockDescription(*m_frame, cellModel(), i, tier == KvTier::Host);
}

void KvPoolView::onFlashTick() {
  m_flashes.expire(flashClock());
  if (m_flashes.empty()) m_flashTimer.stop();
  update();  // one more paint after the last flash ends clears it
}

bool KvPoolView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const QString text = tooltipAt(help->pos());
    if (text.isEmpty()) {
      QToolTip::hideText();
      e->ignore();
    } else {
      QToolTip::showText(help->globalPos(), toolTipHtml(text), this);
    }
    return true;
  }
  return QWidget::event(e);
}

void KvPoolView::mousePressEvent(QMouseEvent* e) {
  if (!m_frame || e->button() != Qt::LeftButton) return QWidget::mousePressEvent(e);
  KvTier tier = KvTier::Device;
  int i = gridLayout().cellAt(e->position().toPoint(), &tier);
  if (i < 0) return;
  if (tier == KvTier::Disk) {
    // A disk block the pool holds too selects that block's owner; one only on disk, nothing.
    i = m_frame->diskBlocks[static_cast<size_t>(i)].poolBlock;
    tier = KvTier::Device;
    if (i < 0 || static_cast<size_t>(i) >= m_frame->snapshot.blocks.size()) return;
  }
  const auto& infos = tier == KvTier::Host ? m_frame->snapshot.host_blocks : m_frame->snapshot.blocks;
  const KvCellModel& model = cellModel();
  SequenceId seq = -1;
  for (SequenceId owner : infos[i].owners)
    if (model.sequenceIndex.count(owner)) {
      seq = owner;
      break;
    }
  setSelectedSequence(seq);
  emit sequenceClicked(seq);
}

void KvPoolView::changeEvent(QEvent* e) {
  if (e->type() == QEvent::PaletteChange || e->type() == QEvent::StyleChange || e->type() == QEvent::FontChange) {
    m_colors = KvCellColors::fromPalette(palette());
    m_labels.clear();
    m_gridImageStale = true;
    update();
  }
  QWidget::changeEvent(e);
}

void KvPoolView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  if (!m_frame) {
    p.fillRect(rect(), m_colors.background);
    p.setPen(palette().color(QPalette::PlaceholderText));
    // Wrapped: the pool column may be narrow (a small window, the dock beside the legend).
    p.drawText(rect().adjusted(6, 6, -6, -6), Qt::AlignCenter | Qt::TextWordWrap, tr("No model loaded: the KV block pool appears here."));
    return;
  }
  const KvGridLayout g = gridLayout();
  p.drawImage(0, 0, gridImage(g));
  paintSelection(p, g);
  if (!m_marked.empty() || !m_markedHost.empty()) {
    // Thick outlines in the text colour: unlike any fill, flash or the selection.
    p.setPen(QPen(palette().color(QPalette::WindowText), 2));
    p.setBrush(Qt::NoBrush);
    for (int32_t b : m_marked)
      if (b >= 0 && b < g.numCells) p.drawRect(g.cellRect(b).adjusted(1, 1, -1, -1));
    for (int32_t b : m_markedHost)
      if (b >= 0 && b < g.numHostCells) p.drawRect(g.hostCellRect(b).adjusted(1, 1, -1, -1));
  }
  paintFlashes(p, g);
}

const QImage& KvPoolView::gridImage(const KvGridLayout& g) {
  const qreal dpr = devicePixelRatioF();
  if (!m_gridImageStale && m_gridImage.size() == size() * dpr && m_gridImage.devicePixelRatio() == dpr) return m_gridImage;
  const KvCellModel& model = cellModel();
  const int scale = qRound(dpr);
  const bool scanlines = scale == dpr && kvCellFillsAreOpaque(m_colors);
  const QImage::Format format = scanlines ? QImage::Format_RGB32 : QImage::Format_ARGB32_Premultiplied;
  if (m_gridImage.size() != size() * dpr || m_gridImage.format() != format) m_gridImage = QImage(size() * dpr, format);
  m_gridImage.setDevicePixelRatio(dpr);  // kept when it fits: a fresh 15 MB image costs its page faults
  if (scanlines) {
    fillKvCells(m_gridImage, scale, g, model, m_colors);
  } else {
    m_gridImage.fill(Qt::transparent);
    QPainter p(&m_gridImage);
    paintKvCells(p, rect(), g, model, m_colors);
  }
  QPainter p(&m_gridImage);
  p.setFont(font());
  paintCellMarks(p, g);
  m_gridImageStale = false;
  return m_gridImage;
}

void KvPoolView::paintCellMarks(QPainter& p, const KvGridLayout& g) {
  const KvCellModel& model = cellModel();
  m_swapped.clear();
  for (size_t i = 0; i < model.hostCells.size(); ++i)
    if (model.hostCells[i].kind == KvCellKind::Swapped) m_swapped.push_back(g.hostCellRect(static_cast<int>(i)));
  if (!m_swapped.empty()) {
    p.setPen(Qt::NoPen);
    p.setBrush(QBrush(m_colors.swappedHatch, Qt::BDiagPattern));
    p.drawRects(m_swapped.data(), static_cast<int>(m_swapped.size()));
    p.setBrush(Qt::NoBrush);
  }
  // Blocks past every owner's sliding window: the window's background colour dotted over the
  // fill, so they read as fading out of the local layers' view.
  m_outside.clear();
  for (size_t i = 0; i < model.cells.size(); ++i)
    if (model.cells[i].outsideWindow) m_outside.push_back(g.cellRect(static_cast<int>(i)));
  if (!m_outside.empty()) {
    p.setPen(Qt::NoPen);
    p.setBrush(QBrush(m_colors.background, Qt::Dense5Pattern));
    p.drawRects(m_outside.data(), static_cast<int>(m_outside.size()));
    p.setBrush(Qt::NoBrush);
  }
  // Blocks the disk tier holds a copy of: a small square in the bottom-right corner, in the text
  // colour (they survive eviction and restarts; the rest does not).
  m_onDisk.clear();
  const int mark = std::max(2, g.cellSize / 4);
  for (size_t i = 0; i < model.cells.size(); ++i)
    if (model.cells[i].onDisk && model.cells[i].kind != KvCellKind::Free) {
      const QRect r = g.cellRect(static_cast<int>(i));
      m_onDisk.push_back(QRect(r.right() - mark + 1, r.bottom() - mark + 1, mark, mark));
    }
  if (!m_onDisk.empty()) {
    p.setPen(Qt::NoPen);
    p.setBrush(palette().color(QPalette::WindowText));
    p.drawRects(m_onDisk.data(), static_cast<int>(m_onDisk.size()));
    p.setBrush(Qt::NoBrush);
  }
  // Each strip's caption, the longest that fits the pool's width (a narrow dock's pool cut it
  // off mid-number).
  auto caption = [&](int top, const QStringList& versions) {
    QString text = versions.last();
    for (const QString& v : versions)
      if (fontMetrics().horizontalAdvance(v) <= g.area.width()) {
        text = v;
        break;
      }
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(QRect(g.area.left(), top, g.area.width(), KvGridLayout::kHostCaptionHeight), Qt::AlignLeft | Qt::AlignVCenter,
               fontMetrics().elidedText(text, Qt::ElideRight, g.area.width()));
  };
  if (g.numHostCells > 0)
    caption(g.hostCaptionTop, {tr("Host (swap) pool: %1 blocks").arg(g.numHostCells), tr("Host pool: %1").arg(g.numHostCells),
                               tr("Host: %1").arg(g.numHostCells)});
  if (g.numDiskCells > 0) {
    int onlyOnDisk = 0;
    for (const KvCell& c : model.diskCells) onlyOnDisk += c.alsoInPool ? 0 : 1;
    const QString all = QLocale().toString(static_cast<qlonglong>(m_frame->numDiskModelBlocks));
    caption(g.diskCaptionTop, {tr("On disk: %1 blocks of the chats (%2 only there), %3 of this model in all")
                                   .arg(g.numDiskCells)
                                   .arg(onlyOnDisk)
                                   .arg(all),
                               tr("On disk: %1 of the chats, %2 only there").arg(g.numDiskCells).arg(onlyOnDisk),
                               tr("On disk: %1").arg(g.numDiskCells), tr("Disk")});
  }
  if (g.cellSize >= kTextFrom) {
    for (size_t i = 0; i < model.cells.size(); ++i)
      if (!kvCellLabel(model.cells[i]).isEmpty())
        p.drawPixmap(g.cellRect(static_cast<int>(i)).topLeft(),
                     countLabel(model.cells[i].refCount, g.cellSize, readableTextOn(m_colors.fill(model.cells[i]))));
  }
  if (g.diskCellSize >= kTextFrom) {  // the disk strip's smaller cells, when they can carry a count
    for (size_t i = 0; i < model.diskCells.size(); ++i)
      if (!kvCellLabel(model.diskCells[i]).isEmpty())
        p.drawPixmap(g.diskCellRect(static_cast<int>(i)).topLeft(),
                     countLabel(model.diskCells[i].refCount, g.diskCellSize, readableTextOn(m_colors.fill(model.diskCells[i]))));
  }
  if (g.cellSize >= kNumbersFrom) {
    // Cells this large (a lesson's small pool, presented) carry their block numbers, so that
    // "block #63" in a sentence can be found on the screen: small, in the bottom-left corner,
    // clear of the ref count in the middle and of the disk mark at the bottom right.
    QFont f = font();
    f.setPixelSize(std::max(9, g.cellSize / 4));
    p.setFont(f);
    for (size_t i = 0; i < model.cells.size(); ++i) {
      const QRect r = g.cellRect(static_cast<int>(i)).adjusted(2, 0, 0, -1);
      p.setPen(readableTextOn(m_colors.fill(model.cells[i])));
      p.drawText(r, Qt::AlignLeft | Qt::AlignBottom, QString::number(i));
    }
    p.setFont(font());
  }
}

const QPixmap& KvPoolView::countLabel(int32_t refCount, int cellSize, const QColor& color) {
  // Labels of the pool's size and the disk strip's (half of it) are kept together; a new pool
  // size starts afresh.
  if (cellSize != m_labelCellSize && cellSize != m_labelCellSize / 2) {
    m_labels.clear();
    m_labelCellSize = cellSize;
  }
  // Black or white, whichever reads on the cell's colour (the chat hues differ in lightness).
  QPixmap& pm = m_labels[(static_cast<uint64_t>(color.rgb()) << 32) | (static_cast<uint64_t>(cellSize & 0xfff) << 20) |
                         (static_cast<uint32_t>(refCount) & 0xfffff)];
  if (pm.isNull()) {
    const int inner = cellSize >= KvGridLayout::kGapFrom ? cellSize - 1 : cellSize;
    pm = QPixmap(inner, inner);
    pm.fill(Qt::transparent);
    QPainter lp(&pm);
    QFont f = font();
    f.setPixelSize(std::max(7, cellSize * 11 / 20));
    f.setBold(true);
    lp.setFont(f);
    lp.setPen(color);
    lp.drawText(pm.rect(), Qt::AlignCenter, QString::number(refCount));
  }
  return pm;
}

void KvPoolView::paintSelection(QPainter& p, const KvGridLayout& g) {
  if (m_selected < 0) return;
  const KvCellModel& model = cellModel();
  auto it = model.sequenceIndex.find(m_selected);
  if (it == model.sequenceIndex.end()) return;
  const PoolFrameSequence& seq = m_frame->sequences[it->second];
  if (seq.blockTable.empty()) return;
  // A swapped sequence's table holds host ids: tell by whether the first block lists it.
  const auto& devOwners = static_cast<size_t>(seq.blockTable[0]) < m_frame->snapshot.blocks.size()
                              ? m_frame->snapshot.blocks[seq.blockTable[0]].owners
                              : std::vector<SequenceId>{};
  const bool onHost = std::find(devOwners.begin(), devOwners.end(), m_selected) == devOwners.end();
  const int n = onHost ? g.numHostCells : g.numCells;
  p.setPen(QPen(m_colors.selection, g.cellSize >= 8 ? 2 : 1));
  p.setBrush(Qt::NoBrush);
  for (int32_t b : seq.blockTable)
    if (b >= 0 && b < n) p.drawRect((onHost ? g.hostCellRect(b) : g.cellRect(b)).adjusted(0, 0, -1, -1));
}

void KvPoolView::paintFlashes(QPainter& p, const KvGridLayout& g) {
  if (m_flashes.empty()) return;
  const qint64 now = flashClock();
  p.setPen(Qt::NoPen);
  auto paint = [&](const auto& map, bool host) {
    const int n = host ? g.numHostCells : g.numCells;
    for (const auto& [block, flash] : map) {
      if (block >= n) continue;
      QColor c = m_colors.flash(flash.kind);
      c.setAlphaF(0.9 * KvFlashes::strength(flash, now));
      const QRect r = host ? g.hostCellRect(block) : g.cellRect(block);
      p.fillRect(r.adjusted(-1, -1, 1, 1), c);
    }
  };
  paint(m_flashes.device(), false);
  paint(m_flashes.host(), true);
}
