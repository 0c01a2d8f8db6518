#pragma once
// The model library (File > Model library…): every model on this machine (model_list_widget.h)
// with the one in use and the recent ones, opened with a double-click or Load; the folders
// the user adds (remembered); a downloaded model deleted (only files in PagedChat's own models
// folder: other tools' files are theirs); a model's folder revealed in the file manager; the
// hub searched by a model's name, each file said to fit this machine or not (hub_search_box.h);
// and a download from a Hugging Face repository by its name and file name, with progress and
// Cancel; and a model quantized into a smaller type (quantize_dialog.h), listed when written.
// The window keeps it once made: closing it hides it, and a download in it goes on.

#include <QDialog>
#include <QStringList>

class HubSearchBox;
class ModelDownload;
class ModelListWidget;
class QLabel;
class QLayout;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QuantizeDialog;

class ModelLibraryDialog : public QDialog {
  Q_OBJECT
 public:
  ModelLibraryDialog(const QStringList& folders, const QStringList& recent, const QString& inUse, const QString& modelsDir,
                     QWidget* parent = nullptr);

  QStringList folders() const { return m_folders; }
  void addFolder(const QString& dir);  // also what "Add folder…" does after its dialog
  void downloadFromHub(const QString& repo, const QString& file);
  // Deletes a model downloaded into the models folder; false (and a message) for any other file.
  bool deleteModel(const QString& path);
  void setModelInUse(const QString& path);
  void setRecent(const QStringList& recent);  // listed from the next rescan
  void rescan();
  // Quantize… on a model: the dialog, shown (it deletes itself when closed).
  QuantizeDialog* openQuantize(const QString& path);
  ModelListWidget* modelList() const { return m_list; }
  ModelDownload* download() const { return m_download; }
  HubSearchBox* hubSearch() const { return m_hubSearch; }
  QTabWidget* tabs() const { return m_tabs; }
  QString message() const;

 signals:
  void foldersChanged(const QStringList& folders);
  void loadRequested(const QString& path);

 private:
  QLayout* buildActionRow();
  QWidget* buildFoldersBox();
  QWidget* buildHubBox();
  void connectDownload();
  void updateButtons();
  void say(const QString& text, bool error = false);

  QStringList m_folders, m_recent;
  QString m_modelsDir;
  QString m_inUse;
  QTabWidget* m_tabs;
  ModelListWidget* m_list;
  HubSearchBox* m_hubSearch;
  QListWidget* m_folderList;
  QPushButton *m_load, *m_reveal, *m_delete, *m_quantize, *m_removeFolder, *m_hubGet, *m_hubCancel;
  QLineEdit *m_repo, *m_file;
  QProgressBar* m_progress;
  QLabel* m_message;
  ModelDownload* m_download;
};
