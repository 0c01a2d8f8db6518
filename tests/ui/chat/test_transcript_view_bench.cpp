// How long TranscriptView::showChat takes on a long chat (200 messages of ~500 characters of
// Markdown): a QBENCHMARK, not a timed assert. While a reply streams the main window calls it
// ~30 times a second, so a tick must stay well under 33 ms. Two cases: a full render (another
// chat was shown before), and a streaming tick (one more token on the last reply).

#include <QtTest>

#include "ui/chat/transcript_view.h"

namespace {
// ~500 characters each: the user's prose, the assistant's prose with emphasis, a list and code.
ChatRecord longChat(ChatId id, int numMessages) {
  const QString user = QStringLiteral(
      "I have a question about paged attention. When a sequence is forked, the child gets a copy of the "
      "parent's block table and every block's reference count goes up, including the partial last block. "
      "What happens on the first write into a shared block, and how does the prefix cache decide whether "
      "a full block can be reused by a new prompt? Also, what is evicted first under memory pressure: "
      "parked sequences or cached blocks? Please keep the answer short and give a small code example "
      "of the block table lookup.");
  const QString assistant = QStringLiteral(
      "On the first write into a block with **ref count > 1**, the engine copies it to a fresh block "
      "(*copy-on-write*) and points the child's table at the copy.\n\n"
      "- full blocks are matched by `hash(parent, tokens)`\n"
      "- parked sequences are released before cached blocks are evicted\n\n"
      "```cpp\nint32_t physical = block_table[pos / block_size];\nint32_t slot = physical * block_size + pos % block_size;\n```\n\n"
      "See [the design](https://example.com/design) for the rest.");
  ChatRecord chat;
  chat.id = id;
  for (int i = 0; i < numMessages; ++i) {
    MessageRecord m{i % 2 == 0 ? QStringLiteral("user") : QStringLiteral("assistant"), i % 2 == 0 ? user : assistant, {}};
    if (i % 2 == 1) {
      m.metrics.numTokens = 120;
      m.metrics.tokensPerSecond = 35.5;
      m.metrics.finishReason = QStringLiteral("stop");
    }
    chat.messages.append(m);
  }
  return chat;
}
}  // namespace

class TestTranscriptViewBench : public QObject {
  Q_OBJECT

 private slots:
  void fullRender() {
    TranscriptView view;
    view.resize(800, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const ChatRecord a = longChat(1, 200), b = longChat(2, 200);
    bool flip = false;
    QBENCHMARK {
      view.showChat(flip ? a : b, false);
      flip = !flip;
      QCoreApplication::processEvents();  // layout and paint, as in the app
    }
    QVERIFY(view.toPlainText().count(QStringLiteral("Assistant")) == 100);
  }

  void streamingTick() {
    TranscriptView view;
    view.resize(800, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    ChatRecord chat = longChat(1, 200);
    chat.messages.last().metrics = {};
    chat.messages.last().content.clear();
    view.showChat(chat, true);
    QCoreApplication::processEvents();
    const QString reply = longChat(1, 2).messages[1].content;
    int n = 0;
    QBENCHMARK {
      n = n % reply.size() + 1;
      chat.messages.last().content = reply.left(n);
      view.showChat(chat, true);
      QCoreApplication::processEvents();
    }
  }
};

QTEST_MAIN(TestTranscriptViewBench)
#include "test_transcript_view_bench.moc"
