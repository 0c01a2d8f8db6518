#pragma once
// Reading a request body's fields: what counts as given.

#include <QJsonObject>

// A field that is absent or null counts as not given (OpenAI's clients send null for unset).
inline bool given(const QJsonObject& o, const char* key) {
  auto it = o.find(QLatin1String(key));
  return it != o.end() && !it->isNull() && !it->isUndefined();
}
