// The selected chat's logical -> physical block mapping.
#include "ui/pool_panel/kv_block_table_view.h"

#include <QPainter>

#include <algorithm>

#include "ui/theme/app_theme.h"

using namespace pagedchat;

namespace {
constexpr int kPad = 4;
int boxHeight(const QFontMetrics& fm) { return fm.height() + 4; }
int rowHeight(const QFontMetrics& fm) { return 2 * boxHeight(fm) + 12; }
}  // namespace

KvBlockTableView::KvBlockTableView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("kvBlockTableView"));
  QSizePolicy sp(QSizePolicy::Preferred, QSizePolicy::Preferred);
  sp.setHeightForWidth(true);
  setSizePolicy(sp);
}

void KvBlockTableView::setFrame(std::shared_ptr<const PoolFrame> frame) {
  const size_t before = selected() ? selected()->blockTable.size() : 0;
  m_frame = std::move(frame);
  if ((selected() ? selected()->blockTable.size() : 0) != before) fitHeight();
  update();
}

void KvBlockTableView::setSequence(SequenceId seq) {
  m_seq = seq;
  fitHeight();
  update();
}

const PoolFrameSequence* KvBlockTableView::selected() const {
  if (!m_frame || m_seq < 0) return nullptr;
  for (const PoolFrameSequence& s : m_frame->sequences)
    if (s.id == m_seq) return &s;
  return nullptr;
}

bool KvBlockTableView::onHost() const {
  const PoolFrameSequence* s = selected();
  if (!s || s->blockTable.empty()) return false;
  const auto& blocks = m_frame->snapshot.blocks;
  const int32_t b = s->blockTable[0];
  if (b < 0 || static_cast<size_t>(b) >= blocks.size()) return true;
  const auto& owners = blocks[b].owners;
  return std::find(owners.begin(), owners.end(), m_seq) == owners.end();
}

QString KvBlockTableView::headerText() const {
  if (m_seq < 0) return tr("Click a chat (in the legend or on a cell) to see its block table.");
  const PoolFrameSequence* s = selected();
  if (!s) return tr("Sequence %1 holds no blocks now.").arg(m_seq);
  const QString title = s->chatTitle.isEmpty() ? tr("seq %1").arg(s->id) : tr("%1 (seq %2)").arg(s->chatTitle).arg(s->id);
  return tr("%1: %2 tokens in %3 blocks, logical -> physical%4")
      .arg(title)
      .arg(s->storedTokens())
      .arg(s->blockTable.size())
      .arg(onHost() ? tr(" (swapped out: host blocks)") : QString());
}

std::vector<std::pair<int, int32_t>> KvBlockTableView::mapping() const {
  std::vector<std::pair<int, int32_t>> out;
  if (const PoolFrameSequence* s = selected())
    for (size_t i = 0; i < s->blockTable.size(); ++i) out.emplace_back(static_cast<int>(i), s->blockTable[i]);
  return out;
}

int KvBlockTableView::entryWidth() const {
  const QFontMetrics fm(font());
  int32_t maxId = 0;
  if (const PoolFrameSequence* s = selected())
    for (int32_t b : s->blockTable) maxId = std::max(maxId, b);
  return fm.horizontalAdvance(QStringLiteral("#%1 x99").arg(maxId)) + 2 * kPad;
}

int KvBlockTableView::heightForWidth(int width) const {
  const QFontMetrics fm(font());
  const PoolFrameSequence* s = selected();
  const int n = s ? static_cast<int>(s->blockTable.size()) : 0;
  const int perRow = std::max(1, (width - 2 * kPad) / entryWidth());
  const int rows = (n + perRow - 1) / perRow;
  return headerHeight(width) + 2 * kPad + rows * rowHeight(fm);
}

int KvBlockTableView::headerHeight(int width) const {
  // The header wraps in a narrow dock rather than running out of it.
  return QFontMetrics(font()).boundingRect(QRect(0, 0, std::max(1, width - 2 * kPad), 10000), Qt::TextWordWrap, headerText()).height();
}

void KvBlockTableView::fitHeight() {
  const int h = heightForWidth(width());
  if (minimumHeight() != h) setMinimumHeight(h);
  updateGeometry();
}

void KvBlockTableView::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  fitHeight();
}

QSize KvBlockTableView::sizeHint() const { return {400, heightForWidth(400)}; }

void KvBlockTableView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const KvCellColors colors = KvCellColors::fromPalette(palette());
  const QFontMetrics fm(font());
  p.setPen(palette().color(QPalette::WindowText));
  const int header = headerHeight(width());
  p.drawText(QRect(kPad, kPad, width() - 2 * kPad, header), Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap, headerText());
  const PoolFrameSequence* s = selected();
  if (!s) return;
  const bool host = onHost();
  const auto& infos = host ? m_frame->snapshot.host_blocks : m_frame->snapshot.blocks;
  const int ew = entryWidth(), bh = boxHeight(fm), rh = rowHeight(fm);
  const int perRow = std::max(1, (width() - 2 * kPad) / ew);
  const int top0 = kPad + header + kPad;
  const QColor chat = colors.chat(s->colorIndex);
  for (size_t i = 0; i < s->blockTable.size(); ++i) {
    const int32_t b = s->blockTable[i];
    const int x = kPad + static_cast<int>(i % perRow) * ew, y = top0 + static_cast<int>(i / perRow) * rh;
    if (y > height()) break;
    const QRect logical(x, y, ew - kPad, bh), physical(x, y + bh + 8, ew - kPad, bh);
    p.setPen(colors.cachedOutline);
    p.setBrush(colors.free);
    p.drawRect(logical);
    p.setBrush(chat);
    p.drawRect(physical);
    // The arrow from logical to physical.
    const int cx = logical.center().x();
    p.drawLine(cx, logical.bottom() + 1, cx, physical.top() - 1);
    p.drawLine(cx, physical.top() - 1, cx - 3, physical.top() - 4);
    p.drawLine(cx, physical.top() - 1, cx + 3, physical.top() - 4);
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(logical, Qt::AlignCenter, QString::number(i));
    const int32_t refs = b >= 0 && static_cast<size_t>(b) < infos.size() ? infos[b].ref_count : 0;
    QString id = (host ? QStringLiteral("h%1") : QStringLiteral("#%1")).arg(b);
    if (refs > 1) id += QStringLiteral(" x%1").arg(refs);
    p.setPen(readableTextOn(chat));
    p.drawText(physical, Qt::AlignCenter, id);
  }
}
