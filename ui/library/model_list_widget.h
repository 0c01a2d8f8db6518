#pragma once
// The models on this machine as a table: each GGUF found (our folder, other tools' caches,
// the user's folders, recent files) with what its header says and whether this build runs it
// ("no: architecture 'phi3' is not supported ..." in the row, before anyone tries). Scanning
// and reading headers run on a worker thread; rows arrive when it is done.

#include <QLabel>
#include <QList>
#include <QPointer>
#include <QStringList>
#include <QThread>
#include <QTreeWidget>

#include <vector>

#include "models/model_scan.h"
#include "models/model_summary.h"

class ModelListWidget : public QTreeWidget {
  Q_OBJECT
 public:
  // "Runs here" last and stretched: its reason is the longest text and the one to read whole.
  enum Column { kName, kArchitecture, kParameters, kQuantization, kContext, kSize, kTemplate, kSource, kRuns, kColumns };
  static constexpr int kPathRole = Qt::UserRole;       // the file's path
  static constexpr int kSupportedRole = Qt::UserRole + 1;

  explicit ModelListWidget(QWidget* parent = nullptr);
  ~ModelListWidget() override;  // waits for its scans (they post rows to a widget that must be there or known gone)

  // Scans the standard places, `folders` and the `files` given (recent ones, source "Recent").
  void refresh(const QStringList& folders, const QStringList& files = {});
  void setModelInUse(const QString& path);  // its row in bold, "yes, in use" under Runs here
  QString selectedPath() const;
  QString selectedDetail() const;  // its path and verdict in full, for a line under the table
  // That line: a label under the table that follows the selection.
  QLabel* createDetailLabel(QWidget* parent, const QString& objectName);
  bool selectedSupported() const;
  bool isScanning() const { return m_scanning; }

 signals:
  void scanned(int count);
  void modelActivated(const QString& path);  // double-click or Enter on a model that runs here

 private:
  struct Row {
    pagedchat::models::FoundModel found;
    pagedchat::models::ModelSummary summary;
    QString error;  // the file is not a readable GGUF
  };
  void fill(const std::vector<Row>& rows);
  void markInUse();

  QString m_inUse;
  bool m_scanning = false;
  int m_generation = 0;  // a newer refresh supersedes the rows of an older one
  QList<QPointer<QThread>> m_workers;
};
