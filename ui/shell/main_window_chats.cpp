// The main window's chat management: the list's search box and results, the Chat menu (also the
// list's context menu: rename, duplicate, pin, delete, export, import), the View and Help
// menus, and the per-chat status line.
#include "ui/shell/main_window.h"

#include <QAction>
#include <QAbstractButton>
#include <QActionGroup>
#include <QApplication>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QSaveFile>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QTableWidget>
#include <QToolBar>
#include <QVBoxLayout>

#include <algorithm>

#include "appcore/chat/chat_database.h"
#include "ui/dialogs/model_info_dialog.h"
#include "ui/theme/app_theme.h"
#include "appcore/chat/chat_export.h"
#include "ui/chat/transcript_view.h"
#include "ui/chat_list/chat_list_widget.h"
#include "ui/chat_list/chat_search_results.h"

namespace {
const QString kListOrderKey = QStringLiteral("chat_list_order");  // "recent", "created" or "title"
const QString kThemeKey = QStringLiteral("ui/theme");              // "system", "light" or "dark"
constexpr int kSearchDelayMs = 150;                               // searches once typing pauses this long
}  // namespace

QWidget* MainWindow::buildChatList(QWidget* parent) {
  auto* box = new QWidget(parent);
  auto* v = new QVBoxLayout(box);
  v->setContentsMargins(0, 0, 0, 0);
  m_search = new QLineEdit(box);
  m_search->setObjectName(QStringLiteral("searchChats"));
  m_search->setPlaceholderText(tr("Search chats (Ctrl+F)"));
  m_search->setClearButtonEnabled(true);
  m_search->setToolTip(tr("Titles and message text; each word as the start of a word, case and accents ignored. Enter "
                          "opens the first result, Esc clears."));
  v->addWidget(m_search);
  m_listStack = new QStackedWidget(box);
  m_list = new ChatListWidget(m_listStack);
  m_searchResults = new ChatSearchResults(m_listStack);
  m_listStack->addWidget(m_list);
  m_listStack->addWidget(m_searchResults);
  v->addWidget(m_listStack, 1);

  const QString order = m_db->setting(kListOrderKey, QStringLiteral("recent"));
  m_list->setOrder(order == QLatin1String("created") ? ChatListWidget::Order::created
                   : order == QLatin1String("title") ? ChatListWidget::Order::title
                                                     : ChatListWidget::Order::recent);
  connect(m_list, &ChatListWidget::chatSelected, this, &MainWindow::selectChat);
  connect(m_list, &ChatListWidget::renamed, this, &MainWindow::renameChat);
  connect(m_list, &ChatListWidget::contextMenuRequested, this, [this](ChatId, const QPoint& at) { m_chatMenu->popup(at); });

  m_searchTimer.setSingleShot(true);
  m_searchTimer.setInterval(kSearchDelayMs);
  connect(&m_searchTimer, &QTimer::timeout, this, &MainWindow::runSearch);
  connect(m_search, &QLineEdit::textChanged, this, [this](const QString& text) {
    if (text.trimmed().isEmpty()) {
      m_searchTimer.stop();
      m_listStack->setCurrentWidget(m_list);
    } else {
      m_searchTimer.start();
    }
  });
  connect(m_search, &QLineEdit::returnPressed, this, [this] {
    runSearch();  // what is typed now, not what the timer last saw
    const ChatController::SearchResult first = m_searchResults->result(std::max(m_searchResults->currentRow(), 0));
    if (first.chat >= 0) openSearchResult(first.chat, first.message);
  });
  connect(m_searchResults, &ChatSearchResults::resultActivated, this, &MainWindow::openSearchResult);
  // Esc in the box clears it; Down goes to the results.
  m_search->installEventFilter(this);
  return box;
}

void MainWindow::runSearch() {
  m_searchTimer.stop();
  const QString words = m_search->text().trimmed();
  if (words.isEmpty()) return;
  QString error;
  const QVector<ChatController::SearchResult> results = m_chats->search(words, &error);
  m_searchResults->showResults(results, [this](ChatId id) { return m_list->title(id); }, error);
  m_listStack->setCurrentWidget(m_searchResults);
}

