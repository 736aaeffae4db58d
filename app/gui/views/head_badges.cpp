#include "views/head_badges.h"

#include <QEvent>
#include <QPainter>
#include <cmath>

#include "session/attention_data.h"

namespace attnviz::gui {

QString headBadge(const HeadStats& s) {
  struct Share {
    double v;
    const char* name;
  };
  // The first token is reported as BOS when it is the start token.
  const bool first_is_bos = !std::isnan(s.bos) && s.bos >= s.first - 1e-9;
  const Share shares[] = {{s.diagonal, QT_TRANSLATE_NOOP("QObject", "diag")},
                          {s.previous, QT_TRANSLATE_NOOP("QObject", "prev")},
                          {s.bos, QT_TRANSLATE_NOOP("QObject", "BOS")},
                          {s.eos, QT_TRANSLATE_NOOP("QObject", "EOS")},
                          {first_is_bos ? NAN : s.first, QT_TRANSLATE_NOOP("QObject", "first")},
                          {s.padding, QT_TRANSLATE_NOOP("QObject", "pad")}};
  const Share* best = nullptr;
  for (const Share& sh : shares)
    if (!std::isnan(sh.v) && sh.v >= 0.5 && (!best || sh.v > best->v)) best = &sh;
  if (best) return QObject::tr(best->name);
  if (!std::isnan(s.monotonicity) && s.rows >= 3) {
    if (s.monotonicity >= 0.8) return QObject::tr("in order");
    if (s.monotonicity <= -0.8) return QObject::tr("reversed");
  }
  if (s.entropy_norm >= 0.85) return QObject::tr("broad");
  if (s.entropy_norm <= 0.25) return QObject::tr("sharp");
  return {};
}

const std::vector<HeadStats>& snapshotHeadStats(const Snapshot& snap, const ModelConfig& config,
                                                int b, std::optional<AttentionKind> kind) {
  struct Entry {
    uint64_t id = 0;
    int b = -1;
    std::optional<AttentionKind> kind;
    HeadStatistics stats;
  };
  static Entry all, one;  // the view's (every block) and the badges' (one kind)
  Entry& e = kind ? one : all;
  if (e.id != snap.id || e.b != b || e.kind != kind) {
    // A step of the same decoding session computes only the rows it changed.
    const bool grew = e.id != 0 && snap.grown_from == e.id && e.b == b && e.kind == kind;
    e.stats.update(*snap.trace, config, b, kind, grew ? snap.same_target_rows : -1);
    e.id = snap.id;
    e.b = b;
    e.kind = kind;
  }
  return e.stats.stats();
}

HeadBadgeOverlay::HeadBadgeOverlay(OverviewGrid* grid, AppState* state)
    : QWidget(grid), grid_(grid), state_(state) {
  setAttribute(Qt::WA_TransparentForMouseEvents);
  setAttribute(Qt::WA_NoSystemBackground);
  setGeometry(grid->rect());
  grid->installEventFilter(this);
  connect(state->engine(), &Engine::snapshotChanged, this, &HeadBadgeOverlay::recompute);
  connect(state->engine(), &Engine::modelChanged, this, &HeadBadgeOverlay::recompute);
  connect(state, &AppState::selectionChanged, this, &HeadBadgeOverlay::recompute);
  raise();
}

QString HeadBadgeOverlay::badge(int layer, int head) const {
  if (stale_) compute();
  if (layer < 0 || layer >= layers_ || head < 0 || head >= heads_) return {};
  return badges_[size_t(layer) * heads_ + head];
}

void HeadBadgeOverlay::recompute() {
  stale_ = true;
  update();
}

void HeadBadgeOverlay::compute() const {
  stale_ = false;
  badges_.clear();
  layers_ = heads_ = 0;
  auto snap = state_->snapshot();
  const Model* model = state_->model();
  if (snap && snap->trace && model && !snap->trace->blocks.empty()) {
    const Trace& t = *snap->trace;
    const AttentionSelection s = clampSelection(t, state_->selection());
    layers_ = t.layers(s.kind);
    heads_ = t.heads();
    badges_.assign(size_t(layers_) * heads_, QString());
    for (const HeadStats& h : snapshotHeadStats(*snap, model->config(), s.batch, s.kind))
      if (h.kind == s.kind) badges_[size_t(h.layer) * heads_ + h.head] = headBadge(h);
  }
}

bool HeadBadgeOverlay::eventFilter(QObject* watched, QEvent* event) {
  if (watched == grid_ && event->type() == QEvent::Resize) {
    setGeometry(grid_->rect());
    raise();
  }
  return QWidget::eventFilter(watched, event);
}

void HeadBadgeOverlay::paintEvent(QPaintEvent*) {
  if (stale_) compute();
  if (layers_ != grid_->layers() || heads_ != grid_->heads()) return;  // not in step yet
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  QFont f = font();
  f.setPointSizeF(f.pointSizeF() * 0.8);
  f.setBold(true);
  p.setFont(f);
  const QFontMetrics fm(f);
  for (int l = 0; l < layers_; ++l)
    for (int h = 0; h < heads_; ++h) {
      const QString b = badge(l, h);
      if (b.isEmpty()) continue;
      const QRect r = grid_->thumbRect(l, h);
      const QRect box(r.left() + 3, r.bottom() - fm.height() - 4, fm.horizontalAdvance(b) + 8,
                      fm.height() + 2);
      if (box.width() > r.width() - 4) continue;
      p.setPen(Qt::NoPen);
      p.setBrush(QColor(255, 255, 255, 225));
      p.drawRoundedRect(box, 4, 4);
      p.setPen(QColor(0x20, 0x20, 0x20));
      p.drawText(box, Qt::AlignCenter, b);
    }
}

}  // namespace attnviz::gui
