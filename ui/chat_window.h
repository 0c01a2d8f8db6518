#pragma once
// The main window: one chat with the loaded model, replies streamed as they are generated.
// (Several chats, fork, compare and the KV view come with the desktop-app issue.)

#include <QMainWindow>
#include <QThread>
#include <QTimer>

class QLabel;
class QLineEdit;
class QPushButton;
class QTextBrowser;
class EngineWorker;

class ChatWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit ChatWindow(QWidget* parent = nullptr);
  ~ChatWindow() override;

  void loadModel(const QString& path, int threads = 0);

 signals:
  void modelReady();
  void replyDone();

 private:
  void send();
  void render();

  QThread m_engineThread;
  QTimer m_renderTimer;
  EngineWorker* m_worker = nullptr;
  QTextBrowser* m_transcript = nullptr;
  QLineEdit* m_input = nullptr;
  QPushButton* m_send = nullptr;
  QPushButton* m_stop = nullptr;
  QLabel* m_status = nullptr;
  QVector<QPair<QString, QString>> m_messages;
  bool m_generating = false;
};