void MainWindow::showSearch() {
  if (auto* dock = findChild<QDockWidget*>(QStringLiteral("chatsDock"))) dock->show();
  m_search->setFocus();
  m_search->selectAll();
}

void MainWindow::openSearchResult(ChatId chat, int message) {
  if (!m_chats->chat(chat)) return;
  selectChat(chat);
  if (message >= 0) m_transcript->revealMessage(message, m_search->text().split(QLatin1Char(' '), Qt::SkipEmptyParts));
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_search && (event->type() == QEvent::KeyPress || event->type() == QEvent::ShortcutOverride)) {
    const int key = static_cast<QKeyEvent*>(event)->key();
    if (key == Qt::Key_Escape && !m_search->text().isEmpty()) {
      // Esc is also Stop: while the box holds words, it is the box's.
      if (event->type() == QEvent::ShortcutOverride) event->accept();
      else m_search->clear();
      return true;
    }
    if (event->type() == QEvent::ShortcutOverride) return false;
    if (key == Qt::Key_Down && m_listStack->currentWidget() == m_searchResults) {
      m_searchResults->setFocus();
      return true;
    }
  }
  return QMainWindow::eventFilter(watched, event);
}

void MainWindow::buildChatMenu() {
  m_chatMenu = menuBar()->addMenu(tr("&Chat"));
  m_chatMenu->setObjectName(QStringLiteral("chatMenu"));
  auto add = [this](const QString& text, const char* name, const QKeySequence& key, auto slot) {
    QAction* a = m_chatMenu->addAction(text, this, slot);
    a->setObjectName(QString::fromLatin1(name));
    if (!key.isEmpty()) a->setShortcut(key);
    return a;
  };
  add(tr("&New chat"), "newChatAction", QKeySequence(Qt::CTRL | Qt::Key_N), [this] { newChat(); });
  add(tr("&Rename…"), "renameChatAction", QKeySequence(Qt::Key_F2), &MainWindow::renameCurrentChat);
  add(tr("D&uplicate"), "duplicateChatAction", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D), [this] { duplicateChat(m_current); });
  m_pinAction = add(tr("&Pin to the top"), "pinChatAction", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P),
                    [this] { setChatPinned(m_current, !m_list->isPinned(m_current)); });
  m_pinAction->setCheckable(true);
  // Delete: the key acts in the list only (in the input it deletes text); the menu shows it.
  QAction* del = add(tr("&Delete…"), "deleteChatAction", QKeySequence(Qt::Key_Delete), [this] { deleteChat(m_current); });
  del->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  m_list->addAction(del);
  m_chatMenu->addSeparator();
  add(tr("&Fork at the latest message"), "forkAction", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F), &MainWindow::forkCurrentAtLatest);
  add(tr("Re&generate the last reply"), "regenerateAction", QKeySequence(Qt::CTRL | Qt::Key_R), &MainWindow::regenerate);
  add(tr("&Copy the last reply"), "copyAction", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C), &MainWindow::copyLastReply);
  add(tr("&Stop the reply"), "stopAction", QKeySequence(Qt::Key_Escape), &MainWindow::stop);
  add(tr("Sa&mpling settings of this chat…"), "chatSamplingAction", QKeySequence(), &MainWindow::showChatSampling);
  QMenu* runOn = m_chatMenu->addMenu(tr("R&un this chat on"));
  runOn->setObjectName(QStringLiteral("runOnMenu"));
  connect(runOn, &QMenu::aboutToShow, this, [this, runOn] { fillRunOnMenu(runOn); });
  m_chatMenu->addSeparator();
  QAction* search = add(tr("&Search chats…"), "searchAction", QKeySequence(Qt::CTRL | Qt::Key_F), &MainWindow::showSearch);
  search->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_F), QKeySequence(Qt::CTRL | Qt::Key_K)});
  add(tr("&Export…"), "exportChatAction", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E), [this] {
    const ChatRecord* r = chat(m_current);
    if (!r) return;
    QString name = r->title;
    name.replace(QRegularExpression(QStringLiteral("[^\\w\\- ]+")), QStringLiteral("_"));
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    const QString path = QFileDialog::getSaveFileName(this, tr("Export chat"), dir + QLatin1Char('/') + name.left(60) + QStringLiteral(".md"),
                                                      tr("Markdown (*.md);;PagedChat chat (*.json)"));
    if (!path.isEmpty()) exportChat(m_current, path);
  });
  add(tr("&Import…"), "importChatAction", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_I), [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Import chat"), QString(), tr("PagedChat chat (*.json)"));
    if (!path.isEmpty()) importChat(path);
  });
  connect(m_chatMenu, &QMenu::aboutToShow, this, [this] {
    const QSignalBlocker block(m_pinAction);
    m_pinAction->setChecked(m_list->isPinned(m_current));
  });
}

