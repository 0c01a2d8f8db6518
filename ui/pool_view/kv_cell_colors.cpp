// Palette-derived colours of the block-pool view.
#include "ui/pool_view/kv_cell_colors.h"

namespace {
QColor mix(const QColor& a, const QColor& b, double t) {
  auto channel = [&](int x, int y) { return static_cast<int>(x + (y - x) * t + 0.5); };
  return QColor(channel(a.red(), b.red()), channel(a.green(), b.green()), channel(a.blue(), b.blue()));
}

// Hues spaced so that neighbouring chat indices differ clearly (degrees).
constexpr std::array<int, KvCellColors::kNumChatColors> kChatHues{210, 30, 120, 0, 270, 180, 320, 60, 240, 90};
}  // namespace

const char* kvFlashKindName(KvFlashKind kind) {
  switch (kind) {
    case KvFlashKind::CopyOnWrite: return "copy-on-write";
    case KvFlashKind::Evict: return "evict";
    case KvFlashKind::Preempt: return "preempt";
    case KvFlashKind::SwapOut: return "swap out";
    case KvFlashKind::SwapIn: return "swap in";
    case KvFlashKind::CacheHit: return "cache hit";
  }
  return "?";
}

KvCellColors KvCellColors::fromPalette(const QPalette& palette) {
  KvCellColors c;
  const QColor base = palette.color(QPalette::Base);
  const QColor text = palette.color(QPalette::Text);
  c.dark = base.lightnessF() < 0.5;
  c.background = palette.color(QPalette::Window);
  c.free = mix(base, text, 0.08);
  c.inUseUnknown = mix(base, text, 0.45);
  c.cached = mix(base, text, 0.22);
  c.cachedOutline = mix(base, text, 0.55);
  c.text = c.dark ? QColor(Qt::white) : QColor(Qt::black);
  c.swappedHatch = c.dark ? QColor(0, 0, 0, 140) : QColor(255, 255, 255, 170);
  c.selection = palette.color(QPalette::Highlight);
  // Light theme: saturated mid-light chips that black text reads on; dark: deeper chips for
  // white text, still clearly apart from the dark free cells.
  for (int i = 0; i < kNumChatColors; ++i)
    c.chats[i] = (c.dark ? QColor::fromHsv(kChatHues[i], 150, 190) : QColor::fromHsv(kChatHues[i], 120, 235)).toRgb();
  c.flashes[static_cast<int>(KvFlashKind::CopyOnWrite)] = QColor(255, 200, 0);   // amber
  c.flashes[static_cast<int>(KvFlashKind::Evict)] = QColor(230, 30, 30);         // red
  c.flashes[static_cast<int>(KvFlashKind::Preempt)] = QColor(200, 0, 200);       // magenta
  c.flashes[static_cast<int>(KvFlashKind::SwapOut)] = QColor(0, 90, 255);        // blue
  c.flashes[static_cast<int>(KvFlashKind::SwapIn)] = QColor(0, 200, 220);        // cyan
  c.flashes[static_cast<int>(KvFlashKind::CacheHit)] = QColor(40, 210, 60);      // green
  return c;
}

QColor KvCellColors::chat(int colorIndex) const {
  int i = colorIndex % kNumChatColors;
  return chats[i < 0 ? i + kNumChatColors : i];
}

QColor KvCellColors::fill(const KvCell& cell) const {
  switch (cell.kind) {
    case KvCellKind::Free: return free;
    case KvCellKind::Cached: return cached;
    case KvCellKind::InUse:
    case KvCellKind::Shared:
    case KvCellKind::Swapped: return cell.colorIndex >= 0 ? chat(cell.colorIndex) : inUseUnknown;
  }
  return free;
}
