#pragma once
// The status bar's message: one line, elided at the bar's width, the whole text in its tooltip.
// A word-wrapped label there gave the status bar a height for its width: a long message at a
// narrow moment raised the window's minimum height, and the window grew past a laptop's screen.
// text() stays the whole message (what tests and the tooltip read); only the painting elides.

#include <QLabel>

class StatusLine : public QLabel {
  Q_OBJECT
 public:
  explicit StatusLine(const QString& text, QWidget* parent = nullptr);
  QSize minimumSizeHint() const override;
  QSize sizeHint() const override;

 protected:
  bool event(QEvent* e) override;
  void paintEvent(QPaintEvent* event) override;
};
