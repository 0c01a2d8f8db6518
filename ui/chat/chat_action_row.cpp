// Measures both groups at their preferred widths and picks the first shape that fits.
#include "ui/chat/chat_action_row.h"

#include <QApplication>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QIcon>
#include <QPainter>
#include <QPainterPath>
#include <QPixmap>
#include <QToolButton>

ChatActionRow::ChatActionRow(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("chatActionRow"));
  m_compare = new QWidget(this);
  m_compare->setObjectName(QStringLiteral("compareControls"));
  auto* c = new QHBoxLayout(m_compare);
  c->setContentsMargins(0, 0, 0, 0);
  m_actions = new QWidget(this);
  m_actions->setObjectName(QStringLiteral("turnActions"));
  auto* a = new QHBoxLayout(m_actions);
  a->setContentsMargins(0, 0, 0, 0);
  m_grid = new QGridLayout(this);
  m_grid->setContentsMargins(0, 0, 0, 0);
  m_grid->setVerticalSpacing(4);
  place(Shape::oneLineText);
}

void ChatActionRow::addCompareWidget(QWidget* w) {
  w->setParent(m_compare);
  m_compare->layout()->addWidget(w);
}

void ChatActionRow::addAction(QToolButton* button) {
  button->setParent(m_actions);
  button->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  m_actions->layout()->addWidget(button);
  m_buttons.append(button);
}

void ChatActionRow::place(Shape shape) {
  m_shape = shape;
  const bool icons = shape == Shape::oneLineIcons || shape == Shape::twoLinesIcons;
  for (QToolButton* b : m_buttons) b->setToolButtonStyle(icons ? Qt::ToolButtonIconOnly : Qt::ToolButtonTextBesideIcon);
  m_grid->removeWidget(m_compare);
  m_grid->removeWidget(m_actions);
  const bool twoLines = shape == Shape::twoLinesText || shape == Shape::twoLinesIcons;
  m_grid->addWidget(m_compare, 0, 0, Qt::AlignLeft);
  m_grid->addWidget(m_actions, twoLines ? 1 : 0, twoLines ? 0 : 1, Qt::AlignRight);
  m_grid->setColumnStretch(0, 1);
  m_grid->setColumnStretch(1, twoLines ? 0 : 1);
}

int ChatActionRow::actionsWidth(Qt::ToolButtonStyle style) const {
  int w = 0;
  for (QToolButton* b : m_buttons) {
    const Qt::ToolButtonStyle was = b->toolButtonStyle();
    b->setToolButtonStyle(style);
    w += b->sizeHint().width();
    b->setToolButtonStyle(was);
  }
  return w + m_actions->layout()->spacing() * std::max<int>(0, static_cast<int>(m_buttons.size()) - 1);
}

QSize ChatActionRow::minimumSizeHint() const {
  const int height = m_compare->minimumSizeHint().height() + m_grid->verticalSpacing() + m_actions->minimumSizeHint().height();
  return {std::max(m_compare->sizeHint().width(), actionsWidth(Qt::ToolButtonIconOnly)), height};
}

void ChatActionRow::fit() {
  const int available = width();
  const int compare = m_compare->sizeHint().width();
  const int gap = m_grid->horizontalSpacing() + 8;
  const int text = actionsWidth(Qt::ToolButtonTextBesideIcon);
  const int icons = actionsWidth(Qt::ToolButtonIconOnly);
  Shape shape = Shape::twoLinesIcons;
  if (compare + gap + text <= available) shape = Shape::oneLineText;
  else if (compare + gap + icons <= available) shape = Shape::oneLineIcons;
  else if (text <= available) shape = Shape::twoLinesText;
  if (shape != m_shape) place(shape);
}

void ChatActionRow::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  fit();
}

namespace {
// One icon on a 16x16 grid, stroked and filled in `color`.
void drawActionIcon(QPainter& p, ActionIcon which, const QColor& color) {
  QPen pen(color, 1.6, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin);
  p.setPen(pen);
  p.setBrush(Qt::NoBrush);
  switch (which) {
    case ActionIcon::send: {  // a paper plane's arrow head
      QPainterPath path;
      path.moveTo(2.5, 3);
      path.lineTo(14, 8);
      path.lineTo(2.5, 13);
      path.lineTo(4.5, 8);
      path.closeSubpath();
      p.setBrush(color);
      p.drawPath(path);
      break;
    }
    case ActionIcon::stop:
      p.setBrush(color);
      p.drawRoundedRect(QRectF(3.5, 3.5, 9, 9), 1.5, 1.5);
      break;
    case ActionIcon::regenerate: {  // a circular arrow
      p.drawArc(QRectF(3, 3, 10, 10), 60 * 16, 280 * 16);
      QPainterPath head;
      head.moveTo(10.2, 1.6);
      head.lineTo(12.8, 4.6);
      head.lineTo(9.0, 5.6);
      head.closeSubpath();
      p.setBrush(color);
      p.drawPath(head);
      break;
    }
    case ActionIcon::copy:  // two sheets
      p.drawRoundedRect(QRectF(5.5, 5.5, 8, 8.5), 1.2, 1.2);
      p.drawPolyline(QPolygonF({QPointF(3, 11), QPointF(3, 2.5), QPointF(10.5, 2.5)}));
      break;
    case ActionIcon::tools: {  // a wrench: a handle and an open ring at its head
      p.setPen(QPen(color, 2.2, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
      p.drawLine(QPointF(3, 13), QPointF(8.6, 7.4));
      p.setPen(pen);
      p.drawArc(QRectF(7.5, 2.5, 6.5, 6.5), 90 * 16, 270 * 16);
      break;
    }
    case ActionIcon::sampling:  // three sliders
      for (int i = 0; i < 3; ++i) {
        const qreal y = 3.5 + i * 4.5, knob = i == 1 ? 10 : i == 0 ? 5 : 8;
        p.drawLine(QPointF(2, y), QPointF(14, y));
        p.setBrush(color);
        p.drawEllipse(QPointF(knob, y), 1.8, 1.8);
        p.setBrush(Qt::NoBrush);
      }
      break;
  }
}
}  // namespace

QIcon actionIcon(ActionIcon which, const QString& themeName, const QWidget* forWidget) {
  if (QIcon::hasThemeIcon(themeName)) return QIcon::fromTheme(themeName);
  const qreal ratio = forWidget ? forWidget->devicePixelRatioF() : qApp->devicePixelRatio();
  const QPalette palette = forWidget ? forWidget->palette() : QApplication::palette();
  QIcon icon;
  for (int size : {16, 24, 32}) {
    auto draw = [&](const QColor& color) {
      QPixmap pixmap(QSize(size, size) * ratio);
      pixmap.setDevicePixelRatio(ratio);
      pixmap.fill(Qt::transparent);
      QPainter p(&pixmap);
      p.setRenderHint(QPainter::Antialiasing);
      p.scale(size / 16.0, size / 16.0);
      drawActionIcon(p, which, color);
      return pixmap;
    };
    icon.addPixmap(draw(palette.color(QPalette::Active, QPalette::ButtonText)), QIcon::Normal);
    // Drawn in the disabled text colour: the automatic greying of a drawn icon reads badly in a dark theme.
    icon.addPixmap(draw(palette.color(QPalette::Disabled, QPalette::ButtonText)), QIcon::Disabled);
  }
  return icon;
}
