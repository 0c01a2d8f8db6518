// The chat list with its search box and the New chat button.
#include "ui/chat_list/chat_list_panel.h"

#include <QActionGroup>
#include <QKeyEvent>
#include <QMenu>
#include <QLineEdit>
#include <QPushButton>
#include <QStackedWidget>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>

#include "appcore/chat/chat_database.h"
#include "appcore/session/chat_controller.h"
#include "ui/chat_list/chat_search_results.h"
#include "ui/chat_list/undo_delete_bar.h"

namespace {
const QString kListOrderKey = QStringLiteral("chat_list_order");  // "recent", "created" or "title"
constexpr int kSearchDelayMs = 150;                               // searches once typing pauses this long

QString orderName(ChatListWidget::Order order) {
  switch (order) {
    case ChatListWidget::Order::created: return QStringLiteral("created");
    case ChatListWidget::Order::title: return QStringLiteral("title");
    case ChatListWidget::Order::recent: break;
  }
  return QStringLiteral("recent");
}
}  // namespace

ChatListPanel::ChatListPanel(ChatController& chats, ChatDatabase& db, QWidget* parent) : QWidget(parent), m_chats(chats), m_db(db) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  auto* newButton = new QPushButton(tr("New chat"), this);
  newButton->setObjectName(QStringLiteral("newChat"));
  connect(newButton, &QPushButton::clicked, this, &ChatListPanel::newChatRequested);
  v->addWidget(newButton);
  m_search = new QLineEdit(this);
  m_search->setObjectName(QStringLiteral("searchChats"));
  m_search->setPlaceholderText(tr("Search chats (Ctrl+F)"));
  m_search->setClearButtonEnabled(true);
  m_search->setToolTip(tr("Titles and message text; each word as the start of a word, case and accents ignored. Enter "
                          "opens the first result, Esc clears."));
  v->addWidget(m_search);
  m_listStack = new QStackedWidget(this);
  m_list = new ChatListWidget(m_listStack);
  m_searchResults = new ChatSearchResults(m_listStack);
  m_listStack->addWidget(m_list);
  m_listStack->addWidget(m_searchResults);
  v->addWidget(m_listStack, 1);
  m_undoDelete = new UndoDeleteBar(this);
  v->addWidget(m_undoDelete);
  connect(m_undoDelete, &UndoDeleteBar::undoRequested, this, [this](ChatId id) {
    if (!m_chats.restoreRemoved(id)) return;
    m_list->select(id);
    m_list->setFocus();  // where the delete was pressed, not the system prompt box below
  });

  const QString order = m_db.setting(kListOrderKey, QStringLiteral("recent"));
  for (auto o : {ChatListWidget::Order::recent, ChatListWidget::Order::created, ChatListWidget::Order::title})
    if (orderName(o) == order) m_list->setOrder(o);
  connect(m_list, &ChatListWidget::chatSelected, this, &ChatListPanel::chatSelected);
  connect(m_list, &ChatListWidget::renamed, this, [this](ChatId id, const QString& title) { m_chats.rename(id, title); });
  connect(m_list, &ChatListWidget::contextMenuRequested, this, [this](ChatId, const QPoint& at) { emit contextMenuRequested(at); });

  m_searchTimer.setSingleShot(true);
  m_searchTimer.setInterval(kSearchDelayMs);
  connect(&m_searchTimer, &QTimer::timeout, this, &ChatListPanel::runSearch);
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
    if (first.chat >= 0) emit searchResultOpened(first.chat, first.message);
  });
  connect(m_searchResults, &ChatSearchResults::resultActivated, this, &ChatListPanel::searchResultOpened);
  // Esc in the box clears it; Down goes to the results.
  m_search->installEventFilter(this);
  connectChats();
}

