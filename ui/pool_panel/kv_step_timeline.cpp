// The step timeline: steps as columns, chats as rows, drawn with QPainter.
#include "ui/pool_panel/kv_step_timeline.h"

#include <QCoreApplication>
#include <QHelpEvent>
#include <QPainter>
#include <QStringList>
#include <QToolTip>

#include <algorithm>

#include "ui/pool_view/kv_cell_colors.h"
#include "ui/theme/app_theme.h"

using pagedchat::SequenceId;
using pagedchat::StepRecord;

namespace {

bool contains(const std::vector<SequenceId>& ids, SequenceId id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

}  // namespace

KvStepTimeline::KvStepTimeline(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("kvStepTimeline"));
  setMouseTracking(true);
}

void KvStepTimeline::clear() {
  m_steps.clear();
  m_rows.clear();
  m_rowOrder.clear();
  m_maxStepTokens = 1;
  updateGeometry();
  update();
}

void KvStepTimeline::addFrame(const PoolFrame& frame) {
  for (const PoolFrameSequence& s : frame.sequences) {
    auto it = m_rows.find(s.id);
    if (it != m_rows.end()) it->title = s.chatTitle, it->colorIndex = s.colorIndex;
  }
  if (frame.steps.empty()) return;
  for (const StepRecord& step : frame.steps) {
    if (!m_steps.empty() && step.step_index <= m_steps.back().step_index) m_steps.clear();  // a new engine
    m_steps.push_back(step);
    auto addRow = [&](SequenceId seq) {
      if (m_rows.contains(seq)) return;
      Row row;
      for (const PoolFrameSequence& s : frame.sequences)
        if (s.id == seq) row = {s.chatTitle, s.colorIndex};
      m_rows.insert(seq, row);
      m_rowOrder.push_back(seq);
    };
    for (const StepRecord::Chunk& c : step.chunks) addRow(c.seq);
    for (const auto* ids : {&step.preempted, &step.swapped_out, &step.swapped_in})
      for (SequenceId s : *ids) addRow(s);
    m_maxStepTokens = std::max(m_maxStepTokens, step.num_tokens());
  }
  while (m_steps.size() > static_cast<size_t>(kMaxSteps)) m_steps.pop_front();
  // Rows no step on screen mentions any more go.
  QVector<SequenceId> keep;
  for (SequenceId seq : m_rowOrder) {
    bool seen = false;
    for (const StepRecord& st : m_steps) {
      for (const StepRecord::Chunk& c : st.chunks) seen = seen || c.seq == seq;
      seen = seen || contains(st.preempted, seq) || contains(st.swapped_out, seq) || contains(st.swapped_in, seq);
      if (seen) break;
    }
    if (seen) keep.push_back(seq);
    else m_rows.remove(seq);
  }
  if (keep.size() != m_rowOrder.size()) updateGeometry();
  m_rowOrder = keep;
  updateGeometry();
  update();
}

QString KvStepTimeline::rowTitle(SequenceId seq) const {
  const auto it = m_rows.find(seq);
  return it == m_rows.end() || it->title.isEmpty() ? tr("seq %1").arg(seq) : it->title;
}

QString KvStepTimeline::cellText(int64_t stepIndex, SequenceId seq) const {
  for (const StepRecord& st : m_steps) {
    if (st.step_index != stepIndex) continue;
    QStringList parts;
    for (const StepRecord::Chunk& c : st.chunks) {
      if (c.seq != seq) continue;
      if (c.is_decode) parts << QStringLiteral("D");
      else if (c.num_recomputed == c.num_tokens) parts << QStringLiteral("R%1").arg(c.num_tokens);
      else parts << QStringLiteral("P%1").arg(c.num_tokens);
    }
    if (contains(st.preempted, seq)) parts << QStringLiteral("✕");
    if (contains(st.swapped_out, seq)) parts << QStringLiteral("out");
    if (contains(st.swapped_in, seq)) parts << QStringLiteral("in");
    return parts.join(QLatin1Char(' '));
  }
  return {};
}

int KvStepTimeline::columnWidth() const { return std::max(16, fontMetrics().horizontalAdvance(QStringLiteral("P32")) + 4); }
int KvStepTimeline::rowHeight() const { return fontMetrics().height() + 4; }

int KvStepTimeline::labelWidth() const {
  int w = fontMetrics().horizontalAdvance(tr("tokens"));
  for (SequenceId seq : m_rowOrder) w = std::max(w, fontMetrics().horizontalAdvance(rowTitle(seq)));
  return std::min(w, 140) + 8;
}

QSize KvStepTimeline::sizeHint() const {
  // A header, the rows, then the bars of tokens a step.
  return {labelWidth() + columnWidth() * 24, rowHeight() * (static_cast<int>(m_rowOrder.size()) + 3)};
}

