#pragma once
// The KV pool the app shows and steps: this machine's engine, a watched pagedchat-server's
// pool (its frames over HTTP, stepped through POST /v1/kv/control when it allows it), or what
// a vLLM server's KV cache events say it holds (drawn only). One owner of which pool that is,
// of whether it is paused, and of the lesson's reset of a server's pool, so that the Engine
// toolbar, the lessons and the view all act on the same one. The window shows what it says
// (shownChanged, the frame signals, pausedChanged, note); it draws nothing itself.

#include <QHash>
#include <QObject>
#include <QString>

#include <functional>

#include "appcore/chat/chat_types.h"
#include "appcore/pool/pool_frame.h"
#include "engine/bench/roofline.h"

class ChatController;
class ChatDatabase;
class EngineBridge;
class QThreadPool;
class RemoteBridge;
class RemoteEndpoints;
class RemotePoolWatcher;
class VllmPoolWatcher;
namespace pagedchat::remote {
struct Endpoint;
struct RemoteError;
}  // namespace pagedchat::remote

class PoolControl : public QObject {
  Q_OBJECT
 public:
  // bridge lives on the engine thread (null: no local engine, as in some tests); the others
  // outlive this object.
  PoolControl(EngineBridge* bridge, const ChatController& chats, ChatDatabase& db, RemoteEndpoints& endpoints,
              RemoteBridge& remote, QObject* parent = nullptr);
  // The watched server is left unpaused, in its own pool.
  ~PoolControl() override;

  // The pool shown is a pagedchat-server's at url (empty: this machine's again).
  void watchPool(const QString& url);
  QString watchedPool() const;  // empty: this machine's (or a vLLM server's, below)
  // What a vLLM server's KV cache events say (ZeroMQ; vLLM started with --kv-events-config):
  // endpoint its publisher ("tcp://host:5557"), replay its replay socket or empty. watchPool,
  // or an empty endpoint, ends it. The last one asked for is saved (lastVllmPool).
  void watchVllmPool(const QString& endpoint, const QString& replay = QString());
  QString watchedVllmPool() const;  // its endpoint; empty when none is watched
  QString lastVllmPool() const;     // "endpoint [replay]" as last asked for, or a default

  // The Engine toolbar, on the pool shown: this machine's engine, or the watched server's
  // (a refusal there is said in note). Paused, each step's marks stay drawn until the next.
  bool paused() const { return m_paused; }
  void setPaused(bool paused);
  void step(int steps = 1);
  void stepToNextEvent();  // steps until one changes a KV block (at most 500)
  // This machine's pool in a frame now (localFrame): it comes after every frame already on its way.
  void sendLocalFrame();
  // Runs `then` on this thread once the watched server has answered every request sent to it
  // before (at once when no server is watched): a turn sent after a pause then reaches a
  // server that is paused already (turns go by another connection, which could overtake it).
  void afterSent(std::function<void()> then);

  // A fresh pool of this shape on the watched server (a lesson's scene there; the server must
  // allow pool control and have no request in flight); numBlocks 0: the server's own pool.
  // False: no remote pool is watched. The server gets its own pool back when the view leaves
  // it or this object goes.
  bool resetWatchedPool(int numBlocks, int numHostBlocks, int blockSize, int maxContext, int stepTokens);

  // This machine's roofline for the model loaded (engine/bench/roofline.h): measured on the
  // engine thread between steps (about a second for the default model), then rooflineMeasured.
  void measureRoofline();

 signals:
  // The pool shown changed: title empty for this machine's, else what the view's dock says.
  void shownChanged(const QString& title);
  void localFrame(const PoolFrame& frame);   // this machine's pool, after each step with news
  void remoteFrame(const PoolFrame& frame);  // the watched server's, this app's chats named as here
  void vllmFrame(const PoolFrame& frame);    // what vLLM's events say, a fresh picture first
  void pausedChanged(bool paused);
  void remoteRequestStarted(ChatId chat);  // a remote server took a request of this chat's turn
  void note(const QString& sentence);      // for the status line: a refusal, a pool no longer shown
  // Its ceilings; zero when they could not be measured (no model, or not the CPU backend).
  void rooflineMeasured(const pagedchat::RooflineCeilings& roof);

 private:
  void leaveShownPool();
  void giveLessonPoolBack();
  void nameLocalFrame(PoolFrame frame);
  void nameRemoteFrame(PoolFrame frame);
  bool control(const char* action, int steps);  // on the watched server; false when none is
  bool sendToWatchedPool(std::function<pagedchat::remote::RemoteError(const pagedchat::remote::Endpoint&)> command);

  EngineBridge* m_bridge;
  const ChatController& m_chats;
  ChatDatabase& m_db;
  RemoteEndpoints& m_endpoints;
  RemotePoolWatcher* m_poolWatcher = nullptr;
  VllmPoolWatcher* m_vllmWatcher = nullptr;
  QThreadPool* m_poolControl = nullptr;  // one worker: the watched server's step requests, in order
  QHash<QString, ChatId> m_remoteRequests;  // "url response-id": the chat a remote request is for
  QString m_lessonPoolOf;  // the watched server whose pool a lesson reset (given back on leaving)
  bool m_paused = false;
};

Q_DECLARE_METATYPE(pagedchat::RooflineCeilings)
