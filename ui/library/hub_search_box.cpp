// The hub search, shown (see hub_search_box.h).
#include "ui/library/hub_search_box.h"

#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "models/model_summary.h"
#include "ui/theme/app_theme.h"

namespace {
constexpr int kRepoRole = Qt::UserRole;      // a file's repository, or the repository's own id
constexpr int kFileRole = Qt::UserRole + 1;  // a file's path in it; empty on a repository
const QString kPending = QStringLiteral("pending");
}  // namespace

HubSearchBox::HubSearchBox(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("hubSearchBox"));
  auto* v = new QVBoxLayout(this);
  auto* row = new QHBoxLayout;
  m_words = new QLineEdit(this);
  m_words->setObjectName(QStringLiteral("hubSearchWords"));
  m_words->setPlaceholderText(tr("A model's name, e.g. llama 3.2 1b instruct"));
  m_words->setClearButtonEnabled(true);
  auto* go = new QPushButton(tr("Search"), this);
  go->setObjectName(QStringLiteral("hubSearchButton"));
  row->addWidget(m_words, 1);
  row->addWidget(go);
  v->addLayout(row);
  m_results = new QTreeWidget(this);
  m_results->setObjectName(QStringLiteral("hubResults"));
  m_results->setColumnCount(3);
  m_results->setHeaderLabels({tr("Repository / file"), tr("Size"), tr("On this machine")});
  m_results->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  m_results->header()->setStretchLastSection(false);
  m_results->header()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
  v->addWidget(m_results, 1);
  m_status = new QLabel(this);
  m_status->setObjectName(QStringLiteral("hubSearchStatus"));
  m_status->setWordWrap(true);
  v->addWidget(m_status);

  connect(m_words, &QLineEdit::returnPressed, this, [this] { search(m_words->text()); });
  connect(go, &QPushButton::clicked, this, [this] { search(m_words->text()); });
  connect(&m_finder, &HubFinder::found, this, &HubSearchBox::showRepos);
  connect(&m_finder, &HubFinder::filesListed, this, &HubSearchBox::showFiles);
  connect(&m_finder, &HubFinder::failed, this, [this](const QString& message) { say(tr("The hub did not answer: %1").arg(message), true); });
  connect(m_results, &QTreeWidget::itemExpanded, this, &HubSearchBox::open);
  connect(m_results, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
    if (!item) return;
    if (item->data(0, kFileRole).toString().isEmpty()) return item->setExpanded(true);  // a repository: its files
    if (item->flags() & Qt::ItemIsEnabled)
      emit fileChosen(item->data(0, kRepoRole).toString(), item->data(0, kFileRole).toString(), item->text(2));
  });
}

QString HubSearchBox::status() const { return m_status->text(); }

void HubSearchBox::say(const QString& text, bool error) {
  m_status->setText(text);
  m_status->setStyleSheet(error ? QStringLiteral("color: %1;").arg(textColors().error.name()) : QString());
}

void HubSearchBox::search(const QString& words) {
  const QString w = words.simplified();
  if (w.isEmpty()) return;
  m_words->setText(w);
  m_results->clear();
  say(tr("Searching the hub for “%1”…").arg(w));
  m_finder.search(w);
}

void HubSearchBox::showRepos(const QString& words, const QVector<pagedchat::models::HubRepo>& repos) {
  const QLocale locale;
  m_results->clear();
  for (const auto& r : repos) {
    auto* item = new QTreeWidgetItem(m_results);
    const QString id = QString::fromStdString(r.id);
    item->setText(0, id);
    item->setText(2, tr("%1 downloads · %2 likes").arg(locale.toString(static_cast<qulonglong>(r.downloads)),
                                                       locale.toString(static_cast<qulonglong>(r.likes))));
    item->setData(0, kRepoRole, id);
    auto* pending = new QTreeWidgetItem(item, {tr("Listing its files…")});
    pending->setData(0, kRepoRole, kPending);
    pending->setFlags(Qt::NoItemFlags);
  }
  say(repos.isEmpty() ? tr("No GGUF repository on the hub matches “%1”.").arg(words)
                      : tr("%1 repositories with GGUF files for “%2”, most downloaded first: open one for its files.")
                            .arg(repos.size())
                            .arg(words));
}

void HubSearchBox::open(QTreeWidgetItem* repo) {
  if (repo->parent() || repo->childCount() != 1 || repo->child(0)->data(0, kRepoRole).toString() != kPending) return;
  say(tr("Listing the files of %1…").arg(repo->text(0)));
  m_finder.listFiles(repo->text(0));
}

void HubSearchBox::showFiles(const QString& repo, const QVector<HubFinder::File>& files) {
  const QList<QTreeWidgetItem*> found = m_results->findItems(repo, Qt::MatchExactly, 0);
  if (found.isEmpty()) return;
  QTreeWidgetItem* item = found.first();
  qDeleteAll(item->takeChildren());
  using V = pagedchat::models::FitCheck::Verdict;
  const TextColors colors = textColors();
  int runnable = 0;
  for (const HubFinder::File& f : files) {
    auto* child = new QTreeWidgetItem(item);
    const QString path = QString::fromStdString(f.file.path);
    child->setText(0, path);
    child->setText(1, QString::fromStdString(pagedchat::models::format_bytes(f.file.size)));
    child->setText(2, QString::fromStdString(f.fit.sentence));
    child->setToolTip(2, child->text(2));
    child->setData(0, kRepoRole, repo);
    child->setData(0, kFileRole, path);
    const QColor shade = f.fit.verdict == V::fits ? colors.ok : f.fit.verdict == V::tight ? colors.warning : colors.error;
    child->setForeground(2, shade);
    if (f.fit.verdict == V::does_not_run) child->setFlags(Qt::NoItemFlags);  // listed, not offered
    else ++runnable;
  }
  say(files.isEmpty() ? tr("%1 has no GGUF file.").arg(repo)
                      : tr("%1: %2 GGUF files, %3 of them run here. Choose one, then Download.").arg(repo).arg(files.size()).arg(runnable));
}
