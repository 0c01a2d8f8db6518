#pragma once
// The settings forms' spin boxes, made one way: an object name (what tests and the tour find
// them by), a range, and for an integer one the text its minimum (0) shows ("off", "random").

#include <QDoubleSpinBox>
#include <QSpinBox>

inline QDoubleSpinBox* settingsDoubleBox(QWidget* parent, const char* name, double lo, double hi, double step, int decimals = 2) {
  auto* b = new QDoubleSpinBox(parent);
  b->setObjectName(QString::fromLatin1(name));
  b->setRange(lo, hi);
  b->setSingleStep(step);
  b->setDecimals(decimals);
  return b;
}

inline QSpinBox* settingsIntBox(QWidget* parent, const char* name, int lo, int hi, const QString& zeroText = {}) {
  auto* b = new QSpinBox(parent);
  b->setObjectName(QString::fromLatin1(name));
  b->setRange(lo, hi);
  if (!zeroText.isEmpty()) b->setSpecialValueText(zeroText);  // shown for the minimum (0)
  return b;
}
