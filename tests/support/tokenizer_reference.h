#pragma once
// The tokenizer suites' shared half: loading a reference made by
// tests/reference/make_tokenizer_*.py (ids of every corpus line and of the whole corpus, with
// and without special-token parsing) and comparing a tokenizer's ids with it.

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>

#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace pagedchat::test {

struct TokenizerCase {
  std::string text;
  std::vector<int32_t> plain, special;  // ids without / with special-token parsing
};

inline std::vector<int32_t> to_ids(const QJsonValue& v) {
  std::vector<int32_t> ids;
  for (const QJsonValue& x : v.toArray()) ids.push_back(x.toInt());
  return ids;
}

inline TokenizerCase to_case(const QJsonObject& o) {
  return {o["text"].toString().toStdString(), to_ids(o["plain"]), to_ids(o["special"])};
}

// "" when equal; otherwise where the two first differ.
inline QString diff_ids(const std::vector<int32_t>& got, const std::vector<int32_t>& want, const QString& what) {
  if (got == want) return {};
  size_t k = 0;
  while (k < got.size() && k < want.size() && got[k] == want[k]) ++k;
  auto at = [k](const std::vector<int32_t>& v) { return k < v.size() ? QString::number(v[k]) : QStringLiteral("end"); };
  return QStringLiteral("%1: %2 ids, reference %3; first difference at %4: %5 vs reference %6")
      .arg(what)
      .arg(got.size())
      .arg(want.size())
      .arg(k)
      .arg(at(got), at(want));
}

struct TokenizerReference {
  std::vector<TokenizerCase> lines;
  TokenizerCase whole;
  std::string corpus;  // tests/data/tokenizer_corpus.txt
  QJsonObject root;

  // Reads `reference_file` and the corpus; returns "" or what is missing.
  QString load(const QString& reference_file, const QString& corpus_file) {
    QFile ref(reference_file);
    if (!ref.open(QIODevice::ReadOnly)) return "reference missing (run its tests/reference/make_*.py): " + reference_file;
    QFile c(corpus_file);
    if (!c.open(QIODevice::ReadOnly)) return "corpus missing: " + corpus_file;
    corpus = c.readAll().toStdString();
    root = QJsonDocument::fromJson(ref.readAll()).object();
    for (const QJsonValue& v : root["lines"].toArray()) lines.push_back(to_case(v.toObject()));
    whole = to_case(root["whole"].toObject());
    return lines.empty() ? QStringLiteral("reference has no lines") : QString();
  }

  // The reference was made from this very corpus: same lines, same bytes.
  bool matches_corpus() const {
    std::string joined;
    for (const TokenizerCase& c : lines) joined += c.text + "\n";
    return whole.text == corpus && joined == corpus;
  }

  // "" when every line encodes to the reference ids, both ways; counts the plain tokens.
  QString check_lines(const Tokenizer& tok, size_t* tokens) const {
    *tokens = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      const TokenizerCase& c = lines[i];
      const QString where = QStringLiteral("line %1 '%2'").arg(i + 1).arg(QString::fromStdString(c.text));
      QString d = diff_ids(tok.encode(c.text, false, false), c.plain, where + " (plain)");
      if (d.isEmpty()) d = diff_ids(tok.encode(c.text, false, true), c.special, where + " (parse_special)");
      if (!d.isEmpty()) return d;
      *tokens += c.plain.size();
    }
    return {};
  }

  QString check_whole(const Tokenizer& tok) const {
    QString d = diff_ids(tok.encode(corpus, false, false), whole.plain, "whole corpus (plain)");
    if (d.isEmpty()) d = diff_ids(tok.encode(corpus, false, true), whole.special, "whole corpus (parse_special)");
    return d;
  }
};

}  // namespace pagedchat::test
