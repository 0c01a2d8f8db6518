#pragma once
// One line of the API's request log: what was asked (method, path), how it was answered
// (status, the tokens of a completion) and how long that took. The server reports each when its
// response has been written (a stream: when it has ended); the app lists them (Serve API >
// Request log) and `pagedchat-server --log-requests` prints them.

#include <QDateTime>
#include <QMetaType>
#include <QString>

#include <cstdint>

struct ApiLogEntry {
  // HTTP's 499 "client closed request" (nginx's): the client left before the response ended.
  static constexpr int kClientLeft = 499;

  QDateTime at;   // when the request arrived
  QString method;  // "GET", "POST", ...
  QString path;    // without the query
  int status = 0;
  int64_t promptTokens = -1, completionTokens = -1;  // a completion's; -1 for other requests
  int64_t cachedTokens = -1;                         // prompt tokens the prefix cache served
  bool stream = false;                               // answered as server-sent events
  qint64 durationMs = 0;                             // arrival to the response's end

  // "12:04:31  POST /v1/chat/completions  200  31 → 12 tokens  850 ms", for a terminal.
  QString line() const;
};

Q_DECLARE_METATYPE(ApiLogEntry)
