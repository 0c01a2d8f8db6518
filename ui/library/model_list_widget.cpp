// The model table and its background scan (see model_list_widget.h).
#include "ui/library/model_list_widget.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QHeaderView>
#include <QMetaObject>
#include <QPointer>
#include <QThread>


#include "engine/common/error.h"

namespace models = pagedchat::models;

ModelListWidget::ModelListWidget(QWidget* parent) : QTreeWidget(parent) {
  setObjectName(QStringLiteral("modelList"));
  setColumnCount(kColumns);
  // Short headers, so the verdict keeps room at 1024 px; each says in full in its tooltip.
  setHeaderLabels({tr("Model"), tr("Arch."), tr("Params"), tr("Quant."), tr("Context"), tr("Size"), tr("Template"),
                   tr("Found in"), tr("Runs here")});
  const QStringList tips = {tr("The repository and file, or Ollama's model:tag"), tr("general.architecture"),
                            tr("Parameters: every tensor's elements"), tr("Quantization (general.file_type)"),
                            tr("Context length the model was trained for"), tr("File size"),
                            tr("Whether the file carries its chat template"), tr("Which tool's folder it is in"),
                            tr("Whether this build can run it, and if not why")};
  for (int c = 0; c < kColumns; ++c) headerItem()->setToolTip(c, tips[c]);
  setRootIsDecorated(false);
  setUniformRowHeights(true);
  setAlternatingRowColors(true);
  setSortingEnabled(true);
  sortByColumn(kSource, Qt::AscendingOrder);
  header()->setStretchLastSection(true);
  header()->setSectionResizeMode(kName, QHeaderView::Interactive);
  header()->resizeSection(kName, 280);
  for (int c = kArchitecture; c < kRuns; ++c) header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  header()->setSectionResizeMode(kRuns, QHeaderView::Stretch);  // elided to the width left; the line under says it whole
  connect(this, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
    if (item && item->data(0, kSupportedRole).toBool()) emit modelActivated(item->data(0, kPathRole).toString());
  });
}

ModelListWidget::~ModelListWidget() {
  for (const QPointer<QThread>& t : m_workers)
    if (t) t->wait();
}

void ModelListWidget::refresh(const QStringList& folders, const QStringList& files) {
  m_scanning = true;
  const int generation = ++m_generation;
  std::vector<std::string> extra;
  for (const QString& f : folders) extra.push_back(f.toStdString());
  std::vector<models::ScanPlace> places = models::standard_places(extra);
  for (const QString& f : files) places.push_back({"Recent", f.toStdString(), models::PlaceLayout::kFile});
  QPointer<ModelListWidget> self(this);
  QThread* worker = QThread::create([self, generation, places] {
    std::vector<models::FoundModel> found = models::scan_places(places);  // each file once, a recent one too
    std::vector<Row> rows;
    for (auto& f : found) {
      Row row{f, {}, {}};
      try {
        row.summary = models::summarize_model(f.path);
      } catch (const std::exception& e) {
        row.error = QString::fromUtf8(e.what());
      }
      rows.push_back(std::move(row));
    }
    // Posted to the application object (always alive); the widget may be gone by then.
    QMetaObject::invokeMethod(QCoreApplication::instance(), [self, generation, rows = std::move(rows)] {
      if (!self || generation != self->m_generation) return;
      self->fill(rows);
    }, Qt::QueuedConnection);
  });
  connect(worker, &QThread::finished, worker, &QObject::deleteLater);
  m_workers.removeAll(nullptr);
  m_workers.append(worker);
  worker->start();
}

void ModelListWidget::fill(const std::vector<Row>& rows) {
  const QString keep = selectedPath();
  setSortingEnabled(false);
  clear();
  for (const Row& r : rows) {
    auto* item = new QTreeWidgetItem(this);
    const auto& s = r.summary;
    const QString path = QString::fromStdString(r.found.path);
    item->setText(kName, QString::fromStdString(r.found.label));
    item->setData(0, kPathRole, path);
    item->setText(kSource, QString::fromStdString(r.found.source));
    item->setToolTip(kName, path);
    if (!r.error.isEmpty()) {
      item->setText(kRuns, tr("no: not a readable GGUF"));
      item->setToolTip(kRuns, r.error);
      item->setData(0, kSupportedRole, false);
      item->setForeground(kName, palette().brush(QPalette::Disabled, QPalette::Text));
      continue;
    }
    item->setText(kArchitecture, QString::fromStdString(s.architecture));
    item->setText(kParameters, QString::fromStdString(models::format_parameters(s.parameters)));
    item->setText(kQuantization, QString::fromStdString(s.quantization));
    item->setText(kContext, s.context_length ? QString::number(s.context_length) : QString());
    item->setText(kSize, QString::fromStdString(models::format_bytes(s.file_size)));
    item->setText(kTemplate, s.has_chat_template ? tr("yes") : tr("no"));
    item->setText(kRuns, s.supported ? tr("yes") : tr("no: %1").arg(QString::fromStdString(s.problem)));
    item->setToolTip(kRuns, s.supported ? tr("This build can run it") : QString::fromStdString(s.problem));
    item->setData(0, kSupportedRole, s.supported);
    if (!s.supported)
      for (int c = 0; c < kColumns; ++c) item->setForeground(c, palette().brush(QPalette::Disabled, QPalette::Text));
    if (path == keep) setCurrentItem(item);
  }
  setSortingEnabled(true);
  markInUse();
  m_scanning = false;
  emit scanned(topLevelItemCount());
}

void ModelListWidget::setModelInUse(const QString& path) {
  m_inUse = QFileInfo(path).canonicalFilePath();
  markInUse();
}

void ModelListWidget::markInUse() {
  for (int i = 0; i < topLevelItemCount(); ++i) {
    QTreeWidgetItem* item = topLevelItem(i);
    if (!item->data(0, kSupportedRole).toBool()) continue;
    const bool inUse = !m_inUse.isEmpty() && QFileInfo(item->data(0, kPathRole).toString()).canonicalFilePath() == m_inUse;
    QFont f = item->font(kName);
    f.setBold(inUse);
    item->setFont(kName, f);
    item->setText(kRuns, inUse ? tr("yes, in use") : tr("yes"));
  }
}

QLabel* ModelListWidget::createDetailLabel(QWidget* parent, const QString& objectName) {
  auto* detail = new QLabel(parent);
  detail->setObjectName(objectName);
  detail->setWordWrap(true);
  detail->setTextInteractionFlags(Qt::TextSelectableByMouse);
  connect(this, &QTreeWidget::currentItemChanged, detail, [this, detail] { detail->setText(selectedDetail()); });
  return detail;
}

QString ModelListWidget::selectedDetail() const {
  const QTreeWidgetItem* item = currentItem();
  if (!item) return QString();
  return tr("%1 — runs here: %2").arg(item->data(0, kPathRole).toString(), item->text(kRuns));
}

QString ModelListWidget::selectedPath() const {
  const QTreeWidgetItem* item = currentItem();
  return item ? item->data(0, kPathRole).toString() : QString();
}

bool ModelListWidget::selectedSupported() const {
  const QTreeWidgetItem* item = currentItem();
  return item && item->data(0, kSupportedRole).toBool();
}
