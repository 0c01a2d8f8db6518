#pragma once
// The row under the message input: the compare controls (samples, vary settings, beams,
// columns) and the chat's sampling on the left, the turn's actions (copy, regenerate, stop,
// send) on the right. It fits any width from a small laptop's up without clipping a label: on
// one line with text while that fits, then the actions as icons (their tooltips name them and
// their keys), then on two lines. The widgets are made by the owner and handed in.

#include <QVector>
#include <QWidget>

class QGridLayout;
class QToolButton;

class ChatActionRow : public QWidget {
  Q_OBJECT
 public:
  explicit ChatActionRow(QWidget* parent = nullptr);
  void addCompareWidget(QWidget* w);     // left group, in order
  void addAction(QToolButton* button);   // right group, in order; text beside its icon while it fits
  void fit();  // lays the groups out for the current width (done on every resize)

  enum class Shape { oneLineText, oneLineIcons, twoLinesText, twoLinesIcons };
  Shape shape() const { return m_shape; }
  // As narrow as its narrowest shape (two lines, icons): the window may be that small.
  QSize minimumSizeHint() const override;

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void place(Shape shape);
  int actionsWidth(Qt::ToolButtonStyle style) const;
  QWidget* m_compare;
  QWidget* m_actions;
  QGridLayout* m_grid;
  QVector<QToolButton*> m_buttons;
  Shape m_shape = Shape::oneLineText;
};

// The actions' icons, drawn (a glyph font or an icon theme is not on every system) in the
// palette's button text colour; QIcon::fromTheme(themeName) wins where the system has it.
class QIcon;
enum class ActionIcon { send, stop, regenerate, copy, sampling, tools };
QIcon actionIcon(ActionIcon which, const QString& themeName, const QWidget* forWidget);
