// The chat list grouped by date, as the chat apps people know list theirs: sorted by recent
// activity, a heading over the first chat of each group (Pinned, Today, Yesterday, Previous 7
// days, Previous 30 days, then each month), drawn in the row above the chat; other orders head
// only the pinned chats and the others. Rows have room around them. The widget alone, no engine.

#include <QtTest>

#include "ui/chat_list/chat_list_widget.h"

namespace {

ChatRecord chatActive(ChatId id, const QDateTime& when, bool pinned = false) {
  ChatRecord r;
  r.id = id;
  r.title = QStringLiteral("chat %1").arg(id);
  r.lastActive = when.toMSecsSinceEpoch();
  r.pinned = pinned;
  return r;
}

}  // namespace

class TestChatListGroups : public QObject {
  Q_OBJECT

 private slots:
  void theDateGroupsFollowTheCalendar() {
    const QDateTime now(QDate(2026, 12, 6), QTime(9, 30));
    const auto groupOf = [&](int daysAgo, QTime at = QTime(12, 0)) {
      return ChatListWidget::dateGroup(QDateTime(now.date().addDays(-daysAgo), at), now);
    };
    QCOMPARE(groupOf(0, QTime(0, 1)), QStringLiteral("Today"));
    QCOMPARE(ChatListWidget::dateGroup(now.addSecs(3600), now), QStringLiteral("Today"));  // a clock set back
    QCOMPARE(groupOf(1, QTime(23, 59)), QStringLiteral("Yesterday"));
    QCOMPARE(groupOf(2), QStringLiteral("Previous 7 days"));
    QCOMPARE(groupOf(6), QStringLiteral("Previous 7 days"));
    QCOMPARE(groupOf(7), QStringLiteral("Previous 30 days"));
    QCOMPARE(groupOf(29), QStringLiteral("Previous 30 days"));
    QCOMPARE(groupOf(30), QLocale().toString(QDate(2026, 11, 6), QStringLiteral("MMMM yyyy")));
    QCOMPARE(groupOf(400), QLocale().toString(QDate(2025, 11, 1), QStringLiteral("MMMM yyyy")));
  }

  void aHeadingOverTheFirstChatOfEachGroup() {
    ChatListWidget list;
    list.resize(300, 600);
    const QDateTime now = QDateTime::currentDateTime();
    // Added in id order, as a start restores them: the list sorts them by activity.
    list.addChat(chatActive(1, now.addDays(-400)), {});
    list.addChat(chatActive(2, now.addDays(-10)), {});
    list.addChat(chatActive(3, now.addDays(-1)), {});
    list.addChat(chatActive(4, now.addMSecs(-2)), {});
    list.addChat(chatActive(5, now.addMSecs(-1)), {});
    list.addChat(chatActive(6, now.addDays(-3)), {});
    list.addChat(chatActive(7, now.addDays(-20), true), {});
    ChatRecord fork = chatActive(8, now.addDays(-400));
    fork.parentId = 1;
    fork.forkedAtMessage = 0;
    list.addChat(fork, QStringLiteral("chat 1"));
    list.show();
    QVERIFY(QTest::qWaitForWindowExposed(&list));
    QCOMPARE(list.orderShown(), (QVector<ChatId>{7, 5, 4, 3, 6, 2, 1, 8}));
    const QStringList headings = [&] {
      QStringList out;
      for (ChatId id : list.orderShown()) out << list.headingAbove(id);
      return out;
    }();
    QCOMPARE(headings, (QStringList{QStringLiteral("Pinned"), QStringLiteral("Today"), QString(), QStringLiteral("Yesterday"),
                                    QStringLiteral("Previous 7 days"), QStringLiteral("Previous 30 days"),
                                    ChatListWidget::dateGroup(now.addDays(-400), now), QString()}));
    // The heading takes room in its row, over the chat: a headed row is taller than a plain one,
    // and every row has some room around its text.
    const int headed = list.visualItemRect(list.item(5)).height(), plain = list.visualItemRect(list.item(4)).height();
    QVERIFY2(headed > plain + list.fontMetrics().height() / 2, qPrintable(QStringLiteral("%1 vs %2").arg(headed).arg(plain)));
    QVERIFY(plain >= list.fontMetrics().height() + 6);
    if (qEnvironmentVariableIsSet("PAGEDCHAT_GRAB")) {  // a picture to look at
      list.select(5);
      list.grab().save(qEnvironmentVariable("PAGEDCHAT_GRAB"));
    }

    // A chat used now moves to Today, and the groups follow.
    list.setLastActive(2, now.toMSecsSinceEpoch());
    QCOMPARE(list.orderShown().mid(0, 2), (QVector<ChatId>{7, 2}));
    QCOMPARE(list.headingAbove(2), QStringLiteral("Today"));
    QCOMPARE(list.headingAbove(5), QString());
    // Unpinned, the pinned chat joins its date's group; no "Pinned" heading is left.
    list.setPinned(7, false);
    QCOMPARE(list.headingAbove(2), QStringLiteral("Today"));
    QCOMPARE(list.headingAbove(7), QStringLiteral("Previous 30 days"));

    // By title or creation, only the pinned chats are headed, over the others.
    list.setPinned(3, true);
    list.setOrder(ChatListWidget::Order::title);
    QCOMPARE(list.orderShown().first(), ChatId{3});
    QCOMPARE(list.headingAbove(3), QStringLiteral("Pinned"));
    QCOMPARE(list.headingAbove(list.orderShown()[1]), QStringLiteral("Other chats"));
    for (ChatId id : list.orderShown().mid(2)) QCOMPARE(list.headingAbove(id), QString());
    list.setPinned(3, false);
    for (ChatId id : list.orderShown()) QCOMPARE(list.headingAbove(id), QString());
  }
};

QTEST_MAIN(TestChatListGroups)
#include "test_chat_list_groups.moc"
