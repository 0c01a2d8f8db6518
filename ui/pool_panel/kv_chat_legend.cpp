// The chat legend of the block-pool view.
#include "ui/pool_panel/kv_chat_legend.h"

#include <QHash>
#include <QPixmap>

using namespace pagedchat;

namespace {
constexpr int kSeqRole = Qt::UserRole;
constexpr int kColorRole = Qt::UserRole + 1;

QIcon swatch(const QColor& c) {
  QPixmap pm(12, 12);
  pm.fill(c);
  return QIcon(pm);
}
}  // namespace

KvChatLegend::KvChatLegend(QWidget* parent) : QListWidget(parent) {
  setObjectName(QStringLiteral("kvChatLegend"));
  setSelectionMode(QAbstractItemView::SingleSelection);
  setUniformItemSizes(true);
  // A narrow dock cuts a long title in its middle: its start and its block count stay, the whole
  // line is the row's tooltip (not a sideways scroll bar).
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setTextElideMode(Qt::ElideMiddle);
  connect(this, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
    emit sequenceSelected(item->data(kSeqRole).toLongLong());
  });
}

void KvChatLegend::setFrame(const PoolFrame& frame, const KvCellColors& colors) {
  bool same = count() == static_cast<int>(frame.sequences.size());
  for (int i = 0; same && i < count(); ++i)
    same = item(i)->data(kSeqRole).toLongLong() == frame.sequences[i].id &&
           item(i)->data(kColorRole).value<QColor>() == colors.chat(frame.sequences[i].colorIndex);
  if (!same) {
    const QSignalBlocker block(this);
    const SequenceId selected = currentItem() ? currentItem()->data(kSeqRole).toLongLong() : -1;
    clear();
    for (const PoolFrameSequence& s : frame.sequences) {
      auto* it = new QListWidgetItem(this);
      it->setData(kSeqRole, QVariant::fromValue<qlonglong>(s.id));
      it->setData(kColorRole, colors.chat(s.colorIndex));
      it->setIcon(swatch(colors.chat(s.colorIndex)));
    }
    setSelectedSequence(selected);
  }
  // A chat's samples (parallel sampling, a compare) are one chat's several sequences: each
  // named with its number, else the legend lists the same line three times.
  QHash<QString, int> perTitle, seen;
  for (const PoolFrameSequence& s : frame.sequences) ++perTitle[s.chatTitle];
  for (int i = 0; i < count(); ++i) {
    const PoolFrameSequence& s = frame.sequences[i];
    QString title = s.chatTitle.isEmpty() ? tr("seq %1").arg(s.id) : s.chatTitle;
    // Its number first: a narrow dock cuts a line in its middle, keeping its start and end.
    if (!s.chatTitle.isEmpty() && perTitle.value(s.chatTitle) > 1) title = tr("%1 · %2").arg(++seen[s.chatTitle]).arg(title);
    const QString text = s.blockTable.size() == 1 ? tr("%1 - 1 block").arg(title) : tr("%1 - %2 blocks").arg(title).arg(s.blockTable.size());
    if (item(i)->text() != text) {
      item(i)->setText(text);
      item(i)->setToolTip(text);
    }
  }
}

int KvChatLegend::rowOf(SequenceId seq) const {
  for (int i = 0; i < count(); ++i)
    if (item(i)->data(kSeqRole).toLongLong() == seq) return i;
  return -1;
}

void KvChatLegend::setSelectedSequence(SequenceId seq) {
  const QSignalBlocker block(this);
  const int row = rowOf(seq);
  if (row < 0) {
    clearSelection();
    setCurrentItem(nullptr);
  } else {
    setCurrentRow(row);
  }
}
