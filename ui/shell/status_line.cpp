#include "ui/shell/status_line.h"

#include <QHelpEvent>
#include <QPainter>
#include <QStyle>
#include <QToolTip>

StatusLine::StatusLine(const QString& text, QWidget* parent) : QLabel(text, parent) {
  setWordWrap(false);
  setTextFormat(Qt::PlainText);
  setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
}

QSize StatusLine::minimumSizeHint() const { return {fontMetrics().horizontalAdvance(QStringLiteral("…")) * 4, fontMetrics().height()}; }

QSize StatusLine::sizeHint() const { return {fontMetrics().horizontalAdvance(text()), fontMetrics().height()}; }

void StatusLine::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QRect r = contentsRect();
  const QString shown = fontMetrics().elidedText(text(), Qt::ElideRight, r.width());
  style()->drawItemText(&p, r, Qt::AlignLeft | Qt::AlignVCenter, palette(), isEnabled(), shown, foregroundRole());
}

bool StatusLine::event(QEvent* e) {
  // The whole message where it did not fit; none where it did (a tooltip repeating it is noise).
  if (e->type() == QEvent::ToolTip) {
    if (fontMetrics().horizontalAdvance(text()) > contentsRect().width())
      QToolTip::showText(static_cast<QHelpEvent*>(e)->globalPos(), text(), this);
    else
      QToolTip::hideText();
    return true;
  }
  return QLabel::event(e);
}
