// The synthetic chat workload of the benchmarks: the same seed gives the same requests, the
// lengths stay in their bounds with medians near the configured ones, and the shared system
// prompt opens the configured share of the requests.

#include <QtTest>

#include <algorithm>

#include "engine/bench/synthetic_chat.h"
#include "engine/common/error.h"

using namespace pagedchat;

namespace {
int median_of(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

class TestSyntheticChat : public QObject {
  Q_OBJECT

 private slots:
  void same_seed_same_requests() {
    SyntheticChatConfig c;
    c.num_requests = 200;
    auto a = make_synthetic_chat(c);
    auto b = make_synthetic_chat(c);
    QCOMPARE(a.size(), size_t(200));
    for (size_t i = 0; i < a.size(); ++i) {
      QVERIFY(a[i].prompt == b[i].prompt);
      QCOMPARE(a[i].output_len, b[i].output_len);
      QCOMPARE(a[i].has_system_prompt, b[i].has_system_prompt);
    }
    c.seed = 2;
    auto d = make_synthetic_chat(c);
    int same = 0;
    for (size_t i = 0; i < a.size(); ++i) same += a[i].prompt == d[i].prompt && a[i].output_len == d[i].output_len;
    QCOMPARE(same, 0);
  }

  void lengths_follow_the_configuration() {
    SyntheticChatConfig c;
    c.num_requests = 4000;
    c.vocab_size = 1000;
    auto w = make_synthetic_chat(c);
    std::vector<int> prompt_lens, output_lens;
    int clipped_low = 0, clipped_high = 0;
    for (const auto& r : w) {
      QVERIFY(int(r.prompt.size()) >= c.prompt_min && int(r.prompt.size()) <= c.prompt_max);
      QVERIFY(r.output_len >= c.output_min && r.output_len <= c.output_max);
      for (int32_t t : r.prompt) QVERIFY(t >= 0 && t < c.vocab_size);
      prompt_lens.push_back(int(r.prompt.size()));
      output_lens.push_back(r.output_len);
      clipped_low += r.output_len == c.output_min;
      clipped_high += int(r.prompt.size()) == c.prompt_max;
    }
    // Log-normal around the medians (4000 draws: the sample median is within a few percent;
    // raising short prompts to the system prompt's length moves it up a little).
    const int pm = median_of(prompt_lens), om = median_of(output_lens);
    QVERIFY2(pm >= 140 && pm <= 165, qPrintable(QString::number(pm)));
    QVERIFY2(om >= 92 && om <= 108, qPrintable(QString::number(om)));
    // The tails reach the clips (sigma 0.9: about 0.3% of outputs fall under 8, 1.6% of prompts
    // over 1024).
    QVERIFY(clipped_low > 0);
    QVERIFY(clipped_high > 0);
  }

  void system_prompt_share() {
    SyntheticChatConfig c;
    c.num_requests = 2000;
    auto w = make_synthetic_chat(c);
    const SyntheticRequest* first = nullptr;
    int with = 0;
    for (const auto& r : w) {
      if (!r.has_system_prompt) continue;
      ++with;
      QVERIFY(int(r.prompt.size()) > c.system_prompt_len);
      if (!first) first = &r;
      QVERIFY(std::equal(first->prompt.begin(), first->prompt.begin() + c.system_prompt_len, r.prompt.begin()));
    }
    QVERIFY2(with >= 900 && with <= 1100, qPrintable(QString::number(with)));
    c.system_prompt_share = 0.0;
    for (const auto& r : make_synthetic_chat(c)) QVERIFY(!r.has_system_prompt);
  }

  void random_prompts_are_fixed_by_the_seed() {
    auto a = make_random_prompts(7, 3, 50, 100);
    QCOMPARE(a.size(), size_t(3));
    for (const auto& p : a) {
      QCOMPARE(p.size(), size_t(50));
      for (int32_t t : p) QVERIFY(t >= 0 && t < 100);
    }
    QVERIFY(a == make_random_prompts(7, 3, 50, 100));
    QVERIFY(a != make_random_prompts(8, 3, 50, 100));
    QVERIFY(a[0] != a[1]);
  }

  void bad_configuration_throws() {
    SyntheticChatConfig c;
    c.vocab_size = 0;
    QVERIFY_THROWS_EXCEPTION(Error, make_synthetic_chat(c));
    c = {};
    c.output_min = 600;
    QVERIFY_THROWS_EXCEPTION(Error, make_synthetic_chat(c));
    c = {};
    c.system_prompt_len = c.prompt_max;
    QVERIFY_THROWS_EXCEPTION(Error, make_synthetic_chat(c));
  }
};

QTEST_APPLESS_MAIN(TestSyntheticChat)
#include "test_synthetic_chat.moc"