// The list mirrors the controller's chats.
void ChatListPanel::connectChats() {
  connect(&m_chats, &ChatController::chatAdded, this, &ChatListPanel::addChat);
  connect(&m_chats, &ChatController::titleChanged, m_list, &ChatListWidget::setTitle);
  connect(&m_chats, &ChatController::replyingChanged, m_list, &ChatListWidget::setReplying);
  connect(&m_chats, &ChatController::pinnedChanged, m_list, &ChatListWidget::setPinned);
  connect(&m_chats, &ChatController::activityChanged, this, [this](ChatId id) {
    if (const ChatController::Chat* c = m_chats.chat(id)) m_list->setLastActive(id, c->record.lastActive);
  });
  connect(&m_chats, &ChatController::engineChanged, this, [this](ChatId id, const RemoteEngineChoice& engine) {
    m_list->setRemoteHost(id, engine.isSet() ? QUrl(engine.url).authority() : QString());
  });
  connect(&m_chats, &ChatController::chatRemoved, this, &ChatListPanel::removeChat);
}

void ChatListPanel::deleteWithUndo(ChatId id) {
  const QString sentence = UndoDeleteBar::sentence(m_chats, id);
  if (m_chats.remove(id)) m_undoDelete->offer(id, sentence);
}

void ChatListPanel::addChat(ChatId id) {
  const ChatRecord& r = m_chats.chat(id)->record;
  const ChatController::Chat* parent = m_chats.chat(r.parentId);
  m_list->addChat(r, parent ? parent->record.title : tr("a deleted chat"));
  if (r.remote.isSet()) m_list->setRemoteHost(id, QUrl(r.remote.url).authority());
}

// Its forks stay: the list moves them to the top level itself.
void ChatListPanel::removeChat(ChatId id) {
  const int at = static_cast<int>(m_list->orderShown().indexOf(id));
  m_list->removeChat(id);
  if (m_listStack->currentWidget() == m_searchResults) runSearch();
  const QVector<ChatId> left = m_list->orderShown();
  emit chatRemoved(id, left.isEmpty() ? -1 : left[std::clamp(at, 0, static_cast<int>(left.size()) - 1)]);
}

void ChatListPanel::setOrder(ChatListWidget::Order order) {
  m_list->setOrder(order);
  m_db.setSetting(kListOrderKey, orderName(order));
}

void ChatListPanel::addSortMenu(QMenu* menu) {
  QMenu* sort = menu->addMenu(tr("&Sort chats by"));
  auto* group = new QActionGroup(sort);
  const std::pair<ChatListWidget::Order, QString> orders[] = {{ChatListWidget::Order::recent, tr("Recent activity")},
                                                               {ChatListWidget::Order::created, tr("Creation")},
                                                               {ChatListWidget::Order::title, tr("Title")}};
  for (const auto& [order, text] : orders) {
    QAction* a = sort->addAction(text);
    a->setObjectName(QStringLiteral("sortBy_%1").arg(orderName(order)));
    a->setCheckable(true);
    a->setChecked(m_list->order() == order);
    group->addAction(a);
    connect(a, &QAction::triggered, this, [this, order] { setOrder(order); });
  }
}

void ChatListPanel::runSearch() {
  m_searchTimer.stop();
  const QString words = m_search->text().trimmed();
  if (words.isEmpty()) return;
  QString error;
  const QVector<ChatController::SearchResult> results = m_chats.search(words, &error);
  m_searchResults->showResults(results, [this](ChatId id) { return m_list->title(id); }, error);
  m_listStack->setCurrentWidget(m_searchResults);
}

void ChatListPanel::focusSearch() {
  m_search->setFocus();
  m_search->selectAll();
}

void ChatListPanel::clearSearch() { m_search->clear(); }

QStringList ChatListPanel::searchWords() const { return m_search->text().split(QLatin1Char(' '), Qt::SkipEmptyParts); }

bool ChatListPanel::eventFilter(QObject* watched, QEvent* event) {
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
  return QWidget::eventFilter(watched, event);
}
