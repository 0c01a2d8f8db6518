#pragma once
// JSON test data (tests/data/chat_templates) as Jinja values: every string is the caller's data
// (text), as messages and tools are; integers stay integers.

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <ctime>
#include <memory>

#include "engine/chat/jinja/value.h"

namespace pagedchat::test {

inline jinja::Value jinja_from_json(const QJsonValue& j) {
  using jinja::Value;
  switch (j.type()) {
    case QJsonValue::Null: return Value::none();
    case QJsonValue::Bool: return Value(j.toBool());
    case QJsonValue::Double: {
      const double d = j.toDouble();
      // Qt reads 2 and 2.0 alike; the data writes floats with a fraction, so a whole number is an int.
      if (d == static_cast<double>(static_cast<int64_t>(d))) return Value(static_cast<int64_t>(d));
      return Value(d);
    }
    case QJsonValue::String: return Value::text(j.toString().toStdString());
    case QJsonValue::Array: {
      jinja::List l;
      for (const QJsonValue& x : j.toArray()) l.push_back(jinja_from_json(x));
      return Value(std::move(l));
    }
    case QJsonValue::Object: {
      auto d = std::make_shared<jinja::Dict>();
      const QJsonObject o = j.toObject();
      for (auto it = o.begin(); it != o.end(); ++it)
        d->set(PromptText().text(it.key().toStdString()), jinja_from_json(it.value()));
      return Value(d);
    }
    default: return {};
  }
}

inline QJsonObject read_json_object(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(path));
  return QJsonDocument::fromJson(f.readAll()).object();
}

// The reference scripts' clock: strftime_now() formats 2024-07-26 12:00 local time.
inline std::time_t reference_clock() {
  std::tm tm{};
  tm.tm_year = 2024 - 1900;
  tm.tm_mon = 6;
  tm.tm_mday = 26;
  tm.tm_hour = 12;
  tm.tm_isdst = -1;
  return std::mktime(&tm);
}

}  // namespace pagedchat::test
