#pragma once
// Help > Keyboard shortcuts: every action handed in that has keys, as it has them (so the list
// cannot go stale), then the keys that are not actions.

#include <QDialog>
#include <QList>

class QAction;

class ShortcutsDialog : public QDialog {
  Q_OBJECT
 public:
  explicit ShortcutsDialog(const QList<QAction*>& actions, QWidget* parent = nullptr);
};
