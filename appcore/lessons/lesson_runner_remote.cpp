// A lesson told on a watched server's pool (the class watches the teacher's server): the
// server's pool reset to the lesson's shape and paused, and the scene's turns taken there.
#include "appcore/lessons/lesson_runner.h"

#include <QUrl>

#include <qcoro/qcorotimer.h>

#include "appcore/remote/remote_endpoints.h"
#include "appcore/session/app_session.h"
#include "appcore/session/pool_control.h"

QCoro::Task<bool> LessonRunner::prepareRemote(const LessonInfo& lesson) {
  QPointer<LessonRunner> self(this);
  const QString url = m_session.pool().watchedPool();
  QString model;
  for (const RemoteEndpointEntry& e : m_session.remoteEndpoints().entries())
    if (e.url == url && !e.models.isEmpty()) model = e.models.first();
  if (model.isEmpty()) {
    setState(State::failed, tr("%1 lists no model to tell the lesson with (File > Remote engines refreshes its list).").arg(url));
    co_return false;
  }
  m_remoteEngine = {url, model};
  // The server's pool rebuilt in the teaching preset's shape (the same block numbers on every
  // replay, as on this machine), then its engine paused. In that order: the server refuses a
  // reset while a request runs there, and a request caught by the pause (the Remote engines
  // dialog's check, still finishing) would never end, so the reset would never be taken.
  m_remotePool = {};  // the frames from before the reset do not count
  m_poolRefusal.clear();
  auto reset = [&] {
    m_session.pool().resetWatchedPool(lesson.poolBlocks, lesson.hostBlocks, AppSettings::kTeachingBlockSize,
                                      AppSettings::kTeachingContext, AppSettings::kTeachingStepTokens);
  };
  reset();
  // Polled, not awaited as a signal: two frames queued back to back would resume a qCoro awaiter
  // twice (QCoro 0.9's queued slot outlives the awaiter it resumed).
  auto fresh = [&] {
    const WatchedPoolState& f = m_remotePool;
    return f.step == 0 && f.blockSize == AppSettings::kTeachingBlockSize && f.numBlocks == lesson.poolBlocks &&
           f.numHostBlocks == lesson.hostBlocks && f.numFree == f.numBlocks;
  };
  for (int wait = 0; wait < 600 && !fresh(); ++wait) {
    co_await QCoro::sleepFor(std::chrono::milliseconds(50));
    if (!self) co_return false;
    // The server refuses a reset while a request runs there (one just ending, aborted a moment
    // ago) or while it is still building the last pool ("still loading"): asked again a second
    // after a refusal, the reset goes through once it can. Only after a refusal: a reset taken
    // rebuilds the server's engine, and one sent again while that runs (slow on a loaded
    // machine) would start it over, and again, and never leave a fresh pool standing.
    if (wait % 20 == 19 && !fresh() && !m_poolRefusal.isEmpty()) {
      m_poolRefusal.clear();
      reset();
    }
  }
  if (fresh()) {
    setPaused(true);  // sent to the server even when the toolbar was paused already
    co_return true;
  }
  // The server's own words where it refused ("1 request is in flight ..."), else the rule.
  setState(State::failed, tr("%1 did not set the lesson's pool up: a server lets its pool be reset when it was started with "
                             "--allow-pool-control, and only while no request runs there.%2")
                              .arg(QUrl(url).authority(),
                                   m_poolRefusal.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(m_poolRefusal)));
  co_return false;
}

QCoro::Task<bool> LessonRunner::remoteRequestsTaken() {
  QPointer<LessonRunner> self(this);
  // Polled, as the fresh pool above: the turns' requests start back to back.
  for (int wait = 0; wait < 200 && self && m_remoteTaken < m_remoteSent; ++wait) co_await QCoro::sleepFor(std::chrono::milliseconds(50));
  co_return self && m_remoteTaken >= m_remoteSent;
}
