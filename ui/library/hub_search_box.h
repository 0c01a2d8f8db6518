#pragma once
// "Find on Hugging Face" in the model library: words typed, the hub's GGUF repositories that
// match (most downloaded first), and a repository opened to its GGUF files, each with its size
// and whether it fits in this machine's free memory and runs here, before anything is
// downloaded. Choosing a file that runs hands it to the download (fileChosen).

#include <QWidget>

#include "appcore/library/hub_finder.h"

class QLabel;
class QLineEdit;
class QTreeWidget;
class QTreeWidgetItem;

class HubSearchBox : public QWidget {
  Q_OBJECT
 public:
  explicit HubSearchBox(QWidget* parent = nullptr);
  void search(const QString& words);
  QTreeWidget* results() const { return m_results; }
  QString status() const;

 signals:
  void fileChosen(const QString& repo, const QString& file, const QString& fit);

 private:
  void showRepos(const QString& words, const QVector<pagedchat::models::HubRepo>& repos);
  void showFiles(const QString& repo, const QVector<HubFinder::File>& files);
  void open(QTreeWidgetItem* repo);  // its files, asked for once it is expanded
  void say(const QString& text, bool error = false);

  HubFinder m_finder;
  QLineEdit* m_words = nullptr;
  QTreeWidget* m_results = nullptr;
  QLabel* m_status = nullptr;
};