const StepRecord* KvStepTimeline::stepAt(int x) const {
  const int cw = columnWidth(), left = labelWidth();
  const int visible = std::max(1, (width() - left) / cw);
  const int first = std::max(0, static_cast<int>(m_steps.size()) - visible);
  const int col = (x - left) / cw;
  if (x < left || first + col >= static_cast<int>(m_steps.size())) return nullptr;
  return &m_steps[static_cast<size_t>(first + col)];
}

bool KvStepTimeline::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    if (const StepRecord* st = stepAt(help->pos().x()))
      QToolTip::showText(help->globalPos(), describeStepRecord(*st, [this](SequenceId s) { return rowTitle(s); }), this);
    else
      QToolTip::hideText();
    return true;
  }
  return QWidget::event(e);
}

void KvStepTimeline::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const KvCellColors colors = KvCellColors::fromPalette(palette());
  p.fillRect(rect(), colors.background);
  const int cw = columnWidth(), rh = rowHeight(), left = labelWidth();
  const QColor ink = palette().color(QPalette::WindowText);
  p.setPen(ink);
  if (m_steps.empty()) {
    p.drawText(rect().adjusted(6, 0, -6, 0), Qt::AlignVCenter | Qt::AlignLeft | Qt::TextWordWrap,
               tr("Each engine step will be a column here: which chat's prompt chunk or next token it computed."));
    return;
  }
  const int visible = std::max(1, (width() - left) / cw);
  const int first = std::max(0, static_cast<int>(m_steps.size()) - visible);
  // Header: step numbers, every fifth.
  for (int i = first; i < static_cast<int>(m_steps.size()); ++i) {
    const int x = left + (i - first) * cw;
    const int64_t index = m_steps[static_cast<size_t>(i)].step_index;
    if (index % 5 == 0 || i == first)
      p.drawText(QRect(x, 0, cw * 3, rh), Qt::AlignLeft | Qt::AlignVCenter, QString::number(index));
  }
  const QFontMetrics fm = fontMetrics();
  for (int r = 0; r < m_rowOrder.size(); ++r) {
    const SequenceId seq = m_rowOrder[r];
    const int y = rh * (r + 1);
    p.setPen(ink);
    p.drawText(QRect(2, y, left - 6, rh), Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(rowTitle(seq), Qt::ElideRight, left - 6));
    const QColor chat = colors.chat(m_rows.value(seq).colorIndex);
    for (int i = first; i < static_cast<int>(m_steps.size()); ++i) {
      const StepRecord& st = m_steps[static_cast<size_t>(i)];
      const QRect cell(left + (i - first) * cw + 1, y + 1, cw - 2, rh - 2);
      for (const StepRecord::Chunk& c : st.chunks) {
        if (c.seq != seq) continue;
        if (c.is_decode) {
          p.fillRect(cell.adjusted(0, cell.height() / 3, 0, -cell.height() / 3), chat);  // a thin bar: one token
        } else {
          p.fillRect(cell, chat);
          if (c.num_recomputed == c.num_tokens) p.fillRect(cell, QBrush(colors.swappedHatch, Qt::BDiagPattern));
          p.setPen(readableTextOn(chat));
          p.drawText(cell, Qt::AlignCenter, QString::number(c.num_tokens));
        }
      }
      auto mark = [&](const std::vector<SequenceId>& ids, KvFlashKind kind, const QString& glyph) {
        if (!contains(ids, seq)) return;
        p.setPen(QPen(colors.flash(kind), 2));
        p.drawRect(cell.adjusted(1, 1, -1, -1));
        p.setPen(ink);
        p.drawText(cell, Qt::AlignCenter, glyph);
      };
      mark(st.preempted, KvFlashKind::Preempt, QStringLiteral("✕"));
      mark(st.swapped_out, KvFlashKind::SwapOut, QStringLiteral("↓"));
      mark(st.swapped_in, KvFlashKind::SwapIn, QStringLiteral("↑"));
    }
  }
  // Bottom: the tokens each step computed, against the largest step seen.
  const int y = rh * (static_cast<int>(m_rowOrder.size()) + 1) + 2;
  const int barH = std::max(rh, height() - y - 2);
  p.setPen(ink);
  p.drawText(QRect(2, y, left - 6, rh), Qt::AlignLeft | Qt::AlignVCenter, tr("tokens"));
  for (int i = first; i < static_cast<int>(m_steps.size()); ++i) {
    const int h = std::max(1, barH * m_steps[static_cast<size_t>(i)].num_tokens() / m_maxStepTokens);
    const QRect bar(left + (i - first) * cw + 2, y + barH - h, cw - 4, h);
    p.fillRect(bar, isMixedStep(m_steps[static_cast<size_t>(i)]) ? colors.flash(KvFlashKind::CacheHit) : colors.cachedOutline);
  }
}
