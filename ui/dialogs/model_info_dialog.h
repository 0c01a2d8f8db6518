#pragma once
// The model information panel (Help > Model information, Ctrl+I): the model in use, one row per
// fact (ModelInfo::rows), selectable, with a Copy button that puts them all on the clipboard as
// "label: value" lines (for a bug report or a note).

#include <QDialog>

#include "appcore/bridge/model_info.h"

class ModelInfoDialog : public QDialog {
  Q_OBJECT
 public:
  explicit ModelInfoDialog(const ModelInfo& info, QWidget* parent = nullptr);
  static QString asText(const ModelInfo& info);  // what Copy copies
};
