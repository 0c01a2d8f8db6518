// A chat's answer format to a grammar (see answer_format.h).
#include "appcore/chat/answer_format.h"

#include <QCoreApplication>

#include "engine/common/error.h"
#include "engine/grammar/gbnf.h"
#include "engine/grammar/grammar_cache.h"
#include "engine/grammar/json_schema.h"

namespace {

pagedchat::grammar::GrammarCache& grammars() {
  static pagedchat::grammar::GrammarCache cache;
  return cache;
}

}  // namespace

std::shared_ptr<const pagedchat::grammar::Grammar> answerGrammar(const QString& format) {
  if (format.trimmed().isEmpty()) return nullptr;
  if (format == kAnswerJsonObject)
    return grammars().get("json_object", [] { return pagedchat::grammar::parse_gbnf(pagedchat::grammar::json_gbnf(true)); });
  const std::string schema = format.toStdString();
  return grammars().get("schema:" + schema, [&] { return pagedchat::grammar::json_schema_grammar(schema); });
}

QString answerFormatProblem(const QString& format) {
  try {
    answerGrammar(format);
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

QString describeAnswerFormat(const QString& format) {
  if (format.trimmed().isEmpty()) return {};
  return format == kAnswerJsonObject ? QCoreApplication::translate("AnswerFormat", "JSON")
                                     : QCoreApplication::translate("AnswerFormat", "JSON (schema)");
}
