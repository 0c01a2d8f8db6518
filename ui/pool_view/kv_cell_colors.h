#pragma once
// The colours of the block-pool view, derived from the application palette so that cells read
// in light and dark themes: free and cached cells from the palette's base and text colours, a
// fixed set of chat hues lightened or deepened for the theme, and one flash colour per event
// kind (Okabe and Ito's colour-blind-safe eight).

#include <QColor>
#include <QPalette>

#include <array>

#include "appcore/pool/kv_cell_model.h"
#include "appcore/pool/kv_flashes.h"  // KvFlashKind: one colour each

struct KvCellColors {
  static constexpr int kNumChatColors = 10;

  bool dark = false;
  QColor background;  // behind the cells
  QColor free;
  QColor inUseUnknown;  // in use by a sequence the frame does not list
  QColor cached;        // fill of a cached block
  QColor cachedOutline;
  QColor swappedHatch;  // pattern over a swapped block's chat colour
  QColor text;          // the ref count on shared cells
  QColor selection;     // outline of the selected sequence's cells
  std::array<QColor, kNumChatColors> chats;
  std::array<QColor, kNumKvFlashKinds> flashes;

  static KvCellColors fromPalette(const QPalette& palette);

  // The chat colour for a PoolFrameSequence::colorIndex (any int; wraps around).
  QColor chat(int colorIndex) const;
  // A cached block a prefix owns (a vLLM cache's): the cached grey tinted toward the prefix's colour.
  QColor cachedTint(int colorIndex) const;
  // The fill of a cell.
  QColor fill(const KvCell& cell) const;
  QColor flash(KvFlashKind kind) const { return flashes[static_cast<int>(kind)]; }
};