void MainWindow::buildViewMenu() {
  m_viewMenu = menuBar()->addMenu(tr("&View"));
  m_viewMenu->setObjectName(QStringLiteral("viewMenu"));
  // Docks and the toolbar come back from here once closed.
  for (QDockWidget* dock : findChildren<QDockWidget*>()) m_viewMenu->addAction(dock->toggleViewAction());
  for (QToolBar* bar : findChildren<QToolBar*>()) m_viewMenu->addAction(bar->toggleViewAction());
  QMenu* watch = m_viewMenu->addMenu(tr("&Watch a remote pool"));
  watch->setObjectName(QStringLiteral("watchPoolMenu"));
  connect(watch, &QMenu::aboutToShow, this, [this, watch] { fillWatchPoolMenu(watch); });
  m_viewMenu->addSeparator();
  QMenu* theme = m_viewMenu->addMenu(tr("&Theme"));
  auto* themes = new QActionGroup(theme);
  const ThemeChoice current = themeChoiceFromName(m_db->setting(kThemeKey));
  for (const auto& [choice, text] : {std::pair{ThemeChoice::system, tr("Follow the &system")}, std::pair{ThemeChoice::light, tr("&Light")},
                                     std::pair{ThemeChoice::dark, tr("&Dark")}}) {
    QAction* a = theme->addAction(text);
    a->setObjectName(QStringLiteral("theme_%1").arg(themeChoiceName(choice)));
    a->setCheckable(true);
    a->setChecked(choice == current);
    themes->addAction(a);
    connect(a, &QAction::triggered, this, [this, choice] { setTheme(choice); });
  }
  QMenu* sort = m_viewMenu->addMenu(tr("&Sort chats by"));
  auto* group = new QActionGroup(sort);
  const std::pair<ChatListWidget::Order, QString> orders[] = {{ChatListWidget::Order::recent, tr("Recent activity")},
                                                               {ChatListWidget::Order::created, tr("Creation")},
                                                               {ChatListWidget::Order::title, tr("Title")}};
  const char* keys[] = {"recent", "created", "title"};
  for (int i = 0; i < 3; ++i) {
    QAction* a = sort->addAction(orders[i].second);
    a->setObjectName(QStringLiteral("sortBy_%1").arg(QLatin1String(keys[i])));
    a->setCheckable(true);
    a->setChecked(m_list->order() == orders[i].first);
    group->addAction(a);
    connect(a, &QAction::triggered, this, [this, order = orders[i].first, key = QString::fromLatin1(keys[i])] {
      m_list->setOrder(order);
      m_db->setSetting(kListOrderKey, key);
    });
  }
}

void MainWindow::applySavedTheme() {
  const ThemeChoice saved = themeChoiceFromName(m_db->setting(kThemeKey));
  if (saved != ThemeChoice::system) applyTheme(saved);
}

void MainWindow::setTheme(ThemeChoice choice) {
  applyTheme(choice);
  m_db->setSetting(kThemeKey, themeChoiceName(choice));
  if (auto* a = findChild<QAction*>(QStringLiteral("theme_%1").arg(themeChoiceName(choice)))) a->setChecked(true);
}

void MainWindow::changeEvent(QEvent* event) {
  QMainWindow::changeEvent(event);
  // Our drawn icons take the new palette's colours (the transcript and the pool view redraw themselves).
  if (event->type() == QEvent::PaletteChange && m_send) refreshIcons();
}

