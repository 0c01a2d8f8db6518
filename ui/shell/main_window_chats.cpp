// The main window's chat management: the Chat menu (also the list's context menu: rename,
// duplicate, pin, delete, export, import, search), the View and Help menus, and the per-chat
// status line.
#include "ui/shell/main_window.h"
#include "ui/shell/api_server_switch.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QDialog>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QRegularExpression>
#include <QStandardPaths>

#include <algorithm>

#include "appcore/chat/chat_database.h"
#include "ui/dialogs/model_info_dialog.h"
#include "ui/theme/app_theme.h"
#include "appcore/chat/chat_export.h"
#include "ui/chat_list/chat_list_widget.h"
#include "ui/chat/chat_panel.h"
#include "ui/chat_list/chat_list_panel.h"
#include "ui/dialogs/shortcuts_dialog.h"
#include "ui/remote/remote_menus.h"

namespace {
const QString kThemeKey = QStringLiteral("ui/theme");              // "system", "light" or "dark"
const QString kChatFolderKey = QStringLiteral("ui/chat_folder");   // where chats were exported or imported last
}  // namespace

// Where Export and Import open: the folder used last, else Documents (not the working folder).
QString MainWindow::chatFolder() const {
  const QString last = m_db->setting(kChatFolderKey);
  return !last.isEmpty() && QFileInfo(last).isDir() ? last : QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
}

void MainWindow::setChatFolder(const QString& file) { m_db->setSetting(kChatFolderKey, QFileInfo(file).absolutePath()); }

void MainWindow::showSearch() {
  if (auto* dock = findChild<QDockWidget*>(QStringLiteral("chatsDock"))) dock->show();
  m_chatList->focusSearch();
}

void MainWindow::openSearchResult(ChatId chat, int message) {
  if (!m_chats->chat(chat)) return;
  selectChat(chat);
  if (message >= 0) m_chatPanel->revealMessage(message, m_chatList->searchWords());
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
  add(tr("D&uplicate"), "duplicateChatAction", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D), [this] { duplicateChat(currentChat()); });
  m_pinAction = add(tr("&Pin to the top"), "pinChatAction", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P),
                    [this] { m_chats->setPinned(currentChat(), !m_chatList->list()->isPinned(currentChat())); });
  m_pinAction->setCheckable(true);
  // Delete: the key acts in the list only (in the input it deletes text); the menu shows it.
  QAction* del = add(tr("&Delete"), "deleteChatAction", QKeySequence(Qt::Key_Delete), [this] { deleteChat(currentChat()); });
  del->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  m_chatList->list()->addAction(del);
  m_chatMenu->addSeparator();
  add(tr("&Fork at the latest message"), "forkAction", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F), &MainWindow::forkCurrentAtLatest);
  add(tr("Re&generate the last reply"), "regenerateAction", QKeySequence(Qt::CTRL | Qt::Key_R), [this] { m_chatPanel->regenerate(); });
  add(tr("&Copy the last reply"), "copyAction", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C), [this] { m_chatPanel->copyLastReply(); });
  add(tr("&Stop the reply"), "stopAction", QKeySequence(Qt::Key_Escape), [this] { m_chatPanel->stop(); });
  add(tr("Sa&mpling settings of this chat…"), "chatSamplingAction", QKeySequence(), &MainWindow::showChatSampling);
  m_remoteMenus->addRunOnMenu(m_chatMenu);
  m_chatMenu->addSeparator();
  QAction* search = add(tr("&Search chats…"), "searchAction", QKeySequence(Qt::CTRL | Qt::Key_F), &MainWindow::showSearch);
  search->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_F), QKeySequence(Qt::CTRL | Qt::Key_K)});
  add(tr("&Export…"), "exportChatAction", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E), [this] {
    const ChatRecord* r = chat(currentChat());
    if (!r) return;
    QString name = r->title;
    name.replace(QRegularExpression(QStringLiteral("[^\\w\\- ]+")), QStringLiteral("_"));
    const QString path = QFileDialog::getSaveFileName(this, tr("Export chat"), chatFolder() + QLatin1Char('/') + name.left(60) + QStringLiteral(".md"),
                                                      tr("Markdown (*.md);;PagedChat chat (*.json)"));
    if (!path.isEmpty() && exportChat(r->id, path)) setChatFolder(path);
  });
  add(tr("&Import…"), "importChatAction", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_I), [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Import chat"), chatFolder(), tr("PagedChat chat (*.json)"));
    if (!path.isEmpty() && importChat(path) >= 0) setChatFolder(path);
  });
  connect(m_chatMenu, &QMenu::aboutToShow, this, [this] {
    const QSignalBlocker block(m_pinAction);
    m_pinAction->setChecked(m_chatList->list()->isPinned(currentChat()));
  });
}

void MainWindow::buildViewMenu() {
  m_viewMenu = menuBar()->addMenu(tr("&View"));
  m_viewMenu->setObjectName(QStringLiteral("viewMenu"));
  // Docks come back from here once closed.
  for (QDockWidget* dock : findChildren<QDockWidget*>()) m_viewMenu->addAction(dock->toggleViewAction());
  m_remoteMenus->addWatchPoolMenu(m_viewMenu);
#ifdef PAGEDCHAT_HAVE_SERVER
  m_viewMenu->addAction(tr("API &request log"), m_api, &ApiServerSwitch::showRequestLog);
#endif
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
  m_chatList->addSortMenu(m_viewMenu);
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

void MainWindow::buildHelpMenu() {
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  QAction* info = help->addAction(tr("&Model information"), this, &MainWindow::showModelInfo);
  info->setObjectName(QStringLiteral("modelInfoAction"));
  info->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_I));
  help->addAction(tr("&Keyboard shortcuts"), this, &MainWindow::showShortcuts)->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Slash));
  help->addAction(tr("&About PagedChat"), this, &MainWindow::showAbout);
}

void MainWindow::showShortcuts() {
  auto* dialog = new ShortcutsDialog(findChildren<QAction*>(), this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
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
  m_chatList->clearSearch();  // the list, not the results, holds the editor
  m_chatList->list()->setFocus();
  m_chatList->list()->renameCurrent();
}

bool MainWindow::renameChat(ChatId id, const QString& title) { return m_chats->rename(id, title); }

void MainWindow::deleteChat(ChatId id) {
  m_chatList->deleteWithUndo(id);
}

// The chat shown was deleted: the chat that took its place in the list, else a new one.
void MainWindow::onChatRemoved(ChatId id, ChatId next) {
  m_chatStatus.remove(id);
  const bool shown = id == currentChat();
  m_chatPanel->forgetChat(id);
  if (!shown) return;
  // Not newChat(): a lesson's chats going as its next scene is set up must not end that lesson.
  selectChat(next >= 0 ? next : m_chats->create());
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

bool MainWindow::exportChat(ChatId id, const QString& path) {
  const ChatRecord* r = chat(id);
  if (!r) return false;
  QString error;
  if (!writeChatFile(path, *r, m_chats->sharedSystemPrompt(), m_session.settings().sampling, &error)) {
    showError(QStringLiteral("exportError"), tr("The chat could not be exported to %1.").arg(path), error);
    return false;
  }
  setChatStatus(id, tr("Exported to %1").arg(path));
  return true;
}

ChatId MainWindow::importChat(const QString& path) {
  QString error;
  std::optional<ChatRecord> record = readChatFile(path, &error);
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
  if (id == currentChat()) m_status->setText(text);
}
