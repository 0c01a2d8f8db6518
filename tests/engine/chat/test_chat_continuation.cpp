// chat_continuation: the text a parked chat lacks for its next turn is exactly the tail of the
// whole chat's rendering, for every template that renders a past reply as it was generated,
// and there is none when the chat does not extend the held one or the template rewrites it.

#include <QtTest>

#include "engine/chat/chat_continuation.h"
#include "engine/gguf/gguf_file.h"
#include "support/gguf_builder.h"

using namespace pagedchat;

class TestChatContinuation : public QObject {
  Q_OBJECT
  const std::vector<ChatMessage> held_ = {{"user", "Hi"}, {"assistant", "Hello!"}};
  const std::vector<ChatMessage> next_ = {{"user", "Hi"}, {"assistant", "Hello!"}, {"user", "And you?"}};

 private slots:
  void chatmlAppendsTheEndOfTheReplyAndTheNewTurn() {
    auto text = chat_continuation(ChatTemplate::chatml(), held_, next_);
    QVERIFY(text);
    QCOMPARE(QString::fromStdString(text->str()),
             QStringLiteral("<|im_end|>\n<|im_start|>user\nAnd you?<|im_end|>\n<|im_start|>assistant\n"));
    // The held prompt, the reply and the continuation read as the whole chat.
    PromptText whole = ChatTemplate::chatml().apply({held_[0]}, true);
    whole.text("Hello!").append(*text);
    QCOMPARE(whole, ChatTemplate::chatml().apply(next_, true));
    // Only the template's markers are markup: the new message is text.
    QCOMPARE(text->markup_spans().size(), size_t{2});
  }

  // Phi-3's template (markers <|user|>, <|assistant|>, <|end|>, as in microsoft/Phi-3-mini-4k-instruct's
  // tokenizer_config.json) is recognised; a turn appended to a held reply is the rendering's tail.
  void phi3TemplateIsRecognisedAndContinues() {
    test::GgufBuilder b;
    b.add_string("general.architecture", "phi3");
    b.add_string("tokenizer.chat_template",
                 "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n' + message['content'] + "
                 "'<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}"
                 "{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}"
                 "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}");
    const std::vector<uint8_t> bytes = b.build();
    const ChatTemplate t = ChatTemplate::from_gguf(GgufFile::from_memory(bytes));
    QCOMPARE(t.style(), ChatTemplate::Style::kPhi3);
    QCOMPARE(QString::fromStdString(t.apply({{"system", "Be brief."}, {"user", "Hi"}}).str()),
             QStringLiteral("<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n"));
    const auto text = chat_continuation(t, held_, next_);
    QVERIFY(text);
    QCOMPARE(QString::fromStdString(text->str()), QStringLiteral("<|end|>\n<|user|>\nAnd you?<|end|>\n<|assistant|>\n"));
  }

  void aChatThatDoesNotExtendTheHeldOneHasNone() {
    auto edited = next_;
    edited[1].content = "Hey!";
    QVERIFY(!chat_continuation(ChatTemplate::chatml(), held_, edited));
    QVERIFY(!chat_continuation(ChatTemplate::chatml(), held_, held_));            // nothing new
    QVERIFY(!chat_continuation(ChatTemplate::chatml(), {held_[0]}, next_));       // held ends with no reply
    QVERIFY(!chat_continuation(ChatTemplate::chatml(), {}, next_));
  }
};

QTEST_APPLESS_MAIN(TestChatContinuation)
#include "test_chat_continuation.moc"