void MainWindow::buildHelpMenu() {
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  QAction* info = help->addAction(tr("&Model information"), this, &MainWindow::showModelInfo);
  info->setObjectName(QStringLiteral("modelInfoAction"));
  info->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_I));
  help->addAction(tr("&Keyboard shortcuts"), this, &MainWindow::showShortcuts)->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Slash));
  help->addAction(tr("&About PagedChat"), this, &MainWindow::showAbout);
}

void MainWindow::showShortcuts() {
  auto* dialog = new QDialog(this);
  dialog->setObjectName(QStringLiteral("shortcutsDialog"));
  dialog->setWindowTitle(tr("Keyboard shortcuts"));
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  auto* table = new QTableWidget(dialog);
  table->setColumnCount(2);
  table->setHorizontalHeaderLabels({tr("Action"), tr("Keys")});
  table->verticalHeader()->hide();
  table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  // Every action the window has with keys, as it has them (so the list cannot go stale), then
  // the keys that are not actions.
  QVector<std::pair<QString, QString>> rows;
  for (const QAction* a : findChildren<QAction*>()) {
    if (a->shortcuts().isEmpty() || a->text().isEmpty()) continue;
    QStringList keys;
    for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
    QString text = a->text().remove(QLatin1Char('&'));
    if (text.endsWith(QStringLiteral("…"))) text.chop(1);
    rows.append({text, keys.join(tr(" or "))});
  }
  rows.append({tr("Leave the message input (and come back)"), tr("Tab, Shift+Tab")});
  rows.append({tr("Rename the chat in the list"), tr("double-click")});
  rows.append({tr("Clear the search"), tr("Esc in the search box")});
  table->setRowCount(static_cast<int>(rows.size()));
  for (int i = 0; i < rows.size(); ++i) {
    table->setItem(i, 0, new QTableWidgetItem(rows[i].first));
    table->setItem(i, 1, new QTableWidgetItem(rows[i].second));
  }
  table->resizeColumnToContents(1);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
  connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::reject);
  auto* v = new QVBoxLayout(dialog);
  v->addWidget(table);
  v->addWidget(buttons);
  dialog->resize(520, 560);
  dialog->open();
}

