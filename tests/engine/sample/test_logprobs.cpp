// token_logprobs: log-softmax of raw logits for the chosen token and the top few.
#include <QtTest>

#include <cmath>

#include "engine/sample/logprobs.h"

class TestLogprobs : public QObject {
  Q_OBJECT
 private slots:
  void logSoftmax() {
    const std::vector<float> logits{1.0f, 3.0f, 2.0f, 3.0f};
    pagedchat::TokenLogprobs lp = pagedchat::token_logprobs(logits, 2, 3);
    double z = 0;
    for (float x : logits) z += std::exp(x);
    QVERIFY(std::fabs(lp.logprob - (2.0 - std::log(z))) < 1e-5);
    QCOMPARE(lp.top.size(), size_t(3));
    QCOMPARE(lp.top[0].first, 1);  // ties go to the lower id
    QCOMPARE(lp.top[1].first, 3);
    QCOMPARE(lp.top[2].first, 2);
    QVERIFY(std::fabs(lp.top[2].second - lp.logprob) < 1e-6);
    double total = 0;
    for (size_t i = 0; i < logits.size(); ++i) total += std::exp(pagedchat::token_logprobs(logits, int32_t(i), 0).logprob);
    QVERIFY(std::fabs(total - 1.0) < 1e-5);
  }

  void largeLogitsAndBounds() {
    const std::vector<float> logits{1000.0f, 999.0f};
    pagedchat::TokenLogprobs lp = pagedchat::token_logprobs(logits, 0, 10);
    QVERIFY(std::isfinite(lp.logprob) && lp.logprob < 0.0f);
    QCOMPARE(lp.top.size(), size_t(2));  // clamped to the vocabulary
    QVERIFY(pagedchat::token_logprobs(logits, 0, 0).top.empty());
    QCOMPARE(pagedchat::token_logprobs(logits, 7, 0).logprob, 0.0f);  // out of range: not read
  }
};

QTEST_APPLESS_MAIN(TestLogprobs)
#include "test_logprobs.moc"