void MainWindow::showModelInfo() {
  if (m_session.modelInfo().isEmpty()) {
    showError(QStringLiteral("modelInfoError"), tr("No model is loaded yet."), QString());
    return;
  }
  auto* dialog = new ModelInfoDialog(m_session.modelInfo(), this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->open();
}

void MainWindow::showAbout() {
  QMessageBox::about(this, tr("About PagedChat"),
                     tr("<b>PagedChat %1</b><p>Chat with local language models on an engine of its own: a paged KV "
                        "cache, shared prefixes, forks with copy-on-write, continuous batching, and a live view of "
                        "the KV block pool.</p><p>Qt %2</p>")
                         .arg(QApplication::applicationVersion(), QString::fromLatin1(qVersion())));
}

void MainWindow::renameCurrentChat() {
  if (auto* dock = findChild<QDockWidget*>(QStringLiteral("chatsDock"))) dock->show();
  m_search->clear();  // the list, not the results, holds the editor
  m_list->setFocus();
  m_list->renameCurrent();
}

bool MainWindow::renameChat(ChatId id, const QString& title) { return m_chats->rename(id, title); }

void MainWindow::deleteChat(ChatId id) {
  const ChatController::Chat* c = m_chats->chat(id);
  if (!c) return;
  int forks = 0;
  for (const auto& [other, o] : m_chats->chats()) forks += o.record.parentId == id ? 1 : 0;
  QString text = tr("Delete “%1”?").arg(c->record.title.toHtmlEscaped());
  const auto numMessages = c->record.messages.size();
  QString detail = numMessages == 1 ? tr("Its 1 message is deleted from disk and the KV blocks it holds are freed.")
                                    : tr("Its %1 messages are deleted from disk and the KV blocks it holds are freed.").arg(numMessages);
  if (c->replying) detail += QLatin1Char(' ') + tr("Its reply in flight stops.");
  if (forks > 0)
    detail += QLatin1Char(' ') + (forks == 1 ? tr("Its fork stays, as a chat of its own.") : tr("Its %1 forks stay, as chats of their own.").arg(forks));
  auto* box = new QMessageBox(QMessageBox::Question, tr("Delete chat"), text, QMessageBox::Yes | QMessageBox::Cancel, this);
  box->setObjectName(QStringLiteral("confirmDelete"));
  box->setInformativeText(detail);
  box->setDefaultButton(QMessageBox::Cancel);
  box->button(QMessageBox::Yes)->setText(tr("Delete"));
  box->setAttribute(Qt::WA_DeleteOnClose);
  connect(box, &QMessageBox::finished, this, [this, id](int result) {
    if (result == QMessageBox::Yes) m_chats->remove(id);
  });
  box->open();
}

void MainWindow::onChatRemoved(ChatId id, const QVector<ChatId>& /*orphans: the list moves them itself*/) {
  const QVector<ChatId> shown = m_list->orderShown();
  const int at = static_cast<int>(shown.indexOf(id));
  m_list->removeChat(id);
  m_drafts.remove(id);
  m_chatStatus.remove(id);
  if (m_listStack->currentWidget() == m_searchResults) runSearch();
  if (id != m_current) return;
  // The chat that took its place in the list, else the one before it, else a new one.
  const QVector<ChatId> left = m_list->orderShown();
  m_current = -1;  // gone: nothing of it is kept as a draft
  if (left.isEmpty()) newChat();
  else selectChat(left[std::clamp(at, 0, static_cast<int>(left.size()) - 1)]);
}

ChatId MainWindow::duplicateChat(ChatId id) {
  const ChatId copy = m_chats->duplicate(id);
  if (copy < 0) {
    if (m_chats->chat(id)) setChatStatus(id, tr("A chat can be duplicated once its reply has ended (and a compare is picked)."));
    return -1;
  }
  selectChat(copy);
  return copy;
}

void MainWindow::setChatPinned(ChatId id, bool pinned) { m_chats->setPinned(id, pinned); }

bool MainWindow::exportChat(ChatId id, const QString& path) {
  const ChatRecord* r = chat(id);
  if (!r) return false;
  const bool markdown = path.endsWith(QStringLiteral(".md"), Qt::CaseInsensitive) ||
                        path.endsWith(QStringLiteral(".markdown"), Qt::CaseInsensitive);
  const QByteArray bytes = markdown ? chatToMarkdown(*r, m_chats->sharedSystemPrompt()).toUtf8()
                                    : chatToJson(*r, m_chats->sharedSystemPrompt(), m_session.settings().sampling);
  QSaveFile file(path);  // all of it or, on failure, the file as it was
  if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit()) {
    showError(QStringLiteral("exportError"), tr("The chat could not be exported to %1.").arg(path), file.errorString());
    return false;
  }
  setChatStatus(id, tr("Exported to %1").arg(path));
  return true;
}

ChatId MainWindow::importChat(const QString& path) {
  QFile file(path);
  QString error;
  std::optional<ChatRecord> record;
  if (!file.open(QIODevice::ReadOnly)) error = file.errorString();
  else if (file.size() > kMaxChatImportBytes) error = tr("the file is larger than a chat export can be (64 MiB)");
  else record = chatFromJson(file.readAll(), &error);
  if (!record) {
    showError(QStringLiteral("importError"), tr("%1 could not be imported.").arg(path), error);
    return -1;
  }
  const ChatId id = m_chats->importChat(std::move(*record));
  selectChat(id);
  setChatStatus(id, tr("Imported from %1").arg(path));
  return id;
}

// One plain sentence, the technical detail behind "Show Details…".
void MainWindow::showError(const QString& objectName, const QString& sentence, const QString& detail) {
  auto* box = new QMessageBox(QMessageBox::Warning, windowTitle(), sentence, QMessageBox::Ok, this);
  box->setObjectName(objectName);
  if (!detail.isEmpty()) box->setDetailedText(detail);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

void MainWindow::setChatStatus(ChatId id, const QString& text) {
  m_chatStatus[id] = text;
  if (id == m_current) m_status->setText(text);
}
